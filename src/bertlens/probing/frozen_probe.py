"""One frozen probe's (dev, test) score on given train / dev / test vectors, by the kind's target: what a comparison
of frozen vectors against fine-tuning (compare, recommend's fine-tuning step) scores the frozen side with.

Class labels: L2 logistic regression, C chosen on dev. A number per text: ridge on standardised vectors, the
strength (relative to the training rows) chosen on dev Spearman. Label sets: one-vs-rest logistic regression, C and
each label's threshold chosen on dev (micro-F1). The sweep's probes and grids, on one split.
"""

from __future__ import annotations

import numpy as np
import torch

from bertlens.metrics.bootstrap import micro_f1, spearman
from bertlens.probing.fold_ridge import REGRESSION_ALPHAS, ridge_over_folds, spearman_choice
from bertlens.probing.label_set_probe import label_set_probe
from bertlens.probing.selection import C_GRID, logistic_on_dev
from bertlens.tasks.kinds import TaskKind
from bertlens.tasks.splits import Fold


def frozen_probe_score(kind: TaskKind, train_x, train_y, dev_x, dev_y, test_x, test_y) -> tuple[float, float]:
    """(dev, test) score in the kind's metric of the kind's probe, fitted on train and chosen on dev."""
    features = torch.from_numpy(np.concatenate([train_x, dev_x, test_x])[None].astype(np.float32))  # [1, n_all, D]
    if kind.classes:
        selected = logistic_on_dev(features, len(train_x), len(dev_x), train_y, dev_y, C_GRID)
        return float(selected.dev_accuracy[0]), float((selected.predictions[0] == test_y).mean())
    targets = np.concatenate([train_y, dev_y, test_y])
    starts = np.cumsum([0, len(train_x), len(dev_x), len(test_x)])
    fold = Fold(*(np.arange(starts[i], starts[i + 1]) for i in range(3)))
    if kind.label_sets:
        source = lambda ids, rows, k: features.clone() if rows is None else features[:, rows]  # noqa: E731
        scores, _ = label_set_probe(source, [features.shape[-1]], set(), [fold], targets, always=(0,))
        return float(scores.per_fold[0, 0]), float(micro_f1(scores.predictions, test_y)[0])
    dev_rho = {}

    def choose(dev: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        chosen, dev_rho["chosen"] = spearman_choice(dev, targets[rows])
        return chosen

    (out,) = ridge_over_folds(features.clone(), targets, [fold], REGRESSION_ALPHAS, choose, relative=True)
    return float(dev_rho["chosen"][0]), float(spearman(out.test[0, :, 0].numpy(), test_y))
