"""Wire (sans-IO): JSON-RPC and SSE framing, protocol eras, how clients read a response."""
