"""The commands as Python functions over typed options: what the command line and a notebook both run.

A command here is an options dataclass (its fields are the command line's long flags, by name), its checks, and a
function that runs it and returns a result object. `cli/` parses flags into these options and prints; Python callers
use them directly (`bertlens.sweep(task="stsb", max_examples=300)`).
"""
