"""The bundled demo upstream: a dual-era MCP server written with the official SDK.

Run it with ``python -m gateway.demo.upstream --port N``. It backs ``make run``/the product demo
and the end-to-end tests (tests/e2e), which compare a direct client with one behind the gateway.
"""
