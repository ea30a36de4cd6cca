"""MCP elicitation gateway: a reverse proxy that enforces policy on elicitation requests."""

__version__ = "0.1.0"
