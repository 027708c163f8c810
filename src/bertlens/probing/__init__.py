"""Batched probes (logistic, ridge), dev splits and C selection, sweep candidates, layer-wise probing."""
