#!/usr/bin/env bash
# Set up and run the main job: the proof report, written to reports/.
set -euo pipefail
cd "$(dirname "$0")/.."

# A virtual environment with torch==2.13.0 installed first (the tested CPU build; any other
# torch request may download gigabytes of CUDA packages), then lnproofs and its extras.
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install --quiet --disable-pip-version-check torch==2.13.0
python -m pip install --quiet --disable-pip-version-check -e ".[torch,models,dev]"

lnproofs report "$@"
