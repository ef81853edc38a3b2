#!/usr/bin/env bash
# Prepares the embedder tests' inputs (see package embedder): the ONNX Runtime CPU library
# and the all-MiniLM-L6-v2 model folder with its references. Prints KEY=VALUE lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$("$root/hack/provision-onnxruntime.sh" cpu | tail -n1)
model=$("$root/hack/export-model/export.sh" | tail -n1)
echo "RAGOPS_ONNXRUNTIME_LIB=$lib"
echo "RAGOPS_MODEL_DIR=$model"
