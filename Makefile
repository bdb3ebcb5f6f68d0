# make run: the whole engine on the built-in default corpus, at http://127.0.0.1:8000
# make test: the whole test suite; make test-quick: all but the tests marked slow (a few minutes).
# All set up .venv themselves; a second run reuses it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.websift-installed

.PHONY: run test test-quick lint bench-crawl clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/websift demo

test: $(STAMP)
	bash scripts/ensure_system_packages.sh
	$(BIN)/python -m pytest -q

test-quick: $(STAMP)
	bash scripts/ensure_system_packages.sh
	$(BIN)/python -m pytest -q -m "not slow"

# make lint: ruff, mypy (strict) and the package-layer contracts; CI runs it before the tests.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# make bench-crawl: websift against a Scrapy CrawlSpider and wget on the Python manual
# (scripts/README.md lists every benchmark)
bench-crawl: $(STAMP)
	bash scripts/ensure_system_packages.sh
	$(BIN)/python -m scripts.benchmarks.bench_crawl

clean:
	rm -rf $(VENV) websift-data
