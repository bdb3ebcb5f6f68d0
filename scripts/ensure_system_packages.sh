#!/usr/bin/env bash
# Debian packages the test suite needs: Chromium for the search page's end-to-end test.
# Installs only what is missing; needs root (CI and developer machines run as root).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "websift tests need Debian packages: ${need[*]} (run as root or install them)" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
