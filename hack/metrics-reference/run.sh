#!/usr/bin/env bash
# Computes the reference metric values of the Go parity test (evaluator/metrics) with
# pytrec_eval, in a venv under .cache/ (created on first use, pinned versions).
#
#   hack/metrics-reference/run.sh [OUT_DIR]     # default .cache/metrics-reference/out
#
# Then: RAGOPS_METRICS_REFERENCE=OUT_DIR/reference.tsv.gz go test ./evaluator/metrics/
# The committed evaluator/metrics/testdata/reference.tsv.gz is this script's output; the test
# reads it when RAGOPS_METRICS_REFERENCE is unset. To regenerate the runs themselves:
#   go run ./hack/metrics-reference/makefixture -scifact ../shared/datasets/scifact -out evaluator/metrics/testdata
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/.cache/metrics-reference/out}"
venv="$root/.cache/metrics-reference/venv-pytrec-eval-terrier-0.5.11"
python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
  rm -rf "$venv.tmp"
  "$python" -m venv "$venv.tmp"
  "$venv.tmp/bin/pip" install --quiet --no-input pytrec-eval-terrier==0.5.11 numpy==2.4.6 scipy==1.17.1
  mv "$venv.tmp" "$venv"
fi
mkdir -p "$out"
td="$root/evaluator/metrics/testdata"
"$venv/bin/python" "$root/hack/metrics-reference/reference.py" 1,3,5,10,100 "$out/reference.tsv.gz" \
  "$td/scifact-bm25.run.gz" "$td/scifact-test.qrels" \
  "$td/graded.run" "$td/graded.qrels"
echo "wrote $out/reference.tsv.gz ($(gzip -dc "$out/reference.tsv.gz" | wc -l) values)"
