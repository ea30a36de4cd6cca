"""Differential tests: hostile upstream responses through the real gateway to real SDK readers."""
