"""Quality, conformance and reliability: relevance against Whoosh and tantivy, ablations,
robots.txt conformance, the OPIC paper's experiments, fault injection (scripts/README.md)."""
