"""ranking/: give me the link graph, I compute importance (PageRank, topic PageRank, OPIC)."""
