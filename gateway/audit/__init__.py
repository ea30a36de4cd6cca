"""Audit: the records of decisions and answers (sans-IO), and the JSON log lines they become."""
