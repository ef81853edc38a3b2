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
# The operator impls build the same plan as one Index through the operator: `operator` with
# spec.embedder.shards 1, `operator-2` with 2. When one is asked for, the script starts its
# own local cluster (hack/localcluster, state in .cache/bench-ingest/localcluster, its own
# ports) whose node maps ragops:latest to a folder holding the ragops binary, ONNX Runtime
# and the model, and the operator (`ragops manager`, log in .cache/bench-ingest/manager.log),
# as hack/demo.sh does, with a PersistentVolume on the prepared data folder. Each run applies
# a Corpus, a ChunkingStrategy and an Index (fresh names, so a fresh collection) and waits for
# Ready; it records the build pods' process CPU and peak RSS (the local node's shim records
# wait4's rusage in each container's exit file), the scan pod's, the operator's and the
# control plane's CPU over the run, a timeline, checks the collection against the Index
# status and evaluates it like the others, then deletes the Index (and so its collection).
# With only ragops and operator impls, --write fills the bench-ingest-operator markers.
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
#     --impls LIST        comma-separated subset of ragops,llamaindex,langchain,operator,operator-2
#     --first-round N     number the rounds from N (its order follows: even rounds reversed)
#                         and append to results.jsonl: more rounds for an earlier run
#     --write             update BENCHMARKS.md's "End-to-end ingestion" table
# RAGOPS_DATASETS points at the folder holding scifact/ and qmsum/ (default ../shared/datasets).
# BENCH_INGEST_PORT_BASE=B: the operator impls' cluster takes B+443 (kube-apiserver), B+790
# (etcd), B+250 (node), B+90/B+91 (operator metrics, probes); default 36000.
# Raw results: .cache/bench-ingest/results.jsonl (results-operator.jsonl when only ragops and
# operator impls run). Runs at nice 10 (a shared machine).
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
operator=0 peers=0
for i in ${impls//,/ }; do
	case $i in
	ragops) ;;
	operator | operator-2) operator=1 ;;
	llamaindex | langchain) peers=1 ;;
	*) echo "--impls: unknown implementation $i" >&2; exit 2 ;;
	esac
done
cache=.cache/bench-ingest
results=$cache/results.jsonl section=bench-ingest
if ((operator && !peers)); then
	results=$cache/results-operator.jsonl section=bench-ingest-operator
fi
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

# operator_up starts the local cluster and the operator (as hack/demo.sh does) and sets
# opflags, the run flags of the operator impls.
operator_up() {
	local base=${BENCH_INGEST_PORT_BASE:-36000} rootfs=$root/$cache/rootfs model_name
	model_name=$(basename "$modeldir")
	export LOCALCLUSTER_DIR=$root/$cache/localcluster LOCALCLUSTER_APISERVER_PORT=$((base + 443))
	export LOCALCLUSTER_ETCD_PORT=$((base + 790)) LOCALCLUSTER_KUBELET_PORT=$((base + 250))
	mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/onnxruntime" "$rootfs/models"
	install -m 0755 "$cache/ragops" "$rootfs/usr/local/bin/ragops"
	install -m 0644 "$lib" "$rootfs/usr/local/lib/onnxruntime/libonnxruntime.so"
	rm -rf "${rootfs:?}/models/$model_name"
	cp -r "$modeldir" "$rootfs/models/$model_name"
	# A fresh cluster: no Index of an earlier run claims a collection of the new Weaviate.
	hack/localcluster/down.sh --purge >/dev/null 2>&1 || true
	hack/localcluster/up.sh --image-map "ragops:latest=$rootfs" --image-entrypoint "ragops:latest=/usr/local/bin/ragops" >/dev/null
	local kubeconfig=$LOCALCLUSTER_DIR/kubeconfig
	kc() { bin/kubectl --kubeconfig "$kubeconfig" "$@"; }
	kc apply --server-side -f config/crd/bases >/dev/null
	kc wait --for condition=Established --timeout 60s crd --all >/dev/null
	KUBECONFIG=$kubeconfig setsid "$cache/ragops" manager --worker-image ragops:latest \
		--metrics-bind-address "127.0.0.1:$((base + 90))" --health-probe-bind-address "127.0.0.1:$((base + 91))" \
		>"$cache/manager.log" 2>&1 </dev/null &
	echo $! >"$cache/manager.pid"
	for _ in $(seq 1 60); do
		curl -fsS -o /dev/null "http://127.0.0.1:$((base + 91))/readyz" 2>/dev/null && break
		sleep 0.5
	done
	curl -fsS -o /dev/null "http://127.0.0.1:$((base + 91))/readyz" || { echo "the operator did not become ready; see $cache/manager.log" >&2; exit 1; }
	kc create namespace bench-ingest >/dev/null
	kc label namespace bench-ingest pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest >/dev/null
	kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata:
  name: bench-ingest-data
spec:
  capacity:
    storage: 1Gi
  accessModes: ["ReadOnlyMany"]
  storageClassName: bench-ingest
  persistentVolumeReclaimPolicy: Retain
  hostPath:
    path: $data
    type: Directory
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: bench-data
  namespace: bench-ingest
spec:
  accessModes: ["ReadOnlyMany"]
  storageClassName: bench-ingest
  volumeName: bench-ingest-data
  resources:
    requests:
      storage: 1Gi
EOF
	local pids=() p
	for p in etcd kube-apiserver kube-controller-manager kube-scheduler localnode; do pids+=("$(cat "$LOCALCLUSTER_DIR/run/$p.pid")"); done
	opflags=(-kubeconfig "$kubeconfig" -namespace bench-ingest -claim bench-data -node-state "$LOCALCLUSTER_DIR/node"
		-image-model "/models/$model_name" -manager-pid "$(cat "$cache/manager.pid")" -cluster-pids "$(IFS=,; echo "${pids[*]}")")
}

# operator_down stops the operator and the local cluster (its state stays for a look).
operator_down() {
	if [[ -f "$cache/manager.pid" ]]; then
		kill "$(cat "$cache/manager.pid")" 2>/dev/null || true
		rm -f "$cache/manager.pid"
	fi
	hack/localcluster/down.sh >/dev/null 2>&1 || true
}

opflags=()
if ((operator)); then
	trap 'operator_down; hack/weaviate.sh stop' EXIT
	operator_up
fi

# The same threads everywhere: one ONNX Runtime intra-op thread (plan and peers), no
# tokenizer or BLAS thread pools.
export OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
IFS=, read -r -a order <<<"$impls"
((first > 1)) || : >"$results"
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
			-size "$size" -overlap "$overlap" -batch "$batch" -work "$cache" "${opflags[@]}" >>"$results"
		tail -n1 "$results" >&2
	done
done
machine="$(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/{print $2}') GiB"
setup="Recursive chunks of $size tokens with $overlap overlap (LlamaIndex SentenceSplitter, LangChain RecursiveCharacterTextSplitter with the model's tokenizer as length function), peers embed batches of $batch chunks; one ONNX Runtime thread each; medians over the runs, rounds in alternating order (ABC, CBA, ...)."
((peers)) || setup="Recursive chunks of $size tokens with $overlap overlap; one ONNX Runtime thread per process (operator: spec.embedder.threads 1 per pod, serving off); medians over the runs, rounds in alternating order (ABC, CBA, ...)."
args=(-results "$results" -section "$section" -meta "$data/meta.json" -machine "$machine" -setup "$setup")
((write)) && args+=(-benchmarks BENCHMARKS.md)
"$cache/bench-ingest" table "${args[@]}"
