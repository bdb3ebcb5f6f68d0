"""indexer/: give me the crawl store, I build barrels, a lexicon and searchable segments."""
