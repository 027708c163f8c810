"""The linguistic probing suite: token and sentence probes on a UD treebank, layer by layer.

One encoder pass per dataset: all treebank sentences once (the word bank, for the token
tasks), and all sentence-task texts once (the feature bank). Each finished task is saved
in `checkpoint_dir`, so an interrupted run resumes at the next task.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError, did_you_mean
from bertlens.features.bank import build_bank
from bertlens.features.word_bank import WordBank, build_word_bank
from bertlens.io.cache import cached_result, content_key
from bertlens.probing.layerwise import DEFAULT_STRENGTHS, LayerFeatures, LayerwiseResult, probe_layers
from bertlens.progress import Progress, counting, silent
from bertlens.tasks.conllu import Sentence, word_spans
from bertlens.tasks.probing_names import ALL_TASKS, SENTENCE_TASKS, TOKEN_TASKS
from bertlens.tasks.probing_tasks import (
    SPLITS,
    ProbingDataset,
    control_labels,
    save_jsonl,
    sentence_tasks,
)

SUITE_VERSION = 1


@dataclass(frozen=True)
class SuiteConfig:
    tasks: tuple[str, ...] = ALL_TASKS
    subword: str = "mean"  # word vector from its subwords: first, last or mean
    sentence_pooler: str = "mean"
    strengths: tuple[float, ...] = DEFAULT_STRENGTHS
    seed: int = 0
    resamples: int = 1000
    max_train_words: int | None = None  # a seeded sample of training words (all by default)


@dataclass(frozen=True)
class TaskOutcome:
    name: str
    level: str  # "token" or "sentence"
    description: str
    classes: int
    sizes: dict[str, int]
    result: LayerwiseResult
    seconds: float

    def to_dict(self) -> dict:
        data = asdict(self)
        data["result"] = self.result.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict) -> TaskOutcome:
        return cls(**{**data, "result": LayerwiseResult.from_dict(data["result"])})


@dataclass(frozen=True)
class SuiteResult:
    model: str
    fingerprint: str
    num_layers: int
    config: SuiteConfig
    outcomes: dict[str, TaskOutcome]
    timings: dict[str, float]
    notes: tuple[str, ...] = field(default_factory=tuple)


def check_tasks(names: tuple[str, ...]) -> tuple[str, ...]:
    for name in names:
        if name not in ALL_TASKS:
            raise BertlensError(f"unknown probing task '{name}': {did_you_mean(name, ALL_TASKS)}")
    return names


def _fingerprint(splits: dict[str, list[Sentence]]) -> str:
    return content_key([], (sentence.text for split in SPLITS for sentence in splits[split]))


@dataclass(frozen=True)
class _Words:
    """Aligned words of every split: rows into the word bank, the words, their sentences."""

    rows: dict[str, np.ndarray]
    words: dict[str, list]
    unaligned: int
    rebuilt: int


def _word_table(splits: dict[str, list[Sentence]]):
    texts, spans, words, rebuilt = [], [], [], 0
    for split in SPLITS:
        for sentence in splits[split]:
            text, sentence_spans, was_rebuilt = word_spans(sentence)
            texts.append(text)
            spans.append(sentence_spans)
            words.append(sentence.words)
            rebuilt += was_rebuilt
    return texts, spans, words, rebuilt


def _aligned_words(splits, bank: WordBank, words, rebuilt: int, config: SuiteConfig) -> _Words:
    flat = [w for sentence in words for w in sentence]
    split_of = np.repeat(np.arange(len(SPLITS)), [sum(len(s.words) for s in splits[sp]) for sp in SPLITS])  # [W]
    rows, chosen = {}, {}
    for k, split in enumerate(SPLITS):
        keep = np.flatnonzero((split_of == k) & bank.aligned)
        if split == "train" and config.max_train_words and len(keep) > config.max_train_words:
            rng = np.random.default_rng(config.seed)
            keep = np.sort(rng.choice(keep, config.max_train_words, replace=False))
        rows[split] = keep
        chosen[split] = [flat[i] for i in keep]
    return _Words(rows, chosen, int((~bank.aligned).sum()), rebuilt)


def _word_features(bank: WordBank, table: _Words, chunk: int = 8192) -> LayerFeatures:
    """Fill one layer-major float32 array from the (float16, word-major) bank, a chunk at a time."""
    rows = np.concatenate([table.rows[s] for s in SPLITS])
    features = LayerFeatures.allocate(
        bank.num_layers + 1, tuple(len(table.rows[s]) for s in SPLITS), bank.vectors.shape[2]
    )
    for start in range(0, len(rows), chunk):
        block = np.asarray(bank.vectors[rows[start : start + chunk]], dtype=np.float32)  # [n, L+1, H]
        features.stacked[:-1, start : start + len(block)] = block.transpose(1, 0, 2)
    return features


def _label_ids(labels: dict[str, list[str]]) -> tuple[dict[str, np.ndarray], int]:
    """Ids by training label (sorted); labels unseen in training get ids the probe never predicts."""
    classes = sorted(set(labels["train"]))
    index = {c: i for i, c in enumerate(classes)}
    for split in SPLITS[1:]:
        for label in labels[split]:
            index.setdefault(label, len(index))
    return {split: np.array([index[x] for x in labels[split]], dtype=np.int64) for split in SPLITS}, len(classes)


def _token_task(name: str, features: LayerFeatures, table: _Words, bank: WordBank, config: SuiteConfig) -> TaskOutcome:
    start = time.perf_counter()
    label_of = TOKEN_TASKS[name]
    labels = {split: [label_of(w) for w in table.words[split]] for split in SPLITS}
    ids, classes = _label_ids(labels)
    types = {split: [w.form for w in table.words[split]] for split in SPLITS}
    control_map = control_labels([t for split in SPLITS for t in types[split]], labels["train"], config.seed)
    control_ids, _ = _label_ids({split: [control_map[t] for t in types[split]] for split in SPLITS})
    result = probe_layers(
        features,
        ids["train"],
        ids["dev"],
        ids["test"],
        strengths=config.strengths,
        seed=config.seed,
        resamples=config.resamples,
        test_groups=bank.sentence[table.rows["test"]],
        control=(control_ids["train"], control_ids["test"]),
    )
    descriptions = {
        "upos": "universal part of speech",
        "xpos": "Penn Treebank tag",
        "deprel": "universal dependency relation to the head (subtypes folded)",
    }
    return TaskOutcome(
        name,
        "token",
        descriptions[name],
        classes,
        {s: len(table.rows[s]) for s in SPLITS},
        result,
        time.perf_counter() - start,
    )


def _sentence_task(dataset: ProbingDataset, index: dict[str, int], bank, config: SuiteConfig) -> TaskOutcome:
    start = time.perf_counter()
    layers = range(bank.num_layers + 1)

    def features(split: str) -> np.ndarray:
        rows = np.array([index[t] for t in dataset.splits[split][0]])
        return np.stack([bank.layer(config.sentence_pooler, k, rows) for k in layers])  # [L+1, n, H]

    result = probe_layers(
        LayerFeatures.from_splits(features("train"), features("dev"), features("test")),
        dataset.label_ids("train"),
        dataset.label_ids("dev"),
        dataset.label_ids("test"),
        strengths=config.strengths,
        seed=config.seed,
        resamples=config.resamples,
    )
    return TaskOutcome(
        dataset.name,
        "sentence",
        dataset.description,
        len(dataset.classes),
        dataset.sizes(),
        result,
        time.perf_counter() - start,
    )


def _checkpointed(checkpoint_dir: Path | None, key: str, name: str, compute) -> TaskOutcome:
    """A finished task is saved (with a checksum) and reused by a rerun with the same key."""
    if checkpoint_dir is None:
        return compute()
    return cached_result(checkpoint_dir / f"{name}.json", key, compute, TaskOutcome.to_dict, TaskOutcome.from_dict)


def run_linguistic_suite(
    encoder: Encoder,
    splits: dict[str, list[Sentence]],
    cache_dir: Path,
    config: SuiteConfig = SuiteConfig(),
    *,
    datasets_dir: Path | None = None,
    checkpoint_dir: Path | None = None,
    progress: Progress = silent,
) -> SuiteResult:
    """Run the chosen token and sentence tasks; every task is probed at every layer and with a ScalarMix."""
    check_tasks(config.tasks)
    key = content_key(
        [
            SUITE_VERSION,
            encoder.ref.fingerprint,
            encoder.max_length,
            encoder.precision,
            asdict(config) | {"tasks": None},
            _fingerprint(splits),
        ]
    )
    outcomes: dict[str, TaskOutcome] = {}
    timings: dict[str, float] = {}
    notes: list[str] = []
    token_names = [t for t in config.tasks if t in TOKEN_TASKS]
    sentence_names = [t for t in config.tasks if t in SENTENCE_TASKS]
    if token_names:
        start = time.perf_counter()
        texts, spans, words, rebuilt = _word_table(splits)
        bank = build_word_bank(
            encoder,
            texts,
            spans,
            cache_dir,
            subword=config.subword,
            progress=lambda stage, d, t: progress("encoding treebank", d, t),
        )
        table = _aligned_words(splits, bank, words, rebuilt, config)
        timings["word_bank_seconds"] = time.perf_counter() - start
        if table.unaligned:
            notes.append(
                f"{table.unaligned} words had no subword token (cut at max_length {encoder.max_length} or only "
                "characters the tokenizer drops) and are left out of the token tasks"
            )
        if table.rebuilt:
            notes.append(
                f"{table.rebuilt} sentences had a text comment that disagrees with their forms; their text was rebuilt"
            )
        features = None
        for number, name in enumerate(token_names):
            progress(counting(f"probing {name}", "tasks"), number, len(config.tasks))

            def compute(name=name):
                nonlocal features
                if features is None:  # read once, shared by every token task
                    features = _word_features(bank, table)
                return _token_task(name, features, table, bank, config)

            outcomes[name] = _checkpointed(checkpoint_dir, key, name, compute)
        del features
    if sentence_names:
        start = time.perf_counter()
        datasets = sentence_tasks(splits, config.seed)
        missing = [n for n in sentence_names if n not in datasets]
        if missing:
            notes.append(f"not enough data in this treebank for: {', '.join(missing)}")
        sentence_names = [n for n in sentence_names if n in datasets]
        if datasets_dir is not None:
            for name in sentence_names:
                save_jsonl(datasets[name], datasets_dir / f"{name}.jsonl")
        texts = sorted({t for n in sentence_names for s in SPLITS for t in datasets[n].splits[s][0]})
        index = {t: i for i, t in enumerate(texts)}
        bank = build_bank(
            encoder,
            texts,
            cache_dir,
            poolers=(config.sentence_pooler,),
            progress=lambda stage, d, t: progress("encoding sentence tasks", d, t),
        )
        timings["sentence_bank_seconds"] = time.perf_counter() - start
        for number, name in enumerate(sentence_names, start=len(token_names)):
            progress(counting(f"probing {name}", "tasks"), number, len(config.tasks))
            outcomes[name] = _checkpointed(
                checkpoint_dir, key, name, lambda name=name: _sentence_task(datasets[name], index, bank, config)
            )
    progress("done", len(config.tasks), len(config.tasks))
    timings["probe_seconds"] = sum(o.seconds for o in outcomes.values())
    return SuiteResult(
        encoder.ref.name, encoder.ref.fingerprint, encoder.num_layers, config, outcomes, timings, tuple(notes)
    )
