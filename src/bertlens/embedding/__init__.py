"""Texts -> vectors for a Recipe: the Embedder, long-text encoding, and the resumable embed job."""
