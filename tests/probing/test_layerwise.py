"""Layer-wise probes: the right layer wins, the ScalarMix finds it, and probes agree with scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from bertlens.probing.layerwise import LayerFeatures, centre_of_gravity, probe_layers


def synthetic(seed: int = 0, informative: int = 2, layers: int = 4, n: int = 900, width: int = 8):
    """Labels (3 classes) readable linearly from one layer only; the other layers are noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(layers, n, width)).astype(np.float32)  # [L+1, n, H]
    direction = rng.normal(size=(width, 3))
    y = (x[informative] @ direction + 0.3 * rng.normal(size=(n, 3))).argmax(axis=1)
    cut = (n * 2 // 3, n * 5 // 6)
    feats = LayerFeatures.from_splits(x[:, : cut[0]], x[:, cut[0] : cut[1]], x[:, cut[1] :])
    return feats, y[: cut[0]], y[cut[0] : cut[1]], y[cut[1] :]


def test_centre_of_gravity_is_the_expected_layer():
    assert centre_of_gravity(np.array([0.0, 0.0, 1.0])) == pytest.approx(2.0)
    assert centre_of_gravity(np.array([0.5, 0.0, 0.5])) == pytest.approx(1.0)


def test_informative_layer_is_found_by_probes_and_by_the_mix():
    features, y_train, y_dev, y_test = synthetic()
    result = probe_layers(features, y_train, y_dev, y_test, resamples=200)
    assert result.best_layer == 2
    assert result.accuracy[2] > 0.85 and max(result.accuracy[k] for k in (0, 1, 3)) < 0.55
    assert int(np.argmax(result.mix_weights)) == 2 and result.mix_weights[2] > 0.8
    assert abs(result.centre_of_gravity - 2) < 0.3
    assert result.mix_accuracy > 0.8
    assert all(lo <= acc <= hi for lo, acc, hi in zip(result.low, result.accuracy, result.high))


def test_layer_probes_match_scikit_learn_at_the_chosen_strength():
    features, y_train, y_dev, y_test = synthetic(seed=3)
    result = probe_layers(features, y_train, y_dev, y_test, resamples=100)
    for layer in range(4):
        scaler = StandardScaler().fit(features.train[layer])
        reference = LogisticRegression(C=result.strength[layer], max_iter=2000).fit(
            scaler.transform(features.train[layer]), y_train
        )
        expected = (reference.predict(scaler.transform(features.test[layer])) == y_test).mean()
        assert result.accuracy[layer] == pytest.approx(expected, abs=0.02), layer


def test_control_task_and_selectivity():
    features, y_train, y_dev, y_test = synthetic(seed=1)
    rng = np.random.default_rng(5)
    control = (rng.integers(0, 3, len(y_train)), rng.integers(0, 3, len(y_test)))  # labels no feature predicts
    result = probe_layers(features, y_train, y_dev, y_test, resamples=100, control=control)
    assert max(result.control_accuracy) < 0.5
    assert result.selectivity[2] == pytest.approx(result.accuracy[2] - result.control_accuracy[2])
    assert int(np.argmax(result.selectivity)) == 2


def test_grouped_results_are_reproducible():
    features, y_train, y_dev, y_test = synthetic(seed=2)
    groups = np.arange(len(y_test)) // 5
    a = probe_layers(features, y_train, y_dev, y_test, resamples=100, test_groups=groups, seed=4)
    b = probe_layers(features, y_train, y_dev, y_test, resamples=100, test_groups=groups, seed=4)
    assert a == b


def test_features_keep_splits_in_order_with_a_scratch_slot():
    train, dev, test = (np.full((3, n, 2), v, dtype=np.float32) for n, v in ((4, 1.0), (2, 2.0), (3, 3.0)))
    features = LayerFeatures.from_splits(train, dev, test)
    assert features.stacked.shape == (4, 9, 2) and features.num_layers == 2
    assert np.all(features.train == 1.0) and np.all(features.test == 3.0)
    assert np.all(features.stacked[-1] == 0.0)  # the ScalarMix slot, filled by probe_layers


def test_selectivity_matches_a_hand_computed_case():
    """Six word types, two layers. Layer 0 knows the word type; layer 1 knows only the real label.

    Real label = type % 2; control label (Hewitt & Liang: a label per type, at random) = CONTROL[type].
    Layer 0 can memorise any per-type labelling: task 100%, control 100%, selectivity 0.
    Layer 1 sees the real label only; the best control guess per real label is right for 2 of its
    3 types, so control accuracy is exactly 2/3 on balanced data and selectivity 1/3.
    """
    control_of = np.array([0, 0, 1, 1, 0, 1])  # types with label 0 -> (0, 1, 0); label 1 -> (0, 1, 1)

    def split(per_type: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        types = np.repeat(np.arange(6), per_type)
        layer0 = np.eye(6, dtype=np.float32)[types]  # exact features: the hand computation holds exactly
        layer1 = np.zeros((len(types), 6), dtype=np.float32)
        layer1[np.arange(len(types)), types % 2] = 1.0
        return np.stack([layer0, layer1]), types % 2, control_of[types], types

    (train, y_train, c_train, _), (dev, y_dev, _, _), (test, y_test, c_test, _) = split(40), split(10), split(30)
    result = probe_layers(
        LayerFeatures.from_splits(train, dev, test), y_train, y_dev, y_test, resamples=50, control=(c_train, c_test)
    )
    assert result.accuracy == pytest.approx([1.0, 1.0])
    assert result.control_accuracy == pytest.approx([1.0, 2 / 3])
    assert result.selectivity == pytest.approx([0.0, 1 / 3])
