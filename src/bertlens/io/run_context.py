"""What every long job of a command shares: where it writes and caches, its seed, its progress, its device."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import OptionError
from bertlens.progress import Progress, silent

SEED_LIMIT = 2**32 - 1  # numpy's and torch's seeds: non-negative, and this fits every generator


def check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_LIMIT:
        raise OptionError(f"{{seed}} must be between 0 and {SEED_LIMIT}, got {seed}", "seed")
    return seed


@dataclass(frozen=True)
class RunContext:
    """A run's surroundings, passed as one value instead of six parameters to every `run_*` function."""

    out: Path | None = None  # the run's output directory (each command says what it writes there)
    cache_dir: Path | None = None  # content-addressed caches (default $BERTLENS_CACHE or ~/.cache/bertlens)
    seed: int = 0
    progress: Progress = silent
    device: str = "cpu"  # auto | cpu | cuda[:N]
    trust_remote_code: bool = False  # a model's own code runs only when asked
    restart: bool = False  # discard an unfinished run in `out` instead of resuming it

    def __post_init__(self) -> None:
        check_seed(self.seed)  # before any work, not after the first steps
