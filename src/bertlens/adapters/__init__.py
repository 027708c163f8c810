"""Recipes inside other people's stacks: a scikit-learn transformer (and, later, an MTEB encoder)."""
