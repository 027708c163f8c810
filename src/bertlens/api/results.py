"""What every command's result object offers over its rows: an Arrow table always, a DataFrame where pandas is
installed, and `options.json` beside what `save(dir)` writes (the run's options, to repeat it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bertlens.api.options import options_record
from bertlens.errors import BertlensError
from bertlens.io.atomic import write_json


class RowsResult:
    """A mixin for a result dataclass that defines `rows()`."""

    def rows(self) -> list[dict]:
        raise NotImplementedError

    def to_arrow(self):
        import pyarrow as pa

        return pa.Table.from_pylist(self.rows())

    def to_pandas(self):
        """The rows as a DataFrame (pandas is not a dependency of bertlens: install it to use this)."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise BertlensError("to_pandas() needs pandas: pip install pandas (or use to_arrow())") from None
        return self.to_arrow().to_pandas()


def save_options(out: Path, options: Any) -> Path:
    """options.json under `out`: the options that made the run."""
    write_json(out / "options.json", options_record(options))
    return out / "options.json"
