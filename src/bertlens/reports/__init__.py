"""One report module per command: the same rows rendered as JSON, Markdown and plots."""
