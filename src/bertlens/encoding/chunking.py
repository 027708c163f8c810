"""Long texts as pure functions over token positions: truncation strategies and strided windows.

Positions count content tokens only (no [CLS]/[SEP]); every piece is later wrapped in the
model's special tokens, so `size` is the model limit minus those (e.g. 510 for 512).
  head          the first `size` tokens (what plain truncation keeps)
  tail          the last `size` tokens
  head_tail     the first `head` and the last `size - head` tokens (Sun et al. 2019, "How to
                fine-tune BERT for text classification?": 128 + 382 was best on IMDb)
  windows       spans of `size` every `stride` tokens covering the whole text; the last window
                is aligned to the end, so no window is short unless the text is
  late          late chunking (Guenther et al. 2024, arXiv 2409.04701): the text is read in windows of
                `size` overlapping by half, cut into chunks of `chunk` tokens, and each chunk is pooled
                from the token states of the window where it sits most centrally, so a chunk's vector
                has seen the context around it; chunk vectors are then aggregated like windows
  chunks        independent chunks: the text cut into spans of `chunk` tokens, each read as its own model input
                (no context beyond the chunk)

Aggregates turn a text's pieces into one vector (mean, max, first, weighted), except `maxp`: the pieces stay
separate vectors (one row per chunk in `embed` and `index`) and a document scores its best piece at search
time (MaxP; Dai & Callan 2019, "Deeper text understanding for IR with contextual neural language modeling").
Readings that exist for documents (late, chunks, and any maxp) read a query whole, up to the limit: queries are
short, and the sweep scored them so.
"""

from __future__ import annotations

from dataclasses import dataclass

from bertlens.errors import BertlensError, did_you_mean

KINDS = ("head", "tail", "head_tail", "windows", "late", "chunks")
AGGREGATES = ("mean", "max", "first", "weighted", "maxp")
MAXP = "maxp"  # not a vector aggregate: one row per piece, a document scored by its best


def windows(length: int, size: int, stride: int) -> list[tuple[int, int]]:
    """[start, end) spans covering positions 0..length-1."""
    if size < 1:
        raise BertlensError(f"window size must be at least 1, got {size}")
    if not 1 <= stride <= size:
        raise BertlensError(
            f"window stride {stride} must be between 1 and the window size {size}; a larger stride would skip tokens"
        )
    if length <= size:
        return [(0, length)]
    spans = [(start, start + size) for start in range(0, length - size + 1, stride)]
    if spans[-1][1] < length:
        spans.append((length - size, length))
    return spans


def head(length: int, size: int) -> list[tuple[int, int]]:
    return [(0, min(length, size))]


def tail(length: int, size: int) -> list[tuple[int, int]]:
    return [(max(0, length - size), length)]


def head_tail(length: int, size: int, head_tokens: int) -> list[tuple[int, int]]:
    """One piece made of two spans: the first `head_tokens` and the last `size - head_tokens`."""
    if not 0 <= head_tokens <= size:
        raise BertlensError(f"head_tail keeps {head_tokens} head tokens, which must be between 0 and {size}")
    if length <= size:
        return [(0, length)]
    spans = [(0, head_tokens)] if head_tokens else []
    if size - head_tokens:
        spans.append((length - (size - head_tokens), length))
    return spans


@dataclass(frozen=True)
class LongText:
    """How a text longer than the model limit becomes one vector.

    kind: head | tail | head_tail | windows | late | chunks; head_tokens: for head_tail; stride: for windows
    (default: half the window); chunk: for late and chunks; aggregate: how piece vectors combine (mean, max,
    first, weighted = token-count-weighted mean), or maxp: they stay one row each.
    """

    kind: str = "head"
    head_tokens: int = 128
    stride: int | None = None
    aggregate: str = "mean"
    chunk: int = 64  # late: content tokens per chunk (at most half a window)

    @property
    def name(self) -> str:
        if self.kind == "head_tail":
            return f"head_tail:{self.head_tokens}"
        if self.kind == "windows":
            return "windows" + (f":{self.stride}" if self.stride else "") + f":{self.aggregate}"
        if self.kind in ("late", "chunks"):
            return f"{self.kind}:{self.chunk}:{self.aggregate}"
        return self.kind

    @property
    def per_piece(self) -> bool:
        """One vector per piece (chunk), not per text: a document scores its best (MaxP)."""
        return self.aggregate == MAXP

    @property
    def for_documents(self) -> bool:
        """A reading of documents only: a query is read whole up to the limit (see the module docstring)."""
        return self.kind in ("late", "chunks") or self.per_piece

    @property
    def piece_aggregate(self) -> str:
        """How pieces combine into one vector: windows by their aggregate; one-piece strategies keep it."""
        if self.per_piece:
            raise BertlensError(f"'{self.name}' keeps one vector per piece; there is no per-text vector to make")
        return self.aggregate if self.kind in ("windows", "late", "chunks") else "first"

    def pieces(self, length: int, size: int) -> list[list[tuple[int, int]]]:
        """Model inputs as lists of spans (one span, or two for head_tail) for a text of `length` tokens."""
        if self.kind == "head":
            return [head(length, size)]
        if self.kind == "tail":
            return [tail(length, size)]
        if self.kind == "head_tail":
            return [head_tail(length, size, min(self.head_tokens, size))]
        if self.kind == "late":
            return [[span] for span in windows(length, size, max(1, size // 2))]
        if self.kind == "chunks":
            chunk = min(self.chunk, size)
            return [[span] for span in windows(length, chunk, chunk)]
        return [[span] for span in windows(length, size, self.stride or max(1, size // 2))]

    def chunks(self, length: int, size: int) -> list[tuple[int, int, int]]:
        """Late chunking: (window index, start, end) for each chunk of a `length`-token text, in order; each chunk
        goes to the window whose centre is nearest its own (windows from `pieces`, overlapping by half)."""
        spans = [piece[0] for piece in self.pieces(length, size)]
        chunk = max(1, min(self.chunk, size // 2))  # fits inside some window whatever its offset
        out = []
        for start in range(0, max(length, 1), chunk):
            end = min(start + chunk, length)
            centre = (start + end) / 2
            inside = [k for k, (a, b) in enumerate(spans) if a <= start and end <= b]
            out.append((min(inside, key=lambda k: abs((spans[k][0] + spans[k][1]) / 2 - centre)), start, end))
        return out


def parse_long_text(spec: str) -> LongText:
    """'head', 'tail', 'head_tail[:HEAD]', 'windows[:STRIDE][:AGGREGATE]', 'late[:CHUNK][:AGGREGATE]',
    'chunks[:CHUNK][:AGGREGATE]'."""
    parts = spec.strip().split(":")
    kind, args = parts[0], parts[1:]
    if kind not in KINDS:
        raise BertlensError(f"unknown long-text strategy '{kind}': {did_you_mean(kind, KINDS)}")
    if kind in ("head", "tail") and args:
        raise BertlensError(f"long-text strategy '{kind}' takes no arguments (got '{spec}')")
    if kind == "head_tail":
        if len(args) > 1 or (args and not args[0].isdigit()):
            raise BertlensError(f"'{spec}': use head_tail or head_tail:HEAD_TOKENS (an integer)")
        return LongText("head_tail", head_tokens=int(args[0]) if args else 128)
    if kind in ("windows", "late", "chunks"):
        stride, aggregate = None, "mean"
        for arg in args:
            if arg.isdigit():
                stride = int(arg)
            elif arg in AGGREGATES:
                aggregate = arg
            else:
                raise BertlensError(
                    f"'{spec}': '{arg}' is neither a {'stride' if kind == 'windows' else 'chunk size'} nor an "
                    f"aggregate ({', '.join(AGGREGATES)})"
                )
        if stride is not None and stride < 1:
            raise BertlensError(f"'{spec}': the {'stride' if kind == 'windows' else 'chunk size'} must be at least 1")
        if kind in ("late", "chunks"):
            return LongText(kind, aggregate=aggregate, chunk=stride or 64)
        return LongText("windows", stride=stride, aggregate=aggregate)
    return LongText(kind)
