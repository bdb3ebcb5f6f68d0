"""Benchmarks, evaluations and tools, run as modules from the repository root
(``python -m scripts.benchmarks.bench_index``); scripts/README.md lists them.  Not installed."""
