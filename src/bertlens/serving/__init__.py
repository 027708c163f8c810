"""Serving a recipe over HTTP: OpenAI-compatible and TEI-style endpoints with dynamic batching."""
