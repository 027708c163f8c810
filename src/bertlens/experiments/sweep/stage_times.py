"""Where a sweep's time went: its recorded timings as stages, each against the bank's (the part a user expects).

A sweep records a flat `timings` map (seconds by key): the bank, each protocol's whole, and the parts inside a
protocol (the probe's ScalarMix fits, ridge screen and logistic probes; every fitted protocol's bootstrap). This reads
that map into ordered stages, so the report, results.json and the benches (bench/probe_stages.py) say the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

BANK_KEYS = ("bank_seconds", "late_interaction_bank_seconds")  # encoding passes: what the rest is measured against
WHOLE_RUN = ("stages_seconds",)  # --rows auto: every look together, not a stage of its own
PROBE_PARTS = {
    "mixes_seconds": "ScalarMix fits",
    "screen_seconds": "ridge screen",
    "logistic_seconds": "logistic probes",
    "ridge_seconds": "ridge fits",  # a number per text (or pair): every candidate's ridge, no screen
}
BOOTSTRAP = "_bootstrap_seconds"  # `{protocol}_bootstrap_seconds`: its intervals (and, under CV, the nested choice)


@dataclass(frozen=True)
class Stage:
    """One stage: its name, wall seconds, whether it is an encoding pass, and the protocol it is part of ("" when
    it is one of the sweep's own stages)."""

    name: str
    seconds: float
    encoding: bool = False
    part_of: str = ""


def _parts(timings: Mapping[str, float], protocol: str) -> list[Stage]:
    """The recorded parts of one protocol, in the order they run."""
    parts = []
    if protocol == "probe":  # the probe's own parts are recorded without its name
        parts = [Stage(name, timings[key], part_of=protocol) for key, name in PROBE_PARTS.items() if key in timings]
    if f"{protocol}{BOOTSTRAP}" in timings:
        parts.append(Stage("bootstrap", timings[f"{protocol}{BOOTSTRAP}"], part_of=protocol))
    return parts


def stages(timings: Mapping[str, float], protocols: Iterable[str]) -> tuple[Stage, ...]:
    """The sweep's stages in order: encoding passes, then each protocol (its recorded parts and the rest of it),
    then any other recorded stage (retrieval's scoring, long documents, label-free)."""
    protocols = [p for p in protocols if f"{p}_seconds" in timings]
    out = [Stage(key.removesuffix("_seconds"), timings[key], encoding=True) for key in BANK_KEYS if key in timings]
    taken = {*BANK_KEYS, *WHOLE_RUN, *PROBE_PARTS}
    for protocol in protocols:
        whole = timings[f"{protocol}_seconds"]
        parts = _parts(timings, protocol)
        out.append(Stage(protocol, whole))
        out += parts
        rest = whole - sum(p.seconds for p in parts)
        if parts and rest > 0.05:
            out.append(Stage("the rest", rest, part_of=protocol))
        taken |= {f"{protocol}_seconds", f"{protocol}{BOOTSTRAP}"}
    out += [Stage(key.removesuffix("_seconds"), v) for key, v in timings.items() if key not in taken]
    return tuple(out)


def encoding_seconds(table: tuple[Stage, ...]) -> float:
    return sum(s.seconds for s in table if s.encoding)


def after_encoding_seconds(table: tuple[Stage, ...]) -> float:
    """Everything after the encoding passes: the sweep's own stages (a protocol's parts are inside its whole)."""
    return sum(s.seconds for s in table if not s.encoding and not s.part_of)


def stage_rows(table: tuple[Stage, ...]) -> list[tuple[str, float, float | None]]:
    """(label, seconds, x the encoding time or None without one) per stage, then the total after the encoding."""
    bank = encoding_seconds(table)
    ratio = (lambda s: s / bank) if bank > 0 else (lambda s: None)
    rows = [(f"{s.part_of}: {s.name}" if s.part_of else s.name, s.seconds, ratio(s.seconds)) for s in table]
    after = after_encoding_seconds(table)
    return rows + [("after the bank", after, ratio(after))]
