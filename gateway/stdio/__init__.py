"""The stdio transport: the gateway between an MCP client and a server that speak
newline-delimited JSON-RPC on pipes (``elicitation-gateway stdio -- COMMAND``)."""
