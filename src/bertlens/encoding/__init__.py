"""Tokenize, batch by length and run one forward pass that keeps every layer."""
