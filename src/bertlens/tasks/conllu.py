"""A CoNLL-U reader (Universal Dependencies format) and word -> character-span alignment.

Keeps what probing needs: the basic-tree words (integer ids), multiword tokens (`1-2`
ranges, e.g. "don't" = "do" + "n't") and the sentence text. Empty nodes (decimal ids,
enhanced graphs only) are skipped. A malformed line raises BertlensError naming the file
and line number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import BertlensError

TREEBANK_SPLITS = ("train", "dev", "test")

COLUMNS = 10
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_EMPTY = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True)
class Word:
    id: int
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: dict[str, str]
    head: int
    deprel: str
    misc: dict[str, str]

    @property
    def relation(self) -> str:
        """The universal relation without its subtype ('obl:tmod' -> 'obl')."""
        return self.deprel.split(":", 1)[0]


@dataclass(frozen=True)
class Multiword:
    """A surface token spanning words first..last (inclusive), e.g. 'won't' -> 'wo' + 'n't'."""

    first: int
    last: int
    form: str
    misc: dict[str, str]


@dataclass(frozen=True)
class Sentence:
    sent_id: str
    text: str
    words: tuple[Word, ...]
    multiwords: tuple[Multiword, ...]
    line: int  # line number of the sentence's first line, for messages

    def surface_tokens(self) -> list[tuple[str, tuple[int, ...], dict[str, str]]]:
        """Surface tokens in order: (form, word ids it covers, misc)."""
        by_first = {m.first: m for m in self.multiwords}
        tokens, i = [], 1
        while i <= len(self.words):
            if i in by_first:
                m = by_first[i]
                tokens.append((m.form, tuple(range(m.first, m.last + 1)), m.misc))
                i = m.last + 1
            else:
                word = self.words[i - 1]
                tokens.append((word.form, (i,), word.misc))
                i += 1
        return tokens

    def children(self) -> dict[int, list[int]]:
        """head id -> dependent ids (0 is the artificial root)."""
        kids: dict[int, list[int]] = {}
        for word in self.words:
            kids.setdefault(word.head, []).append(word.id)
        return kids


def _fields(text: str) -> dict[str, str]:
    if text == "_":
        return {}
    out = {}
    for item in text.split("|"):
        key, _, value = item.partition("=")
        out[key] = value
    return out


def rebuild_text(sentence_tokens: list[tuple[str, tuple[int, ...], dict[str, str]]]) -> str:
    """Sentence text from surface tokens, honouring SpaceAfter=No."""
    parts = []
    for form, _, misc in sentence_tokens:
        parts.append(form)
        if misc.get("SpaceAfter") != "No":
            parts.append(" ")
    return "".join(parts).rstrip()


def _sentence(
    path: Path, start: int, comments: dict[str, str], words: list[Word], multiwords: list[Multiword]
) -> Sentence:
    for position, word in enumerate(words, start=1):
        if word.id != position:
            raise BertlensError(
                f"{path}:{start}: word ids must run 1, 2, 3, ...; found {word.id} at position {position}"
            )
    for word in words:
        if not 0 <= word.head <= len(words):
            raise BertlensError(f"{path}:{start}: word {word.id} has head {word.head}, outside 0..{len(words)}")
    sentence = Sentence(
        comments.get("sent_id", f"line{start}"), comments.get("text", ""), tuple(words), tuple(multiwords), start
    )
    if not sentence.text:
        sentence = Sentence(
            sentence.sent_id, rebuild_text(sentence.surface_tokens()), sentence.words, sentence.multiwords, start
        )
    return sentence


def read_conllu(path: str | Path) -> Iterator[Sentence]:
    """Yield sentences from a CoNLL-U file."""
    path = Path(path)
    if not path.is_file():
        raise BertlensError(f"CoNLL-U file not found: {path}")
    comments: dict[str, str] = {}
    words: list[Word] = []
    multiwords: list[Multiword] = []
    start = 0
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                if words:
                    yield _sentence(path, start, comments, words, multiwords)
                elif comments:
                    raise BertlensError(f"{path}:{number}: sentence starting at line {start} has no words")
                comments, words, multiwords, start = {}, [], [], 0
                continue
            start = start or number
            if line.startswith("#"):
                key, sep, value = line[1:].partition("=")
                if sep:
                    comments[key.strip()] = value.strip()
                continue
            cols = line.split("\t")
            if len(cols) != COLUMNS:
                raise BertlensError(
                    f"{path}:{number}: expected {COLUMNS} tab-separated columns, found {len(cols)}; "
                    "is this a CoNLL-U file (spaces instead of tabs?)"
                )
            ident = cols[0]
            if _EMPTY.match(ident):
                continue  # empty node of the enhanced graph: not part of the basic tree
            span = _RANGE.match(ident)
            if span:
                first, last = int(span.group(1)), int(span.group(2))
                if last <= first:
                    raise BertlensError(f"{path}:{number}: multiword range '{ident}' must end after it starts")
                multiwords.append(Multiword(first, last, cols[1], _fields(cols[9])))
                continue
            if not ident.isdigit() or not (cols[6].isdigit()):
                raise BertlensError(f"{path}:{number}: bad id '{ident}' or head '{cols[6]}'; both must be integers")
            words.append(
                Word(
                    int(ident),
                    cols[1],
                    cols[2],
                    cols[3],
                    cols[4],
                    _fields(cols[5]),
                    int(cols[6]),
                    cols[7],
                    _fields(cols[9]),
                )
            )
    if words:
        yield _sentence(path, start, comments, words, multiwords)


def word_spans(sentence: Sentence) -> tuple[str, list[tuple[int, int]], bool]:
    """Character span of every word in the sentence text.

    Surface tokens are found in order in the text; a multiword token's span is split among
    its words when their forms spell it ('do'+'n't' = "don't"), else every word shares the
    whole span ('wo'+'n't' for "won't"). When a token cannot be found in the given text
    (a text comment that disagrees with the forms), the text is rebuilt from the forms.
    Returns (text, spans, rebuilt).
    """
    tokens = sentence.surface_tokens()
    forms = [w.form for w in sentence.words]
    spans = _find_spans(sentence.text, tokens, forms)
    if spans is not None:
        return sentence.text, spans, False
    text = rebuild_text(tokens)
    return text, _find_spans(text, tokens, forms), True


def _find_spans(text: str, tokens, forms: list[str]) -> list[tuple[int, int]] | None:
    spans: list[tuple[int, int]] = []
    cursor = 0
    for form, ids, _ in tokens:
        begin = text.find(form, cursor)
        if begin < 0 or text[cursor:begin].strip():  # not found, or skipping over other text
            return None
        end = begin + len(form)
        cursor = end
        parts = [forms[i - 1] for i in ids]
        if len(ids) > 1 and "".join(parts).lower() == form.lower():
            for part in parts:  # the words spell the token: each gets its own piece
                spans.append((begin, begin + len(part)))
                begin += len(part)
        else:
            spans.extend([(begin, end)] * len(ids))  # 'wo'+'n't' for "won't": the words share the token
    return spans


def find_split_file(directory: Path, split: str) -> Path:
    """`split`.conllu, or a UD-style name such as en_ewt-ud-`split`.conllu."""
    exact = directory / f"{split}.conllu"
    if exact.is_file():
        return exact
    matches = sorted(directory.glob(f"*-{split}.conllu")) + sorted(directory.glob(f"*_{split}.conllu"))
    if len(matches) != 1:
        found = ", ".join(p.name for p in sorted(directory.glob("*.conllu"))) or "no .conllu files"
        raise BertlensError(f"{directory}: need one {split}.conllu (or *-{split}.conllu); found {found}")
    return matches[0]


def load_treebank(directory: str | Path, max_sentences: int | None = None) -> dict[str, list[Sentence]]:
    """train/dev/test sentences of a UD treebank directory (the first `max_sentences` of each, if given)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BertlensError(
            f"treebank directory not found: {directory}; pass --treebank DIR with train/dev/test .conllu files"
        )
    splits = {}
    for split in TREEBANK_SPLITS:
        sentences = []
        for sentence in read_conllu(find_split_file(directory, split)):
            if max_sentences is not None and len(sentences) >= max_sentences:
                break
            sentences.append(sentence)
        if not sentences:
            raise BertlensError(f"{find_split_file(directory, split)}: no sentences")
        splits[split] = sentences
    return splits
