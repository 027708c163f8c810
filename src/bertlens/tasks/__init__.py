"""Tasks as declarative data, plus loaders for the shared data directory and user files."""
