#!/usr/bin/env bash
# Side-by-side model server benchmark (one run): ragops serve against the Python reference
# server (hack/bench-serve/server.py: FastAPI + onnxruntime + HF tokenizers, the API of
# Weaviate's t2v-transformers-models app) on the same model folder, one inference thread each,
# SciFact test queries as Weaviate sends them (POST /vectors, task_type query), closed-loop
# clients at concurrency 1, 8 and 64. Prints a Markdown table; raw JSON lines on stderr.
#   hack/bench-serve/run.sh [seconds per cell=8]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-8}
data=${RAGOPS_DATASETS:-$root/../shared/datasets}
lib=$(hack/provision-onnxruntime.sh cpu | tail -n1)
model=${RAGOPS_BENCH_MODEL:-$(hack/export-model/export.sh | tail -n1)}
venv=.cache/bench-serve/venv-fastapi-0.165.0-uvicorn-0.55.0-ort-1.24.3
if [[ ! -x "$venv/bin/python" ]]; then
	rm -rf "$venv.tmp"
	python3 -m venv "$venv.tmp"
	"$venv.tmp/bin/pip" install --quiet --no-input fastapi==0.165.0 uvicorn==0.55.0 onnxruntime==1.24.3 tokenizers==0.22.1 numpy==2.4.6
	mv "$venv.tmp" "$venv"
fi
mkdir -p bin
go build -o bin/ragops .
go build -o bin/bench-serve ./hack/bench-serve
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
goport=$(free_port)
pyport=$(free_port)
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
bin/ragops serve --model-dir "$model" --onnxruntime-lib "$lib" --listen "127.0.0.1:$goport" --threads 1 2>/dev/null &
gopid=$!
"$venv/bin/python" hack/bench-serve/server.py --model-dir "$model" --port "$pyport" --threads 1 &
pypid=$!
trap 'kill $gopid $pypid 2>/dev/null; wait $gopid $pypid 2>/dev/null || true' EXIT
for url in "http://127.0.0.1:$goport" "http://127.0.0.1:$pyport"; do
	for _ in $(seq 1 240); do
		[[ $(curl -s -o /dev/null -w '%{http_code}' "$url/.well-known/ready") == 204 ]] && break
		sleep 0.25
	done
done
echo "model $(basename "$model"), $(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d" " -f1-3 /proc/loadavg), $secs s per cell" >&2
bin/bench-serve -go-url "http://127.0.0.1:$goport" -go-pid "$gopid" -py-url "http://127.0.0.1:$pyport" -py-pid "$pypid" \
	-scifact "$data/scifact" -duration "${secs}s"
