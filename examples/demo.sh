#!/usr/bin/env bash
# make demo: what devkit can show today, for real, in under a minute.
# Usage: examples/demo.sh BIN   (BIN is the devkit binary `make build` made)
set -euo pipefail
bin=${1:-bin/devkit}
cd "$(dirname "$0")/.."

section() { printf '\n== %s\n' "$*"; }

section "devkit version"
"$bin" version

section "The KV engine under kill -9 (examples/kvembed)"
echo "A child process writes under the strict sync policy and is killed with SIGKILL mid-write;"
echo "the parent reopens the data directory and checks every write the child saw acknowledged."
go run ./examples/kvembed -writers 16 -kill-after 500ms

section "Done"
echo "Every step above checked what it printed; this script exits non-zero if one did not."
