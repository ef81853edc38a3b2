#!/usr/bin/env bash
# Side-by-side embedder benchmark (one run): Go (package embedder) vs Python onnxruntime +
# HF tokenizers on the same model.onnx, the same SciFact documents and chunk spans, one
# intra-op thread each, alternating rounds; then the Go late-chunking memory run on a
# ~12,000-word QMSum meeting. Prints a Markdown table; raw JSON lines in .cache/bench-embedder/.
#   hack/bench-embedder/run.sh [docs=300] [rounds=2]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
docs=${1:-300}
rounds=${2:-2}
budget=${RAGOPS_BENCH_BATCH_TOKENS:-4096}
data=${RAGOPS_DATASETS:-$root/../shared/datasets}
lib=$(hack/provision-onnxruntime.sh cpu | tail -n1)
model=$(hack/export-model/export.sh | tail -n1)
py=.cache/export-model/venv/bin/python
out=.cache/bench-embedder
mkdir -p "$out" bin
go build -o bin/bench-embedder ./hack/bench-embedder
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
: > "$out/results.jsonl"
for r in $(seq 1 "$rounds"); do
	echo "round $r: go" >&2
	bin/bench-embedder -model "$model" -onnxruntime-lib "$lib" -datasets "$data" -docs "$docs" \
		-batch-tokens "$budget" -spans "$out/spans.jsonl" -vectors-out "$out/go-naive.f32" >> "$out/results.jsonl"
	echo "round $r: python" >&2
	"$py" hack/bench-embedder/peer.py --model "$model" --spans "$out/spans.jsonl" \
		--batch-tokens "$budget" --go-vectors "$out/go-naive.f32" >> "$out/results.jsonl"
done
echo "memory run" >&2
bin/bench-embedder -memory -batch-tokens "$budget" -model "$model" -onnxruntime-lib "$lib" -datasets "$data" > "$out/memory.jsonl"
"$py" - "$out/results.jsonl" "$out/memory.jsonl" "$docs" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
best = {}
for r in rows:
    k = (r["impl"], r["phase"])
    if k not in best or r["tokensPerCpuS"] > best[k]["tokensPerCpuS"]:
        best[k] = r
print(f"SciFact, first {sys.argv[3]} documents, Recursive chunks of <= 128 tokens; 1 intra-op thread; best of {sum(1 for r in rows if r['impl'] == 'python' and r['phase'] == 'naive')} rounds by CPU time")
print()
print("| implementation | phase | tokens | wall s | CPU s | tokens/s | tokens per CPU-s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for k in sorted(best, key=lambda k: (k[1], k[0])):
    r = best[k]
    print(f"| {k[0]} | {k[1]} | {r['tokens']} | {r['wallS']:.1f} | {r['cpuS']:.1f} | {r['tokensPerS']:.0f} | {r['tokensPerCpuS']:.0f} |")
g, p = best.get(("go", "naive")), best.get(("python", "naive"))
print()
for ph in ("naive", "late", "whole-docs"):
    g, p = best.get(("go", ph)), best.get(("python", ph))
    if g and p:
        print(f"- {ph}: Go / Python = {g['tokensPerCpuS']/p['tokensPerCpuS']:.2f}x per CPU-s, {g['tokensPerS']/p['tokensPerS']:.2f}x per wall-s")
    f = best.get(("go", ph + "-fixed32"))
    if g and f:
        print(f"- {ph}: sorted token-budget batches / fixed-order batches of 32 = {g['tokensPerCpuS']/f['tokensPerCpuS']:.2f}x per CPU-s (padded work avoided)")
cos = [r["minCosineVsGo"] for r in rows if "minCosineVsGo" in r]
if cos:
    print(f"- Go vs Python naive vectors: min cosine {min(cos):.6f}")
m = json.loads(open(sys.argv[2]).read())
print(f"- Late chunking memory: {m['note']}; peak RSS {m['peakRssMiB']:.0f} MiB; {m['tokens']} tokens in {m['wallS']:.1f} s wall, {m['cpuS']:.1f} CPU-s")
PY
