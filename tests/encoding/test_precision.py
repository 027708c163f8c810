"""auto precision: bf16 only where the CPU has native bf16; an explicit bf16 without it warns with the measured cost."""

from __future__ import annotations

import warnings

import pytest

from bertlens.encoding.precision import bf16_slowdown, choose_precision


def test_auto_follows_the_cpu_flags():
    assert choose_precision("auto", frozenset({"avx2", "avx512f"}))[0] == "fp32"
    assert choose_precision("auto", frozenset({"avx512_bf16"}))[0] == "bf16"
    assert choose_precision("auto", frozenset({"amx_bf16"}))[0] == "bf16"
    assert "emulated" in choose_precision("auto", frozenset())[1]


def test_explicit_bf16_without_native_support_warns_with_a_measured_cost():
    with pytest.warns(UserWarning, match=r"bf16 matrix product takes [0-9.]+x the time of fp32"):
        assert choose_precision("bf16", frozenset({"avx2"}))[0] == "bf16"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert choose_precision("bf16", frozenset({"avx512_bf16"}))[0] == "bf16"  # native: no warning
        assert choose_precision("fp32", frozenset())[0] == "fp32"
    assert bf16_slowdown() > 0
