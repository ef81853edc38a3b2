#!/usr/bin/env bash
# fp16.sh PYTHON MODEL_DIR SCIFACT_CORPUS: writes MODEL_DIR/model.fp16.onnx with fp16.py (fused,
# half precision, checked against fp32), unless its stamp (fp16.py and the fp32 model.onnx's
# sha256) is current. PYTHON is a venv with requirements.txt (onnx, onnxruntime, tokenizers).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py=$1 dir=$2 corpus=$3
want="$(cat "$here/fp16.py" "$dir/model.onnx" | sha256sum | cut -d' ' -f1)"
if [[ -f "$dir/model.fp16.onnx" && "$(cat "$dir/.fp16.sha256" 2>/dev/null)" == "$want" ]] && grep -q '"precisions"' "$dir/ragops.json"; then
	exit 0
fi
"$py" "$here/fp16.py" --dir "$dir" --scifact "$corpus" >&2
echo "$want" > "$dir/.fp16.sha256"
