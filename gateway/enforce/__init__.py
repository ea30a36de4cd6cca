"""Enforce (sans-IO): acting on decisions per carrier, sealed tokens, checks on answers."""
