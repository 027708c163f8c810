"""Thin command-line layer: parse arguments, call the library, write output."""
