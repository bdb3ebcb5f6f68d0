"""One router per resource: search, pages, topics, recrawl, stats (JSON) and web (HTML for people)."""
