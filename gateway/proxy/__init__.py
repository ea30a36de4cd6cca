"""Proxy: the only package that does I/O (sockets, the event loop, processes, signals).

The relay and its upstream client, client connection limits, the app wiring, ``serve`` and its
worker processes, policy reload, metrics, the allocator, and the server settings.
"""
