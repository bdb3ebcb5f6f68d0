#!/usr/bin/env bash
# Debian packages the test suite needs: Chromium for the search page's end-to-end test, and the
# Python 3.11 manual (python3.11-doc) whose real pages the near-duplicate tests use.  Also
# nginx-light: scripts/benchmarks/crawl_scale.py serves its generated web of 300,000 pages with
# it, since a Python test server would be slower than the crawler it measures.  (Debian's package
# starts its own nginx service on port 80 where a service manager runs; the script does not use
# it and runs its own instance from its own config.)  And redis-server: the tests marked redis
# start their own on a loopback port (testkit/redis_server.py).  And aptitude's manual in four
# languages (aptitude-doc-*): tests/indexer/test_langid_fast.py identifies its real pages.
# Installs only what is missing; needs root (CI and developer machines run as root).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -d /usr/share/doc/python3.11/html ] || need+=(python3.11-doc)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
for lang in en fr cs ja; do
    [ -d "/usr/share/doc/aptitude/html/$lang" ] || need+=("aptitude-doc-$lang")
done
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "websift tests need Debian packages: ${need[*]} (run as root or install them)" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
