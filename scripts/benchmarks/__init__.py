"""Speed and memory against a peer measured in the same run (scripts/README.md)."""
