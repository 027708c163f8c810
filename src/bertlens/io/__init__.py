"""Reading user files (with line-numbered errors) and writing results atomically."""
