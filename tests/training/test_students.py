"""Students: which layers a spec keeps, and that a layer student is the teacher's own layers (checked against
Hugging Face's forward pass of the teacher), and a config student starts from the teacher's embeddings."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from bertlens.errors import BertlensError
from bertlens.training.students import StudentSpec, build_student, parse_student, spread_layers, student_width


@pytest.mark.parametrize(
    ("count", "total", "expected"),
    [(3, 6, (0, 3, 5)), (2, 6, (0, 5)), (1, 6, (0,)), (6, 6, (0, 1, 2, 3, 4, 5)), (4, 12, (0, 4, 7, 11))],
)
def test_spread_layers_keeps_first_and_last_evenly(count, total, expected):
    assert spread_layers(count, total) == expected


def test_parse_student_forms():
    assert parse_student("layers:0,2,4", 6) == StudentSpec(keep=(0, 2, 4))
    assert parse_student("layers:4,0", 6) == StudentSpec(keep=(0, 4))
    assert parse_student("layers:3", 6) == StudentSpec(keep=(0, 3, 5))
    assert parse_student("config:mini", 6) == StudentSpec(config="mini")
    assert parse_student("layers:1", 6).name == "layers:0"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("layers:7", "choose 1..6"),
        ("layers:0", "choose 1..6"),
        ("layers:0,6", "distinct numbers in 0..5"),
        ("layers:1,1", "distinct numbers"),
        ("layers:a,b", "must be integers"),
        ("layers:", "expected layers"),
        ("config:huge", "neither a size"),
        ("small", "expected layers"),
    ],
)
def test_parse_student_refuses_with_the_reason(spec, message):
    with pytest.raises(BertlensError, match=message):
        parse_student(spec, 6)


def test_layer_student_is_the_teachers_layers(tiny_bert_dir, tmp_path):
    """Keeping all layers reproduces the teacher's hidden states; keeping layer 1 only reuses its weights."""
    teacher = AutoModel.from_pretrained(tiny_bert_dir).eval()
    tokens = AutoTokenizer.from_pretrained(tiny_bert_dir)(
        ["a short sentence", "another one here"], padding=True, return_tensors="pt"
    )
    build_student(StudentSpec(keep=(0, 1)), tiny_bert_dir, tmp_path / "all", 0, 64)
    same = AutoModel.from_pretrained(tmp_path / "all").eval()
    with torch.no_grad():
        expected = teacher(**tokens, output_hidden_states=True).hidden_states
        got = same(**tokens, output_hidden_states=True).hidden_states
    assert len(got) == len(expected) == 3
    for a, b in zip(expected, got, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    build_student(StudentSpec(keep=(1,)), tiny_bert_dir, tmp_path / "top", 0, 64)
    top = AutoModel.from_pretrained(tmp_path / "top")
    assert top.config.num_hidden_layers == 1
    kept, source = top.state_dict(), teacher.state_dict()
    for name, value in kept.items():
        origin = name.replace("encoder.layer.0.", "encoder.layer.1.")
        torch.testing.assert_close(value, source[origin], rtol=0, atol=0, msg=name)


def test_config_student_starts_from_the_teachers_embeddings(tiny_bert_dir, tmp_path):
    """Same width: copied; another width: the teacher's word embeddings projected on their top principal axes."""
    wide = tmp_path / "wide.json"
    wide.write_text('{"num_hidden_layers": 1, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}')
    same = tmp_path / "same.json"
    same.write_text('{"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 32}')
    teacher = AutoModel.from_pretrained(tiny_bert_dir).embeddings.word_embeddings.weight.detach()  # [V, 32]
    note = build_student(StudentSpec(config=str(same)), tiny_bert_dir, tmp_path / "s", 0, 64)
    copied = AutoModel.from_pretrained(tmp_path / "s").embeddings.word_embeddings.weight.detach()
    torch.testing.assert_close(copied, teacher, rtol=0, atol=0)
    assert "copied" in note
    note = build_student(StudentSpec(config=str(wide)), tiny_bert_dir, tmp_path / "w", 0, 64)
    projected = AutoModel.from_pretrained(tmp_path / "w").embeddings.word_embeddings.weight.detach().double()
    assert projected.shape == (teacher.shape[0], 16) and "PCA" in note and "word" in note
    # one linear map of the teacher's words: the student's word table is exactly a projection of the teacher's
    solution = torch.linalg.lstsq(teacher.double(), projected).solution
    residual = projected - teacher.double() @ solution
    assert residual.norm() / projected.norm() < 1e-6
    assert student_width(StudentSpec(config=str(wide)), 32) == 16
    assert student_width(StudentSpec(keep=(0,)), 32) == 32
