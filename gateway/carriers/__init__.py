"""Carriers (sans-IO): every elicitation a message carries, and the modes a client declared."""
