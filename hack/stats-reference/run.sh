#!/usr/bin/env bash
# Computes the reference values of the Go statistics parity test (evaluator/stats) with
# scipy.stats.bootstrap and scipy.stats.permutation_test, in a venv under .cache/ (created on
# first use, pinned versions), on the per-query results of two real SciFact runs
# (evaluator/results/testdata).
#
#   hack/stats-reference/run.sh [OUT_DIR]     # default .cache/stats-reference/out
#
# Then: RAGOPS_STATS_REFERENCE=OUT_DIR/reference.tsv go test ./evaluator/stats/ -run Parity
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/.cache/stats-reference/out}"
venv="$root/.cache/stats-reference/venv-scipy-1.17.1"
python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
  rm -rf "$venv.tmp"
  "$python" -m venv "$venv.tmp"
  "$venv.tmp/bin/pip" install --quiet --no-input numpy==2.4.6 scipy==1.17.1
  mv "$venv.tmp" "$venv"
fi
mkdir -p "$out"
td="$root/evaluator/results/testdata"
"$venv/bin/python" "$root/hack/stats-reference/reference.py" "$out/reference.tsv.tmp" \
  "$td/scifact-bm25-w48.json.gz" "$td/scifact-bm25-w200.json.gz" \
  ndcg@10,recall@10,mrr@10 300,35,12nz
mv "$out/reference.tsv.tmp" "$out/reference.tsv"
echo "wrote $out/reference.tsv ($(grep -vc '^#' "$out/reference.tsv") values)"
