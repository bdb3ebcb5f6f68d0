"""``python -m websift``: the ``websift`` command."""

from websift.api.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
