"""Metrics with bootstrap intervals, and reports (JSON, Markdown, plots)."""
