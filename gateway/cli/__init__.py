"""Command line: ``elicitation-gateway`` (main) and the no-network commands ``check`` and
``validate-policy`` (check). ``serve`` itself lives in ``gateway.proxy.serve``."""
