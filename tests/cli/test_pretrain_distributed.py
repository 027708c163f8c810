"""`bertlens pretrain` under torchrun: 2 processes with batch b follow 1 process with batch 2b.

Both runs see the same rows in every global step (one seeded order, split between the processes)
and start from the same weights; they differ only in which tokens get masked and which units
dropout drops (each process draws its own). So the loss curves agree up to that sampling noise:
the tolerances below are what that noise allows: the final held-out loss (fixed masks) within 0.1
nats, and the mean per-step training loss within 4 standard errors of the difference of two noisy
curves (each step's loss varies by about 0.3 nats with its masks and rows). Measured values are in
docs/results-log.md.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from tests.cli.test_pretrain import RAW, corpus  # noqa: F401 - the shared corpus fixture

ARGS = ["--max-length", "64", "--epochs", "2", "--quiet", "--from", str(RAW)]


@pytest.mark.extended  # two torchrun jobs: about 100 s each on 2 cores
def test_two_processes_match_one_process_with_twice_the_batch(tmp_path, corpus):  # noqa: F811
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    one = [
        sys.executable,
        "-m",
        "bertlens",
        "pretrain",
        *ARGS,
        "--texts",
        str(corpus),
        "--batch-size",
        "16",
        "--out",
        str(tmp_path / "one"),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    two = _torchrun(corpus, tmp_path / "two", tmp_path / "c", "--epochs", "2")
    for command in (one, two):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    a, b = (json.loads((tmp_path / d / "training.json").read_text()) for d in ("one", "two"))
    assert a["steps"] == b["steps"] and a["train_rows"] == b["train_rows"]
    assert a["heldout_loss_base"] == b["heldout_loss_base"]  # same start, same held-out slice and masks
    assert abs(a["heldout_loss_final"] - b["heldout_loss_final"]) < 0.1
    curve_a, curve_b = np.array(a["loss_curve"]), np.array(b["loss_curve"])
    assert abs(len(curve_a) - len(curve_b)) <= 1  # a step whose rows held nothing to mask logs no loss
    standard_error = np.sqrt(curve_a.var() / len(curve_a) + curve_b.var() / len(curve_b))
    assert abs(curve_a.mean() - curve_b.mean()) < 4 * standard_error  # the curves agree within their noise
    assert b["heldout_loss_final"] < b["heldout_loss_base"]  # the two-process run learns too


RESUMABLE = ("--epochs", "1", "--checkpoint-every", "3")


def _torchrun(texts, out, cache, *extra: str) -> list[str]:
    """`bertlens pretrain` under torchrun with 2 processes, rows of 64, batch 8 per process."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "bertlens",
        "pretrain",
        "--max-length",
        "64",
        "--quiet",
        "--from",
        str(RAW),
        "--texts",
        str(texts),
        "--batch-size",
        "8",
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
        *extra,
    ]


@pytest.mark.extended
def test_a_killed_two_process_run_resumes_to_the_uninterrupted_weights(tmp_path, corpus):  # noqa: F811
    """Each process draws its own masks and dropout: resuming restores each one's own RNG stream, not rank 0's."""
    from safetensors.torch import load_file

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    whole = subprocess.run(
        _torchrun(corpus, tmp_path / "whole", tmp_path / "c", *RESUMABLE),
        env=env,
        capture_output=True,
    )
    assert whole.returncode == 0, whole.stderr[-2000:]
    out = tmp_path / "killed"
    running = subprocess.Popen(
        _torchrun(corpus, out, tmp_path / "c", *RESUMABLE),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    state = out / "checkpoint" / "state.json"
    while running.poll() is None and not state.is_file():
        time.sleep(0.05)
    # mid-run, after the first checkpoint: every process dies at once (torchrun starts its workers in sessions of
    # their own, so the launcher's group is not enough: kill everything that runs on this output directory)
    os.killpg(running.pid, signal.SIGKILL)
    subprocess.run(["pkill", "-KILL", "-f", str(out)], check=False)
    running.wait()
    deadline = time.time() + 60
    while subprocess.run(["pgrep", "-f", str(out)], capture_output=True).returncode == 0:
        assert time.time() < deadline, "a killed rank is still running"
        time.sleep(0.05)
    assert state.is_file() and not (out / "training.json").exists()
    resumed = subprocess.run(_torchrun(corpus, out, tmp_path / "c", *RESUMABLE), env=env, capture_output=True)
    assert resumed.returncode == 0, resumed.stderr.decode()[-4000:]
    a, b = load_file(str(tmp_path / "whole" / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
