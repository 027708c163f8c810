"""What a sweep cannot apply to a task's kind is refused by the library before any work: one error, in the keywords
from Python and rendered as the CLI's own line on the command line (an OptionError names its options)."""

from __future__ import annotations

import pytest

from bertlens.cli.main import main, user_words
from bertlens.errors import BertlensError
from bertlens.experiments.sweep import SweepConfig, run_sweep, run_texts_sweep
from bertlens.probing.candidates import PromptSet
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import TaskData, load_catalog_task
from tests.conftest import DATA

E5 = PromptSet("e5", "query: ", "passage: ")


def never_encode(*args, **kwargs):
    raise AssertionError("the setting should have been refused before any encoding")


@pytest.fixture
def sst2():
    return load_catalog_task(get_task("sst2"), DATA, max_examples=40)


def _cli_line(argv: list[str], capsys) -> str:
    assert main(argv) == 1
    return capsys.readouterr().err.strip().removeprefix("bertlens sweep: error: ")


@pytest.mark.parametrize(
    ("config", "flags"),
    [
        (SweepConfig(prompt_sets=(E5,)), ["--prompts", "e5=query: |passage: "]),
        (SweepConfig(long_documents=True), ["--long-documents"]),
        (SweepConfig(protocols=("cosine",)), ["--protocols", "cosine"]),
        (SweepConfig(protocols=("clustering",)), ["--protocols", "clustering"]),
    ],
    ids=["prompts", "long-documents", "a protocol of another kind", "without the main protocol"],
)
def test_run_sweep_refuses_what_the_kind_cannot_apply_with_the_cli_line(
    config, flags, sst2, tiny_bert_dir, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr("bertlens.experiments.sweep.run.build_bank", never_encode)
    with pytest.raises(BertlensError) as raised:
        run_sweep(sst2, str(tiny_bert_dir), cache_dir=tmp_path, config=config)
    argv = ["sweep", "--task", "sst2", "--data-dir", str(DATA), "--model", str(tiny_bert_dir), *flags]
    assert user_words(raised.value) == _cli_line([*argv, "--max-examples", "40", "--out", str(tmp_path / "o")], capsys)
    assert "--" not in str(raised.value)  # from Python: the keywords


def test_no_pooler_and_an_unknown_pooler_are_refused_in_one_line(sst2, tiny_bert_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("bertlens.experiments.sweep.run.build_bank", never_encode)
    with pytest.raises(BertlensError, match="^poolers names no pooler"):
        run_sweep(sst2, str(tiny_bert_dir), cache_dir=tmp_path, config=SweepConfig(poolers=()))
    with pytest.raises(BertlensError, match="unknown pooler 'maen': did you mean 'mean'"):
        run_sweep(sst2, str(tiny_bert_dir), cache_dir=tmp_path, config=SweepConfig(poolers=("maen",)))


def test_a_texts_sweep_refuses_a_sample_too_small_to_score(tiny_bert_dir, tmp_path):
    texts = [f"text number {i}" for i in range(20)]
    with pytest.raises(BertlensError, match="^max_examples must be at least 8 for texts"):
        run_texts_sweep(texts, "t", str(tiny_bert_dir), cache_dir=tmp_path, config=SweepConfig(max_texts=5))


def test_an_unknown_kind_fails_where_the_task_is_built_naming_the_known_ones():
    with pytest.raises(BertlensError, match="unknown task type 'similarty': did you mean 'similarity'\\? valid: "):
        TaskData("t", "similarty", {})


def test_recommend_refuses_prompts_on_a_task_without_retrieval_in_the_sweeps_words(sst2, tmp_path, monkeypatch):
    from bertlens.io.run_context import RunContext
    from bertlens.workflows import recommend

    monkeypatch.setattr(recommend, "Encoder", never_encode)
    with pytest.raises(BertlensError, match="^prompts applies to retrieval tasks; sst2 is a classification task"):
        recommend.run_recommend(sst2, "default", RunContext(tmp_path), recommend.RecommendOptions(prompt_sets=(E5,)))


def test_every_kind_is_swept_by_its_target_not_its_name():
    """The runner dispatches on the kind's target (experiments/sweep/run.py: SWEEPS): every kind in the table has
    a sweep, and a new kind with an existing target needs nothing new there."""
    from bertlens.experiments.sweep.run import SWEEPS
    from bertlens.tasks.kinds import KINDS

    assert {kind.target for kind in KINDS.values()} <= set(SWEEPS)
