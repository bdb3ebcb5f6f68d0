"""api/: give me an index and ranks, I answer people and programs (HTTP, CLI, web page)."""
