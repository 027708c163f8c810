"""Step 4 of recommend reports what its fine-tuning runs did, not what they were configured to do."""

from bertlens.experiments.compare import RunResult
from bertlens.training.config import TrainConfig
from bertlens.workflows.fine_tune_step import epochs_run


def test_the_evidence_names_the_epochs_run_against_the_schedules_most():
    train = TrainConfig(epochs=4, min_steps=100, batch_size=16)
    runs = [
        RunResult("full", 64, 1, 0.8, 0.8, 10.0, epochs=9),
        RunResult("full", 64, 0, 0.8, 0.8, 10.0, epochs=7),
        RunResult("frozen", 64, 0, 0.7, 0.7, 1.0, epochs=0),
        RunResult("full", 16, 0, 0.6, 0.6, 5.0, epochs=20),
    ]
    # 64 examples at batch 16: 4 steps an epoch, so min_steps 100 allows up to 25 epochs; early stopping ended sooner
    assert epochs_run(runs, 64, train) == "7 and 9 epochs of at most 25"
    assert epochs_run(runs[:2], 64, TrainConfig(epochs=4, min_steps=0, batch_size=16)) == "7 and 9 epochs of at most 4"
