"""The sweep's protocols by name: the one table the dispatch reads (a task kind lists which of them apply)."""

from __future__ import annotations

from .clustering import Clustering
from .cosine import Cosine
from .label_free import LabelFree
from .probe import Probe
from .protocol import SweepProtocol

PROTOCOLS: dict[str, SweepProtocol] = {p.name: p for p in (Probe(), Cosine(), Clustering(), LabelFree())}
OPT_IN = (
    "clustering",
    "label_free",
    "late_interaction",
)  # run only when asked (--protocols): each costs more than the probes
