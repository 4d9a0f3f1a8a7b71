#!/usr/bin/env bash
# Set up and run the test suite (the slow and browser tests included).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The demo's browser test drives a real headless Chromium; Debian packages it.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "note: chromium/chromedriver not found and cannot be installed here; the browser test will be skipped" >&2
  fi
fi
python -m pytest -n 2 "$@"
