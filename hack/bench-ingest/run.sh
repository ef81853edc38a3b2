#!/usr/bin/env bash
# End-to-end ingestion benchmark (issue 33): ragops's build (`ragops embed`, the same plan the
# operator's Job runs, in its own process) against a LlamaIndex IngestionPipeline and a
# LangChain splitter + WeaviateVectorStore script (hack/bench-ingest/peers.py, pinned in
# requirements.txt), on the same BEIR corpus, the same model folder (model.onnx, tokenizer),
# the same chunk size and overlap in the model's tokens, one ONNX Runtime thread each, into
# the same throwaway Weaviate, one fresh collection per run. Each run is timed (wall, CPU and
# peak RSS of the process from wait4, Weaviate's CPU from /proc), its collection's object
# count checked against the chunks it reported, evaluated on the data set's queries (dense
# recall@10 and nDCG@10, ragops's evaluator and query encoder) and deleted. Rounds alternate
# the order (ABC, CBA, ABC, ...). Prints the medians and the ratios ragops / peer; with
# --write, puts them into BENCHMARKS.md between the bench-ingest markers.
#
#   hack/bench-ingest/run.sh [flags]
#     --rounds N          rounds (default 3: each implementation runs N times; medians)
#     --full              the whole corpus (default: every judged document and the first
#                         --others others, in corpus order)
#     --others N          unjudged documents kept (default 1000)
#     --dataset NAME      scifact (default, split test) or qmsum (split val; keeps the judged
#                         meetings only unless --full)
#     --model NAME|DIR    all-minilm-l6-v2 (default), e5-small-v2 (hack/prepare.d/models.sh;
#                         its passage:/query: prefixes come from ragops.json) or a model folder
#     --size N --overlap N  chunk size and overlap in tokens (default 128, 16)
#     --batch N           the peers' embedding batch in chunks (default 32)
#     --impls LIST        comma-separated subset of ragops,llamaindex,langchain
#     --first-round N     number the rounds from N (its order follows: even rounds reversed)
#                         and append to results.jsonl: more rounds for an earlier run
#     --write             update BENCHMARKS.md's "End-to-end ingestion" table
# RAGOPS_DATASETS points at the folder holding scifact/ and qmsum/ (default ../shared/datasets).
# Raw results: .cache/bench-ingest/results.jsonl. Runs at nice 10 (a shared machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rounds=3 others=1000 dataset=scifact model=all-minilm-l6-v2 size=128 overlap=16 batch=32
impls=ragops,llamaindex,langchain write=0 full=0 first=1
while (($#)); do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--full) full=1 ;;
	--others) others=$2; shift ;;
	--dataset) dataset=$2; shift ;;
	--model) model=$2; shift ;;
	--size) size=$2; shift ;;
	--overlap) overlap=$2; shift ;;
	--batch) batch=$2; shift ;;
	--impls) impls=$2; shift ;;
	--write) write=1 ;;
	--first-round) first=$2; shift ;;
	*) echo "unknown flag $1 (see the header of $0)" >&2; exit 2 ;;
	esac
	shift
done
case $dataset in
scifact) split=test ;;
qmsum) split=val; ((full)) || others=0 ;;
*) echo "--dataset scifact or qmsum" >&2; exit 2 ;;
esac
((full)) && others=-1
cache=.cache/bench-ingest
datasets=${RAGOPS_DATASETS:-$root/../shared/datasets}
mkdir -p "$cache" bin

# Pinned peers (the whole freeze, --no-deps), cached by the requirements file's hash.
stamp=$(sha256sum hack/bench-ingest/requirements.txt | cut -d' ' -f1)
if [[ "$(cat "$cache/venv/.pinned" 2>/dev/null)" != "$stamp" ]]; then
	rm -rf "$cache/venv"
	python3 -m venv "$cache/venv"
	"$cache/venv/bin/pip" install --quiet --no-deps -r hack/bench-ingest/requirements.txt
	echo "$stamp" >"$cache/venv/.pinned"
fi
lib=$(hack/provision-onnxruntime.sh cpu | tail -n1)
case $model in
all-minilm-l6-v2) modeldir=$(hack/export-model/export.sh | tail -n1) ;;
e5-small-v2) modeldir=$(hack/prepare.d/models.sh | sed -n 's/^RAGOPS_E5_SMALL_DIR=//p') ;;
*) modeldir=$model ;;
esac
[[ -f "$modeldir/ragops.json" ]] || { echo "no model folder at $modeldir" >&2; exit 1; }
modeldir=$(cd "$modeldir" && pwd)

go build -o "$cache/bench-ingest" ./hack/bench-ingest
go build -o "$cache/ragops" .
data=$root/$cache/data-$dataset-$others-$(basename "$modeldir")
"$cache/bench-ingest" prepare -dataset "$datasets/$dataset" -out "$data" -others "$others" -split "$split" \
	-model "$modeldir" -onnxruntime-lib "$lib"

# A throwaway Weaviate of our own; LlamaIndex and LangChain write their metadata through
# auto-schema.
export RAGOPS_WEAVIATE_STATE=$root/$cache/weaviate RAGOPS_WEAVIATE_AUTOSCHEMA=true
hack/weaviate.sh start >/dev/null
trap 'hack/weaviate.sh stop' EXIT
eval "$(hack/weaviate.sh env)"
wpid=$(cat "$RAGOPS_WEAVIATE_STATE/node1.pid")

# The same threads everywhere: one ONNX Runtime intra-op thread (plan and peers), no
# tokenizer or BLAS thread pools.
export OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
IFS=, read -r -a order <<<"$impls"
((first > 1)) || : >"$cache/results.jsonl"
for r in $(seq "$first" $((first + rounds - 1))); do
	seq=("${order[@]}")
	if ((r % 2 == 0)); then
		seq=()
		for ((i = ${#order[@]} - 1; i >= 0; i--)); do seq+=("${order[i]}"); done
	fi
	for impl in "${seq[@]}"; do
		echo "[bench-ingest $(date +%H:%M:%S)] round $r: $impl" >&2
		nice -n 10 "$cache/bench-ingest" run -impl "$impl" -round "$r" -data "$data" -split "$split" -model "$modeldir" \
			-onnxruntime-lib "$lib" -ragops "$cache/ragops" -python "$cache/venv/bin/python" \
			-http "$RAGOPS_WEAVIATE_HTTP_HOST" -grpc "$RAGOPS_WEAVIATE_GRPC_HOST" -weaviate-pid "$wpid" \
			-size "$size" -overlap "$overlap" -batch "$batch" -work "$cache" >>"$cache/results.jsonl"
		tail -n1 "$cache/results.jsonl" >&2
	done
done
machine="$(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/{print $2}') GiB"
args=(-results "$cache/results.jsonl" -meta "$data/meta.json" -machine "$machine"
	-setup "Recursive chunks of $size tokens with $overlap overlap (LlamaIndex SentenceSplitter, LangChain RecursiveCharacterTextSplitter with the model's tokenizer as length function), peers embed batches of $batch chunks; one ONNX Runtime thread each; medians over the runs, rounds in alternating order (ABC, CBA, ...).")
((write)) && args+=(-benchmarks BENCHMARKS.md)
"$cache/bench-ingest" table "${args[@]}"
