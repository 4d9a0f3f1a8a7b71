#!/usr/bin/env bash
# Set up and run the test suite (the slow and browser tests included).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The demo's browser test drives a real headless Chromium, and the report's PDF test runs
# pdflatex; Debian packages both. Installed only where missing, and only as root.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v pdflatex >/dev/null 2>&1 || missing+=(texlive-latex-base)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "note: ${missing[*]} missing and not installable here; the browser and PDF tests will be skipped" >&2
  fi
fi
python -m pytest -n 2 "$@"
