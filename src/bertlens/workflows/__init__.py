"""Commands that compose other commands' experiments: `recommend` runs several of them within one budget.

A layer above experiments/, whose modules do not import each other."""
