#!/usr/bin/env bash
# Side-by-side model server benchmark (one run): ragops serve against the Python reference
# server (hack/bench-serve/server.py: FastAPI + onnxruntime + HF tokenizers, the API of
# Weaviate's t2v-transformers-models app) on the same model folder, one inference thread each,
# SciFact test queries as Weaviate sends them (POST /vectors, task_type query), closed-loop
# clients at concurrency 1, 8 and 64. Prints a Markdown table; raw JSON lines on stderr.
#   hack/bench-serve/run.sh [seconds per cell=8] [rounds=1]
# With rounds > 1 every cell is measured that many times, interleaved, and the table shows
# medians. RAGOPS_BENCH_BASE=<git revision> also builds that revision's ragops (from git
# archive, in a temporary folder) and serves it beside the others, for a before/after in the
# same run.
# RAGOPS_BENCH_SERVE_VENV overrides where the reference's venv is made.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-8}
rounds=${2:-1}
data=${RAGOPS_DATASETS:-$root/../shared/datasets}
lib=$(hack/provision-onnxruntime.sh cpu | tail -n1)
model=${RAGOPS_BENCH_MODEL:-$(hack/export-model/export.sh | tail -n1)}
venv=${RAGOPS_BENCH_SERVE_VENV:-.cache/bench-serve/venv-fastapi-0.165.0-uvicorn-0.55.0-ort-1.24.3}
if [[ ! -x "$venv/bin/python" ]]; then
	rm -rf "$venv.tmp"
	python3 -m venv "$venv.tmp"
	"$venv.tmp/bin/pip" install --quiet --no-input fastapi==0.165.0 uvicorn==0.55.0 onnxruntime==1.24.3 tokenizers==0.22.1 numpy==2.4.6
	mv "$venv.tmp" "$venv"
fi
work=$(mktemp -d) # binaries go here, not into bin/ (which may hold shared tools)
pids=""
trap 'kill $pids 2>/dev/null; wait $pids 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/ragops" .
go build -o "$work/bench-serve" ./hack/bench-serve
base=()
if [[ -n "${RAGOPS_BENCH_BASE:-}" ]]; then
	mkdir "$work/base"
	git archive "$RAGOPS_BENCH_BASE" | tar -x -C "$work/base"
	(cd "$work/base" && go build -o "$work/ragops-base" .)
	rm -rf "$work/base"
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
goport=$(free_port)
pyport=$(free_port)
baseport=$(free_port)
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
"$work/ragops" serve --model-dir "$model" --onnxruntime-lib "$lib" --listen "127.0.0.1:$goport" --threads 1 2>/dev/null &
gopid=$!
"$venv/bin/python" hack/bench-serve/server.py --model-dir "$model" --port "$pyport" --threads 1 &
pypid=$!
pids="$gopid $pypid"
urls="http://127.0.0.1:$goport http://127.0.0.1:$pyport"
if [[ -x "$work/ragops-base" ]]; then
	"$work/ragops-base" serve --model-dir "$model" --onnxruntime-lib "$lib" --listen "127.0.0.1:$baseport" --threads 1 2>/dev/null &
	basepid=$!
	pids="$pids $basepid"
	urls="$urls http://127.0.0.1:$baseport"
	base=(-base-url "http://127.0.0.1:$baseport" -base-pid "$basepid" -base-name "ragops serve ($RAGOPS_BENCH_BASE)")
fi
for url in $urls; do
	for _ in $(seq 1 240); do
		[[ $(curl -s -o /dev/null -w '%{http_code}' "$url/.well-known/ready") == 204 ]] && break
		sleep 0.25
	done
done
echo "model $(basename "$model"), $(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d" " -f1-3 /proc/loadavg), $secs s per cell, $rounds round(s)" >&2
"$work/bench-serve" -go-url "http://127.0.0.1:$goport" -go-pid "$gopid" -py-url "http://127.0.0.1:$pyport" -py-pid "$pypid" \
	-scifact "$data/scifact" -duration "${secs}s" -rounds "$rounds" ${base[@]+"${base[@]}"}
