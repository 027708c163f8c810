"""Linguistic probing tasks built deterministically from a UD treebank.

Token tasks label every word (UPOS, XPOS, the universal dependency relation to its head).
Sentence tasks follow SentEval's probing suite (Conneau et al. 2018, "What you can cram
into a single $&!#* vector"), rebuilt from dependency trees: length bins, word content,
tree depth, the root's dependent sequence (standing in for top constituents), main-verb
tense, subject and object number, bigram shift and coordination inversion. Every task
keeps the treebank's train/dev/test split, has balanced classes (seeded down-sampling)
and drops classes too rare to learn from.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.io.atomic import temporary_sibling
from bertlens.tasks.conllu import TREEBANK_SPLITS, Sentence, Word

SPLITS = TREEBANK_SPLITS
LENGTH_BINS = ((3, 5), (6, 8), (9, 12), (13, 16), (17, 21), (22, 28))
MAX_DEPTH_CLASS = 8  # depths >= 8 share one class
CONTENT_WORDS = 30  # word-content candidates: mid-frequency words (rare ones are dropped below)
CONTENT_SKIP = 50  # skip the most frequent words (function words)
TOP_SEQUENCES = 10  # root-dependent sequence candidates
MIN_TRAIN_PER_CLASS = 10
MIN_EVAL_PER_CLASS = 10  # a class needs this many dev and test examples, or balancing would starve the task


@dataclass(frozen=True)
class ProbingDataset:
    name: str
    description: str
    splits: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]  # split -> (texts, labels)
    classes: tuple[str, ...]

    def label_ids(self, split: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.classes)}
        return np.array([index[label] for label in self.splits[split][1]], dtype=np.int64)

    def sizes(self) -> dict[str, int]:
        return {split: len(texts) for split, (texts, _) in self.splits.items()}


def is_punct(word: Word) -> bool:
    return word.upos == "PUNCT"


def tree_depth(sentence: Sentence) -> int:
    """Longest root-to-leaf path in words (a single-word sentence has depth 1)."""
    depth = {0: 0}
    heads = {w.id: w.head for w in sentence.words}

    def of(node: int, seen: int = 0) -> int:
        if node not in depth:
            if seen > len(heads):
                raise ValueError(f"sentence {sentence.sent_id}: the heads form a cycle")
            depth[node] = of(heads[node], seen + 1) + 1
        return depth[node]

    return max(of(w.id) for w in sentence.words)


def _root(sentence: Sentence) -> Word | None:
    roots = [w for w in sentence.words if w.head == 0]
    return roots[0] if len(roots) == 1 else None


def _dependents(sentence: Sentence, head: int) -> list[Word]:
    return [w for w in sentence.words if w.head == head]


def length_label(sentence: Sentence) -> str | None:
    n = len(sentence.words)
    return next((f"{lo}-{hi}" for lo, hi in LENGTH_BINS if lo <= n <= hi), None)


def depth_label(sentence: Sentence) -> str | None:
    if len(sentence.words) < 3:
        return None
    depth = tree_depth(sentence)
    return None if depth < 3 else (f"{MAX_DEPTH_CLASS}+" if depth >= MAX_DEPTH_CLASS else str(depth))


def top_sequence(sentence: Sentence) -> str | None:
    """The root's dependents' relations in order, with ROOT in its place (punctuation left out)."""
    root = _root(sentence)
    if root is None or len(sentence.words) < 3:
        return None
    items = [(w.id, w.relation) for w in _dependents(sentence, root.id) if not is_punct(w)] + [(root.id, "ROOT")]
    return " ".join(relation for _, relation in sorted(items))


def tense_label(sentence: Sentence) -> str | None:
    """Tense of the main clause: the root's, else its finite auxiliary's or copula's."""
    root = _root(sentence)
    if root is None:
        return None
    tense = root.feats.get("Tense") if root.feats.get("VerbForm") == "Fin" else None
    if tense is None:
        helpers = [
            w
            for w in _dependents(sentence, root.id)
            if w.relation in ("aux", "cop") and w.feats.get("VerbForm") == "Fin"
        ]
        tense = helpers[0].feats.get("Tense") if helpers else None
    return tense if tense in ("Past", "Pres") else None


def _argument_number(sentence: Sentence, relations: tuple[str, ...]) -> str | None:
    root = _root(sentence)
    if root is None:
        return None
    args = [w for w in _dependents(sentence, root.id) if w.deprel in relations]
    number = args[0].feats.get("Number") if len(args) == 1 else None
    return number if number in ("Sing", "Plur") else None


def subject_number(sentence: Sentence) -> str | None:
    return _argument_number(sentence, ("nsubj", "nsubj:pass"))


def object_number(sentence: Sentence) -> str | None:
    return _argument_number(sentence, ("obj",))


def spaced(words: list[str]) -> str:
    """Texts of transformed sentences are word forms joined by spaces, for both classes (no spacing cue)."""
    return " ".join(words)


def bigram_shift(sentence: Sentence, rng: np.random.Generator, swap: bool) -> str | None:
    """Swap two adjacent words (neither punctuation, not the first word: no capitalisation cue)."""
    words = sentence.words
    if len(words) < 5:
        return None
    forms = [w.form for w in words]
    places = [
        i
        for i in range(1, len(words) - 1)
        if not is_punct(words[i]) and not is_punct(words[i + 1]) and forms[i].lower() != forms[i + 1].lower()
    ]
    if not places:
        return None
    i = places[int(rng.integers(len(places)))]
    if swap:
        forms[i], forms[i + 1] = forms[i + 1], forms[i]
    return spaced(forms)


def _subtree(sentence: Sentence, head: int) -> list[int]:
    kids = sentence.children()
    out, stack = [], [head]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(kids.get(node, []))
    return sorted(out)


def _sentence_case(forms: list[str], words: list[Word], capitalise: bool) -> list[str]:
    first = forms[0]
    if words[0].upos == "PROPN" or first == "I":
        return forms
    return [(first[:1].upper() if capitalise else first[:1].lower()) + first[1:]] + forms[1:]


def coordination(sentence: Sentence, invert: bool) -> str | None:
    """'clause1 cc clause2 .' -> 'clause2 cc clause1 .' for two coordinated full clauses.

    Needs: a root with a subject, one clausal conjunct (with its own subject) whose subtree
    is a contiguous span starting with its coordinator and followed only by punctuation.
    """
    root = _root(sentence)
    if root is None:
        return None
    deps = _dependents(sentence, root.id)
    conjuncts = [w for w in deps if w.relation == "conj"]
    if len(conjuncts) != 1 or not any(w.relation == "nsubj" and w.id < root.id for w in deps):
        return None
    conj = conjuncts[0]
    span = _subtree(sentence, conj.id)
    if span != list(range(span[0], span[-1] + 1)):
        return None
    inner = [sentence.words[i - 1] for i in span]
    lead = 0
    while lead < len(inner) and is_punct(inner[lead]):
        lead += 1
    if lead >= len(inner) or inner[lead].relation != "cc" or inner[lead].head != conj.id:
        return None
    if not any(w.relation == "nsubj" and w.head == conj.id for w in inner):
        return None
    first = sentence.words[: span[0] - 1]
    second = inner[lead + 1 :]
    tail = sentence.words[span[-1] :]
    if len(first) < 2 or len(second) < 2 or not all(is_punct(w) for w in tail):
        return None
    cc = inner[lead].form
    if not invert:
        return spaced([w.form for w in first] + [cc] + [w.form for w in second] + [w.form for w in tail])
    moved_second = _sentence_case([w.form for w in second], second, capitalise=True)
    moved_first = _sentence_case([w.form for w in first], first, capitalise=False)
    return spaced(moved_second + [cc] + moved_first + [w.form for w in tail])


def _content_vocabulary(train: list[Sentence]) -> list[str]:
    """Mid-frequency alphabetic words (lower-cased), by how many training sentences contain them."""
    counts = Counter(
        word for s in train for word in {w.form.lower() for w in s.words if w.form.isalpha() and len(w.form) > 2}
    )
    ranked = sorted(counts, key=lambda word: (-counts[word], word))
    return ranked[CONTENT_SKIP : CONTENT_SKIP + CONTENT_WORDS]


def _balance(texts: list[str], labels: list[str], classes: tuple[str, ...], rng: np.random.Generator):
    """Down-sample every class to the rarest one's count; keeps the input order of what remains."""
    by_class = {c: [i for i, label in enumerate(labels) if label == c] for c in classes}
    smallest = min(len(rows) for rows in by_class.values())
    keep = (
        sorted(i for rows in by_class.values() for i in rng.choice(rows, smallest, replace=False).tolist())
        if smallest
        else []
    )
    return tuple(texts[i] for i in keep), tuple(labels[i] for i in keep)


def _property_task(
    name: str,
    description: str,
    label_of: Callable[[Sentence], str | None],
    splits: dict[str, list[Sentence]],
    seed: int,
    classes: tuple[str, ...] | None = None,
) -> ProbingDataset | None:
    labelled = {split: [(s.text, label_of(s)) for s in sentences] for split, sentences in splits.items()}
    labelled = {split: [(t, y) for t, y in rows if y is not None] for split, rows in labelled.items()}
    counts = {split: Counter(y for _, y in rows) for split, rows in labelled.items()}
    if classes is None:
        classes = tuple(sorted(counts["train"]))
    classes = tuple(
        c
        for c in classes
        if counts["train"][c] >= MIN_TRAIN_PER_CLASS
        and min(counts[split][c] for split in SPLITS[1:]) >= MIN_EVAL_PER_CLASS
    )
    return _finish(name, description, labelled, classes, seed)


def _finish(name, description, labelled, classes, seed) -> ProbingDataset | None:
    if len(classes) < 2:
        return None
    rng = np.random.default_rng([seed, sum(name.encode())])
    out = {}
    for split in SPLITS:
        rows = [(t, y) for t, y in labelled[split] if y in classes]
        texts, labels = _balance([t for t, _ in rows], [y for _, y in rows], classes, rng)
        if not texts:
            return None
        out[split] = (texts, labels)
    return ProbingDataset(name, description, out, classes)


def _transform_task(
    name,
    description,
    make: Callable[[Sentence, np.random.Generator, bool], str | None],
    labels: tuple[str, str],
    splits,
    seed,
) -> ProbingDataset | None:
    labelled = {}
    for split, sentences in splits.items():
        rng = np.random.default_rng([seed, sum(name.encode()), SPLITS.index(split)])
        flips = rng.permutation(len(sentences)) % 2 == 1  # half of the sentences transformed
        rows = []
        for sentence, flip in zip(sentences, flips):
            text = make(sentence, rng, bool(flip))
            if text is not None:
                rows.append((text, labels[int(flip)]))
        labelled[split] = rows
    return _finish(name, description, labelled, labels, seed)


def sentence_tasks(splits: dict[str, list[Sentence]], seed: int = 0) -> dict[str, ProbingDataset]:
    """Every SentEval-style task the treebank allows (a task without two usable classes is left out)."""
    vocabulary = _content_vocabulary(splits["train"])

    def content(sentence: Sentence) -> str | None:
        present = {w.form.lower() for w in sentence.words} & set(vocabulary)
        return next(iter(present)) if len(present) == 1 else None

    builders = {
        "sentence_length": lambda: _property_task(
            "sentence_length",
            "number of words, in 6 bins",
            length_label,
            splits,
            seed,
            tuple(f"{lo}-{hi}" for lo, hi in LENGTH_BINS),
        ),
        "word_content": lambda: _property_task(
            "word_content",
            "which of a set of mid-frequency words the sentence contains (exactly one)",
            content,
            splits,
            seed,
            tuple(vocabulary),
        ),
        "tree_depth": lambda: _property_task(
            "tree_depth", f"depth of the dependency tree (3 .. {MAX_DEPTH_CLASS}+)", depth_label, splits, seed
        ),
        "top_dependents": lambda: _property_task(
            "top_dependents",
            "sequence of the root's dependent relations (most frequent sequences)",
            top_sequence,
            splits,
            seed,
            tuple(
                seq for seq, _ in Counter(filter(None, map(top_sequence, splits["train"]))).most_common(TOP_SEQUENCES)
            ),
        ),
        "tense": lambda: _property_task("tense", "tense of the main clause (Past / Pres)", tense_label, splits, seed),
        "subject_number": lambda: _property_task(
            "subject_number", "number of the main clause's subject (Sing / Plur)", subject_number, splits, seed
        ),
        "object_number": lambda: _property_task(
            "object_number", "number of the main clause's direct object (Sing / Plur)", object_number, splits, seed
        ),
        "bigram_shift": lambda: _transform_task(
            "bigram_shift", "two adjacent words swapped or not", bigram_shift, ("original", "swapped"), splits, seed
        ),
        "coordination_inversion": lambda: _transform_task(
            "coordination_inversion",
            "two coordinated clauses in original or inverted order",
            lambda s, rng, flip: coordination(s, flip),
            ("original", "inverted"),
            splits,
            seed,
        ),
    }
    built = {name: make() for name, make in builders.items()}
    return {name: task for name, task in built.items() if task is not None}


def save_jsonl(dataset: ProbingDataset, path: Path) -> Path:
    """One line per example: {"split", "text", "label"}; written to a temporary file, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(path)
    with open(tmp, "w", encoding="utf-8") as handle:
        for split in SPLITS:
            handle.writelines(
                json.dumps({"split": split, "text": text, "label": label}, ensure_ascii=False) + "\n"
                for text, label in zip(*dataset.splits[split])
            )
    tmp.replace(path)
    return path


def control_labels(types: list[str], train_labels: list[str], seed: int) -> dict[str, str]:
    """Hewitt & Liang (2019) control task: each word type gets a label drawn once from the task's
    training label distribution, so only memorising types can solve it."""
    counts = Counter(train_labels)
    classes = sorted(counts)
    p = np.array([counts[c] for c in classes], dtype=np.float64)
    rng = np.random.default_rng(seed)
    unique = sorted(set(types))
    draws = rng.choice(len(classes), size=len(unique), p=p / p.sum())
    return {t: classes[d] for t, d in zip(unique, draws)}
