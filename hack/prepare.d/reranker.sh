#!/usr/bin/env bash
# Prepares the cross-encoder (reranker) tests' inputs (see embedder.LoadCrossEncoder): the
# ONNX Runtime CPU library and a cross-encoder model folder with reference scores of real
# SciFact pairs (seeded random weights: no package ships cross-encoder weights).
# Prints KEY=VALUE lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$("$root/hack/provision-onnxruntime.sh" cpu | tail -n1)
model=$("$root/hack/export-model/export.sh" --cross-encoder | tail -n1)
echo "RAGOPS_ONNXRUNTIME_LIB=$lib"
echo "RAGOPS_RERANK_MODEL_DIR=$model"
