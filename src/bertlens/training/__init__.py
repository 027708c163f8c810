"""Fine-tuning: strategies as data over one training loop, heads, checkpoints, learning curves."""
