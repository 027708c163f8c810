"""Leaf metrics anyone may use: paired bootstrap, t-intervals, CKA, geometry of vector spaces."""
