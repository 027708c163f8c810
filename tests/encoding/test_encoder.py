"""Hidden states and attentions against Hugging Face's own outputs."""

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from bertlens.encoding.cls_attention import ClsAttentionRecorder, attention_modules
from bertlens.encoding.encoder import Encoder, LayerStates

TEXTS = ["A man is playing a guitar.", "Hi", "The quick brown fox jumps over the lazy dog, twice, at dawn!", ""]


def reference_states(path, texts, eager=False):
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager" if eager else "sdpa").eval()
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True, output_attentions=eager)
    return batch, out


@pytest.mark.parametrize("model_fixture", ["tiny_bert_dir", "default_model_dir"])
def test_hidden_states_match_hugging_face(model_fixture, request):
    path = request.getfixturevalue(model_fixture)
    batch, ref = reference_states(path, TEXTS)
    encoder = Encoder(str(path))
    tokenized = encoder.tokenize(TEXTS)
    seen = 0
    for states in encoder.iter_states(tokenized):
        assert states.hidden.shape[0] == len(ref.hidden_states) == encoder.num_layers + 1
        for row, doc in enumerate(states.doc_index.tolist()):
            n = int(batch["attention_mask"][doc].sum())
            ours = states.hidden[:, row, :n]  # [L+1, n, H]
            theirs = torch.stack(ref.hidden_states)[:, doc, :n]
            assert (ours - theirs).abs().max().item() <= 1e-5
            assert states.attention_mask[row].sum().item() == n
            seen += 1
    assert seen == len(TEXTS)


@pytest.mark.parametrize("model_fixture", ["tiny_bert_dir", "default_model_dir"])
@pytest.mark.parametrize("mode", ["cls", "all"])
def test_cls_attention_is_the_head_average_of_hugging_face_attentions(model_fixture, mode, request):
    path = request.getfixturevalue(model_fixture)
    batch, ref = reference_states(path, TEXTS, eager=True)
    encoder = Encoder(str(path), attentions=mode)
    assert (encoder._recorder is not None) == (mode == "cls")  # 'cls' uses q/k hooks, not eager attention
    maps = torch.stack(ref.attentions)  # [L, B, heads, T, T]
    for states in encoder.iter_states(encoder.tokenize(TEXTS)):
        for row, doc in enumerate(states.doc_index.tolist()):
            n = int(batch["attention_mask"][doc].sum())
            expected = maps[:, doc, :, 0, :n].mean(dim=1)  # [L, n]
            assert torch.allclose(states.cls_attention[:, row, :n], expected, atol=1e-6)
            assert states.cls_attention[:, row, n:].abs().sum().item() == 0  # padding gets no weight
            if mode == "all":
                assert torch.allclose(states.attentions[:, row, :, :n, :n], maps[:, doc, :, :n, :n], atol=1e-6)
        if mode == "all":
            length = states.hidden.shape[2]
            assert states.attentions.shape == (maps.shape[0], len(states.doc_index), maps.shape[2], length, length)


def test_special_tokens_mask_marks_cls_and_sep(tiny_bert_dir):
    encoder = Encoder(str(tiny_bert_dir))
    (states,) = list(encoder.iter_states(encoder.tokenize(["hello world"])))
    assert states.special_tokens_mask[0].tolist() == [True, False, False, True]


def test_truncation_is_counted(tiny_bert_dir):
    encoder = Encoder(str(tiny_bert_dir), max_length=8)
    tokenized = encoder.tokenize(["one two three four five six seven eight nine", "short"])
    assert tokenized.truncated == 1
    assert tokenized.lengths.tolist() == [8, 3]


def test_layer_states_reject_inconsistent_shapes():
    hidden = torch.zeros(3, 2, 4, 8)
    with pytest.raises(ValueError, match="attention_mask"):
        LayerStates(hidden, torch.ones(2, 5, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.bool), torch.arange(2))
    with pytest.raises(ValueError, match="doc_index"):
        LayerStates(hidden, torch.ones(2, 4, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.bool), torch.arange(3))


def test_cls_attention_hooks_keep_each_threads_own_capture(tiny_bert_dir):
    encoder = Encoder(str(tiny_bert_dir))
    recorder = ClsAttentionRecorder(attention_modules(encoder.model))
    first = encoder.tokenizer(["a short one", "another"], padding=True, return_tensors="pt")
    second = encoder.tokenizer(["a much longer text, with many more words in it"], return_tensors="pt")

    def run(inputs):
        with torch.inference_mode():
            encoder.model(**inputs)

    run(first)
    expected = recorder.weights(first["attention_mask"])  # [L, 2, T]
    with ThreadPoolExecutor(1) as one, ThreadPoolExecutor(1) as other:
        one.submit(run, first).result()
        other.submit(run, second).result()  # another thread's forward in between
        got = one.submit(recorder.weights, first["attention_mask"]).result()
    torch.testing.assert_close(got, expected)
