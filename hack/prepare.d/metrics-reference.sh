#!/usr/bin/env bash
# Recomputes the metric reference values with pytrec_eval (PyPI, pinned) so the parity test
# compares against the reference implementation run here, not only the committed copy.
# Prints KEY=VALUE lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/hack/metrics-reference/run.sh" "$root/.cache/metrics-reference/out" >&2
echo "RAGOPS_METRICS_REFERENCE=$root/.cache/metrics-reference/out/reference.tsv.gz"
