#!/usr/bin/env bash
# Computes the statistics reference values with scipy (PyPI, pinned) so the parity test of
# evaluator/stats compares against scipy.stats run here. Prints KEY=VALUE lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/hack/stats-reference/run.sh" "$root/.cache/stats-reference/out" >&2
echo "RAGOPS_STATS_REFERENCE=$root/.cache/stats-reference/out/reference.tsv"
