#!/usr/bin/env bash
# Access query endpoint benchmark (issue 52, "Measured"): builds hack/bench-endpoint and runs it
# at nice 10 with its own throwaway Weaviate and model server over a SciFact subset; prints
# Markdown tables for BENCHMARKS.md "Query endpoint (issue 52)". Needs RAGOPS_WEAVIATE_BIN,
# RAGOPS_MODEL_DIR (all-MiniLM-L6-v2), RAGOPS_ONNXRUNTIME_LIB and RAGOPS_DATASETS (SciFact),
# as set for the tests (e.g. source /work/testenv.sh). Flags pass through (-docs, -requests).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
go build -o "${TMPDIR:-/tmp}/bench-endpoint" ./hack/bench-endpoint
echo "[bench-endpoint] $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
nice -n 10 "${TMPDIR:-/tmp}/bench-endpoint" "$@"
echo "[bench-endpoint] load $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2
