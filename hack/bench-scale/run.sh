#!/usr/bin/env bash
# Issue 51 "Measured" (BENCHMARKS.md "At the archive's size"): what a build, a sync, a new
# revision and a compression change cost through the operator, on a seeded synthetic Dutch
# municipal archive (hack/bench-scale/main.go says what each step measures). Like
# hack/bench-ingest/run.sh, it starts its own local cluster (hack/localcluster, state in
# .cache/bench-scale/localcluster, its own ports) whose node maps ragops:latest to a folder
# holding the ragops binary, ONNX Runtime and all-MiniLM-L6-v2, a throwaway Weaviate, and the
# operator (`ragops manager`, log in .cache/bench-scale/manager.log); the documents are
# generated under .cache/bench-scale/data (never committed) and reach the pods through
# PersistentVolumes on that folder.
#
#   hack/bench-scale/run.sh --part N [flags]
#     --part N[,N]    parts, one after another on one cluster; 1: build the archive, a month (+1,200 ~100 -50), one change, and the
#                        month's 1,300 alone; 2: a slice with scanned PDFs: build, a strategy
#                        change, a sync of changed documents; 3: a compression change on SciFact
#                        with an Evaluation before and after; 4: a Corpus changing every few
#                        seconds while syncs run
#     --docs N[,N]    documents, one per part listed (or one for all) (part 1: 92184, part 2: 920, part 3: all SciFact, part 4: 500)
#     --seed N        seed of the documents and mutations (default 51)
#     --month A,C,R   part 1's month (default 1200,100,50)
#     --scanned N --changes N   part 2 (default 200 and 26 of 920, in proportion to --docs)
#     --compression T part 3 (default RQ: 8 bits)
#     --every D --live-changes N --burst N   part 4 (default 5s, 8, docs/2)
#     --shards N      embedder pods (default 2)
#     --timeout D     longest wait of one step (default 45m)
#     --write         put the tables of each part's last run into BENCHMARKS.md (bench-scale markers)
# RAGOPS_DATASETS points at the folder holding legalqa-nl/ and scifact/ (default
# ../shared/datasets); RAGOPS_MODEL_DIR and RAGOPS_ONNXRUNTIME_LIB, when set, are used as they
# are. BENCH_SCALE_PORT_BASE=B: the cluster takes B+443 (kube-apiserver), B+790 (etcd), B+250
# (node), B+90/B+91 (operator metrics, probes); default 38000. Each part's line is appended to
# .cache/bench-scale/results.jsonl. Runs at nice 10 (a shared machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
part=1 write=0 docs= args=()
while (($#)); do
	case $1 in
	--part) part=$2; shift ;;
	--docs) docs=$2; shift ;;
	--seed | --month | --scanned | --changes | --compression | --every | --live-changes | --burst | --shards | --timeout)
		args+=("-${1#--}" "$2"); shift ;;
	--write) write=1 ;;
	*) echo "unknown flag $1 (see the header of $0)" >&2; exit 2 ;;
	esac
	shift
done
cache=.cache/bench-scale
results=$cache/results.jsonl
datasets=${RAGOPS_DATASETS:-$root/../shared/datasets}
mkdir -p "$cache"

lib=${RAGOPS_ONNXRUNTIME_LIB:-$(hack/provision-onnxruntime.sh cpu | tail -n1)}
modeldir=${RAGOPS_MODEL_DIR:-$(hack/export-model/export.sh | tail -n1)}
[[ -f "$modeldir/ragops.json" ]] || { echo "no model folder at $modeldir" >&2; exit 1; }
modeldir=$(cd "$modeldir" && pwd)
# Part 2's scans: Pillow from hack/scan-fixtures's pinned venv (scan.sh makes it).
python=python3
if [[ ",$part," == *,2,* ]]; then
	hack/scan-fixtures/scan.sh >/dev/null 2>&1 || true
	python=$root/.cache/scan-fixtures/venv/bin/python
	"$python" -c 'import PIL' || { echo "no Pillow in $python" >&2; exit 1; }
	export "$(hack/prepare.d/tesseract.sh | tail -n1)"
fi
nice -n 10 go build -o "$cache/bench-scale" ./hack/bench-scale
export BENCH_SCALE_SCAN_SCRIPT=$root/hack/bench-scale/scan_archive.py
nice -n 10 go build -o "$cache/ragops" .

export RAGOPS_WEAVIATE_STATE=$root/$cache/weaviate
hack/weaviate.sh start >/dev/null
eval "$(hack/weaviate.sh env)"

base=${BENCH_SCALE_PORT_BASE:-38000} rootfs=$root/$cache/rootfs model_name=$(basename "$modeldir")
export LOCALCLUSTER_BIN=${LOCALCLUSTER_BIN:-$root/bin} LOCALCLUSTER_DIR=$root/$cache/localcluster LOCALCLUSTER_APISERVER_PORT=$((base + 443))
export LOCALCLUSTER_ETCD_PORT=$((base + 790)) LOCALCLUSTER_KUBELET_PORT=$((base + 250))
down() {
	if [[ -f "$cache/manager.pid" ]]; then
		kill "$(cat "$cache/manager.pid")" 2>/dev/null || true
		rm -f "$cache/manager.pid"
	fi
	hack/localcluster/down.sh >/dev/null 2>&1 || true
	hack/weaviate.sh stop >/dev/null 2>&1 || true
}
trap down EXIT
mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/onnxruntime" "$rootfs/models"
install -m 0755 "$cache/ragops" "$rootfs/usr/local/bin/ragops"
install -m 0644 "$lib" "$rootfs/usr/local/lib/onnxruntime/libonnxruntime.so"
rm -rf "${rootfs:?}/models/$model_name"
cp -r "$modeldir" "$rootfs/models/$model_name"
# A fresh cluster each run: no object of an earlier run claims a collection of the new Weaviate.
hack/localcluster/down.sh --purge >/dev/null 2>&1 || true
hack/localcluster/up.sh --image-map "ragops:latest=$rootfs" --image-entrypoint "ragops:latest=/usr/local/bin/ragops" >/dev/null
kubeconfig=$LOCALCLUSTER_DIR/kubeconfig
kc() { bin/kubectl --kubeconfig "$kubeconfig" "$@"; }
kc apply --server-side -f config/crd/bases >/dev/null
kc wait --for condition=Established --timeout 60s crd --all >/dev/null
KUBECONFIG=$kubeconfig setsid nice -n 10 "$cache/ragops" manager --worker-image ragops:latest \
	--metrics-bind-address "127.0.0.1:$((base + 90))" --health-probe-bind-address "127.0.0.1:$((base + 91))" \
	>"$cache/manager.log" 2>&1 </dev/null &
echo $! >"$cache/manager.pid"
for _ in $(seq 1 120); do
	curl -fsS -o /dev/null "http://127.0.0.1:$((base + 91))/readyz" 2>/dev/null && break
	sleep 0.5
done
curl -fsS -o /dev/null "http://127.0.0.1:$((base + 91))/readyz" || { echo "the operator did not become ready; see $cache/manager.log" >&2; exit 1; }
kc create namespace bench-scale >/dev/null
kc label namespace bench-scale pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest >/dev/null
pids=()
for p in etcd kube-apiserver kube-controller-manager kube-scheduler localnode; do pids+=("$(cat "$LOCALCLUSTER_DIR/run/$p.pid")"); done
# The node runs the pods; its processes are reniced with it.
renice -n 10 -p "${pids[@]}" >/dev/null 2>&1 || true

IFS=, read -r -a parts <<<"$part"
IFS=, read -r -a docsl <<<"$docs"
for k in "${!parts[@]}"; do
	p=${parts[k]} pargs=("${args[@]}")
	n=${docsl[k]:-${docsl[0]:-}}
	[[ -n "$n" ]] && pargs+=(-docs "$n")
	echo "[bench-scale $(date +%H:%M:%S)] part $p ${pargs[*]}" >&2
	nice -n 10 "$cache/bench-scale" run -part "$p" "${pargs[@]}" -data "$root/$cache/data" \
		-pool "$datasets/legalqa-nl/corpus.jsonl" -scifact "$datasets/scifact" -python "$python" \
		-kubeconfig "$kubeconfig" -namespace bench-scale -node-state "$LOCALCLUSTER_DIR/node" \
		-image-model "/models/$model_name" -http "$RAGOPS_WEAVIATE_HTTP_HOST" -grpc "$RAGOPS_WEAVIATE_GRPC_HOST" \
		-manager-pid "$(cat "$cache/manager.pid")" -weaviate-pid "$(cat "$RAGOPS_WEAVIATE_STATE/node1.pid")" -cluster-pids "$(IFS=,; echo "${pids[*]}")" | tee -a "$results" || echo "[bench-scale] part $p failed" >&2
done
machine="$(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/{print $2}') GiB"
targs=(-results "$results" -machine "$machine")
((write)) && targs+=(-benchmarks BENCHMARKS.md)
"$cache/bench-scale" table "${targs[@]}"
