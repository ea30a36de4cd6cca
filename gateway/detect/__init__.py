"""Sans-IO detection: one elicitation in, findings out. No aiohttp imports here."""
