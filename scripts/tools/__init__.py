"""Tools that make the development data (scripts/README.md)."""
