"""Candidates, batched probes and the sweep that scores them all from one feature bank."""
