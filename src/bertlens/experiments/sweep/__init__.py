"""The sweep: one feature bank, every candidate, every protocol, honest intervals, one recommendation.

config.py     SweepConfig, and the check that a task's kind can take it (one line, as the CLI says it)
context.py    SweepContext: what every protocol shares (bank, examples as bank rows, folds, settings)
protocol.py   the SweepProtocol interface (plan, run), Plan / Scored / Outcome, the shared scoring step
probe.py, cosine.py, clustering.py, label_free.py: one protocol each; registry.py: PROTOCOLS by name
retrieval.py  the retrieval protocols (their own bank of documents and queries)
choice.py     ranking, the cross-validated choice, notes, the SweepResult
results.py    ProtocolResult, SweepResult
run.py        run_sweep / run_texts_sweep: one encoding pass, then one dispatch over the kind's protocols
"""

from .config import SweepConfig, check_config
from .registry import PROTOCOLS
from .results import RECIPE_PROBES, ProtocolResult, SweepResult
from .retrieval import protocol_key
from .run import run_sweep, run_texts_sweep

__all__ = [
    "PROTOCOLS",
    "RECIPE_PROBES",
    "ProtocolResult",
    "SweepConfig",
    "SweepResult",
    "check_config",
    "protocol_key",
    "run_sweep",
    "run_texts_sweep",
]
