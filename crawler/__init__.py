"""crawler/: give me seed URLs, I fetch pages politely and fill the crawl store."""
