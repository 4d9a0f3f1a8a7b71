# Sourced by main.sh and test.sh: make .venv and install lnproofs into it.
# torch==2.13.0 goes first so that no other torch build (with gigabytes of CUDA) is fetched.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --disable-pip-version-check torch==2.13.0
python -m pip install --quiet --disable-pip-version-check -e ".[torch,models,dev]"
