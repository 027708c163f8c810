"""Fine-tuning: ONE training loop; objectives and strategies as data; heads; checkpoints."""
