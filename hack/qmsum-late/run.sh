#!/usr/bin/env bash
# Naive against late chunking per model and late window on QMSum's val meetings, in-process
# (hack/measure-legalnl: pipeline/build.Run and pipeline/evaluate.Run, the code of the Index
# and Evaluation Jobs) against a throwaway Weaviate (hack/weaviate.sh):
#
#   hack/qmsum-late/run.sh [MODEL ...]     # default: all-minilm-l6-v2 e5-small-v2 bge-small-en-v1.5 e5-small-v2-int8
#
# For each model folder in .cache/models (hack/prepare.d/models.sh): the four strategies of
# strategies.yaml (fixed-256 naive; late windows 128, 256, 512), dense and hybrid (RSF, the
# Evaluation default), recall@10 and nDCG@10 (meeting level) and SpanHit@1/3/10 (a retrieved
# chunk overlaps the query's annotated turns). Tables go to hack/qmsum-late/results/MODEL.md.
# The corpus is the 35 val meetings only (subset.py), so meeting-level recall is nearly 1 and
# SpanHit is the measure that separates pooling. Each model embeds ~2 M tokens: 15-45 min on
# 2 cores. RAGOPS_QMSUM_THREADS (default 2) sets ONNX Runtime's intra-op threads.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
data=${RAGOPS_DATASETS:-$root/../shared/datasets}
subset=.cache/qmsum-val
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(all-minilm-l6-v2 e5-small-v2 bge-small-en-v1.5 e5-small-v2-int8)

eval "$(bash hack/prepare.d/embedder.sh | grep '^RAGOPS_ONNXRUNTIME_LIB=' | sed 's/^/export /')"
[[ -f "$subset/corpus.jsonl" ]] || python3 hack/qmsum-late/subset.py "$data/qmsum" "$subset"
hack/weaviate.sh status | grep -q running || hack/weaviate.sh start >/dev/null
eval "$(hack/weaviate.sh env | sed 's/^/export /')"
mkdir -p hack/qmsum-late/results
for m in "${models[@]}"; do
	out=hack/qmsum-late/results/$m.md
	echo "== $m -> $out"
	{
		echo "# QMSum val meetings (35, 237 specific queries), $m, $(date -u +%Y-%m-%d)"
		echo
		echo "Command: hack/qmsum-late/run.sh $m"
		echo
		go run ./hack/measure-legalnl -data "$subset" -samples hack/qmsum-late/strategies.yaml \
			-modes dense,hybrid-rsf -k 1,3,10 -threads "${RAGOPS_QMSUM_THREADS:-2}" -model ".cache/models/$m" \
			-weaviate "http://$RAGOPS_WEAVIATE_HTTP_HOST" -grpc "$RAGOPS_WEAVIATE_GRPC_HOST" \
			-collection-prefix "Qmsum_$(echo "$m" | tr -c 'a-zA-Z0-9\n' _)"
	} >"$out.tmp"
	mv "$out.tmp" "$out"
	cat "$out"
done
