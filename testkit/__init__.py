"""What the tests and the scripts share: loopback test webs (``testweb``, ``hostileweb``), the
generated power-law web (``genweb``), a data directory stored as if fetched (``corpus``), a
Redis server (``redis_server``), waiting on a condition (``waiting``), the ``websift`` command
as a child process (``websift_process``) and the development set harness (``devset``).

Imported from the repository root (``pytest``'s ``pythonpath``, ``python -m scripts...``);
not part of the wheel (pyproject.toml installs only ``websift*``).
"""
