#!/usr/bin/env bash
# Set up and run the main job: the proof report, written to reports/.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
lnproofs report "$@"
