"""The scripts' own tests (run by ``pytest`` with the rest: pyproject's testpaths), so a
benchmark or an evaluation cannot rot unnoticed; tests/ never imports scripts."""
