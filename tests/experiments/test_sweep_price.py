"""A model's price (experiments/sweep/price.py): the precision race picks the faster embedder, and a real model's
price is measured on the texts given, at a precision this machine keeps."""

import time

from bertlens.experiments.sweep.price import faster, measure_price, price_sample
from bertlens.representation.recipe import Recipe


class Sleepy:
    """An embedder whose encode takes `seconds` per text."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        time.sleep(self.seconds * len(texts))


def test_the_race_names_the_faster_embedder_whichever_comes_first():
    texts = [f"text {i}" for i in range(16)]
    assert faster({"fp32": Sleepy(2e-3), "bf16": Sleepy(2e-4)}, texts) == "bf16"
    assert faster({"fp32": Sleepy(2e-4), "bf16": Sleepy(2e-3)}, texts) == "fp32"


def test_one_precision_is_not_raced():
    alone = Sleepy(1e-3)
    assert faster({"fp32": alone}, ["a", "b"]) == "fp32" and alone.calls == 0


def test_a_models_price_is_timed_on_the_sample_it_is_given():
    texts = [f"sentence number {i} of the price sample" for i in range(40)]
    sample = price_sample(texts + texts[:5], seed=0, count=24)  # duplicates are drawn once
    assert len(sample) == 24 and len(set(sample)) == 24 and set(sample) <= set(texts)
    price = measure_price(Recipe(model="default"), sample)
    assert price.texts == 24 and price.texts_per_s > 0 and price.ms_one_text > 0
    assert price.precision in ("fp32", "bf16") and price.dim == 384 and price.bytes_per_vector == 1536
    assert price.disk_mb > 50 and price.weights_mb > 20 and "threads" in price.machine
