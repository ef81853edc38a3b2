#!/usr/bin/env bash
# Runs a throwaway Weaviate (v1.37.6, built from source by hack/build-tools.sh) on free
# loopback ports with temporary data folders, for the demo and manual checks: one node, or a
# local cluster of N nodes joined by gossip and raft. Go tests do not need it: package
# vectorstore/weaviatetest starts its own servers (Start, StartCluster).
#
#   hack/weaviate.sh start       # build if needed (cached), start, wait for ready, print addresses
#   hack/weaviate.sh env         # print RAGOPS_WEAVIATE_HTTP_HOST=... and RAGOPS_WEAVIATE_GRPC_HOST=...
#   hack/weaviate.sh stop        # SIGTERM, wait, remove the data folders
#   hack/weaviate.sh status      # per node: running or stopped, HTTP and gRPC address
#   hack/weaviate.sh kill I      # SIGKILL node I (1-based), keep its data (a node loss)
#   hack/weaviate.sh restart I   # start node I again on its data folder and ports
#
# RAGOPS_WEAVIATE_NODES=N (default 1) starts a cluster of N nodes named node1..nodeN: node I has
# the ports base+6(I-1) .. base+6(I-1)+5 (gossip, data = gossip+1, raft, raft RPC = raft+1,
# gRPC, HTTP), CLUSTER_JOIN at node1's gossip port, RAFT_JOIN naming all nodes and
# RAFT_BOOTSTRAP_EXPECT=N. `env` prints node1's addresses; any node serves every collection.
# State (pids, env, logs, data) lives in $RAGOPS_WEAVIATE_STATE (default .cache/weaviate-run).
# RAGOPS_WEAVIATE_BIN overrides the binary (default bin/weaviate-server).
# RAGOPS_WEAVIATE_PORT_BASE=B uses the fixed ports from B on instead of a free block; the demo
# uses 18075 with one node, so HTTP is 18080 and gRPC 18079.
# RAGOPS_WEAVIATE_MODULES=text2vec-transformers (comma-separated) enables modules; with
# text2vec-transformers the server also gets TRANSFORMERS_INFERENCE_API (Weaviate 1.37.6 will
# not start the module without it, even when every collection names its own model server URLs;
# RAGOPS_TRANSFORMERS_URL, default an unused loopback port) and TRANSFORMERS_WAIT_FOR_STARTUP=false
# (see vectorstore/weaviatetest.TransformersEnv). Default: no modules.
# RAGOPS_WEAVIATE_AUTOSCHEMA=true lets writes add properties (LlamaIndex and LangChain rely on it;
# hack/bench-ingest sets it). Default: false, as ragops declares its schema.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state=${RAGOPS_WEAVIATE_STATE:-$root/.cache/weaviate-run}
bin=${RAGOPS_WEAVIATE_BIN:-$root/bin/weaviate-server}

log() { printf '[weaviate %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

nodes=${RAGOPS_WEAVIATE_NODES:-1}

# A server started by the single-node layout of earlier revisions ($state/pid, no node
# numbers) is node 1 of one, so stop, status and env find it.
if [[ -f "$state/pid" && ! -f "$state/node1.pid" ]]; then
	mv "$state/pid" "$state/node1.pid"
	[[ -f "$state/nodes" ]] || echo 1 >"$state/nodes"
	if [[ ! -f "$state/base" && -f "$state/env" ]]; then
		http=$(sed -n 's/^RAGOPS_WEAVIATE_HTTP_HOST=.*:\([0-9]*\)$/\1/p' "$state/env" | head -1)
		[[ -z "$http" ]] || echo $((http - 5)) >"$state/base"
	fi
fi

# node_running I: node I's recorded process is alive.
node_running() { [[ -f "$state/node$1.pid" ]] && kill -0 "$(cat "$state/node$1.pid")" 2>/dev/null; }

# running: at least one node of the recorded cluster is alive.
running() {
	local i
	for i in $(recorded_nodes); do node_running "$i" && return 0; done
	return 1
}

# recorded_nodes: the node numbers of the last start (from $state/nodes), else 1..$nodes.
recorded_nodes() { if [[ -f "$state/nodes" ]]; then seq 1 "$(cat "$state/nodes")"; else seq 1 "$nodes"; fi; }

# port_free PORT: nothing listens on PORT (any interface).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports N: a block of N consecutive free ports. Consecutive because Weaviate derives peer
# addresses by convention (data = gossip + 1, raft internal RPC = raft + 1); with unrelated ports
# the single node's raft join dials the wrong port and startup stalls for a minute. Below the
# kernel's ephemeral range, where no outgoing connection can hold a port that a restarted node
# must bind again.
pick_ports() {
	local n=$1 base i ok lo=10000 hi
	read -r hi _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || hi=32768
	((hi - lo > 10 * n)) || { lo=20000 hi=60000; }
	for _ in $(seq 1 200); do
		base=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo - n))) ok=1
		for ((i = 0; i < n; i++)); do port_free $((base + i)) || { ok=0; break; }; done
		if ((ok)); then echo "$base"; return; fi
	done
	echo "no block of $n free ports found" >&2
	return 1
}

# launch I: start node I (1-based) from the recorded base port and node count, data in
# $state/data/nodeI (kept), log appended to $state/nodeI.log.
launch() {
	local i=$1 base n p join="" j
	base=$(cat "$state/base") n=$(cat "$state/nodes")
	p=$((base + 6 * (i - 1)))
	for ((j = 1; j <= n; j++)); do join+="${join:+,}node$j:$((base + 6 * (j - 1) + 2))"; done
	local extra=()
	((i > 1)) && extra+=("CLUSTER_JOIN=127.0.0.1:$base")
	if [[ -n "${RAGOPS_WEAVIATE_MODULES:-}" ]]; then
		extra+=("ENABLE_MODULES=$RAGOPS_WEAVIATE_MODULES")
		if [[ ",$RAGOPS_WEAVIATE_MODULES," == *,text2vec-transformers,* ]]; then
			extra+=("TRANSFORMERS_INFERENCE_API=${RAGOPS_TRANSFORMERS_URL:-http://127.0.0.1:9}" TRANSFORMERS_WAIT_FOR_STARTUP=false)
		fi
	fi
	mkdir -p "$state/data/node$i"
	# Environment as in ../shared/FACTS.md (and vectorstore/weaviatetest.Env, ClusterEnv).
	# USE_INVERTED_SEARCHABLE=false: new collections use exact WAND BM25, not BlockMax WAND, which
	# in 1.37.6 returns wrong BM25 top-k on freshly imported collections (weaviate/weaviate#8704;
	# see vectorstore/weaviatetest.EnvExactBM25). Read when a collection is created.
	env PERSISTENCE_DATA_PATH="$state/data/node$i" \
		DEFAULT_VECTORIZER_MODULE=none \
		AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true \
		AUTOSCHEMA_ENABLED="${RAGOPS_WEAVIATE_AUTOSCHEMA:-false}" \
		CLUSTER_HOSTNAME="node$i" CLUSTER_IN_LOCALHOST=true \
		CLUSTER_BIND_ADDR=127.0.0.1 CLUSTER_ADVERTISE_ADDR=127.0.0.1 \
		CLUSTER_GOSSIP_BIND_PORT="$p" CLUSTER_DATA_BIND_PORT="$((p + 1))" \
		RAFT_PORT="$((p + 2))" RAFT_INTERNAL_RPC_PORT="$((p + 3))" \
		RAFT_JOIN="$join" RAFT_BOOTSTRAP_EXPECT="$n" RAFT_TIMEOUTS_MULTIPLIER=1 \
		GRPC_PORT="$((p + 4))" DISABLE_TELEMETRY=true GO_PROFILING_DISABLE=true LOG_LEVEL=warning \
		USE_INVERTED_SEARCHABLE=false "${extra[@]}" \
		setsid "$bin" --host 127.0.0.1 --port "$((p + 5))" --scheme http >>"$state/node$i.log" 2>&1 </dev/null &
	echo $! >"$state/node$i.pid"
}

# wait_ready I: wait up to 60 s for node I's /v1/.well-known/ready.
wait_ready() {
	local i=$1 http deadline=$((SECONDS + 60))
	http=$(($(cat "$state/base") + 6 * (i - 1) + 5))
	until curl -fsS -o /dev/null "http://127.0.0.1:$http/v1/.well-known/ready" 2>/dev/null; do
		if ! node_running "$i"; then
			tail -n 30 "$state/node$i.log" >&2
			echo "node$i exited before it was ready (log: $state/node$i.log)" >&2
			return 1
		fi
		if ((SECONDS > deadline)); then
			tail -n 30 "$state/node$i.log" >&2
			echo "node$i not ready after 60 s" >&2
			return 1
		fi
		sleep 0.2
	done
	log "node$i ready: http 127.0.0.1:$http, grpc 127.0.0.1:$((http - 1)) (pid $(cat "$state/node$i.pid"), log $state/node$i.log)"
}

start() {
	if running; then
		log "already running"
		cat "$state/env"
		return
	fi
	if [[ -z "${RAGOPS_WEAVIATE_BIN:-}" ]]; then
		"$root/hack/build-tools.sh" weaviate
	fi
	[[ -x "$bin" ]] || { echo "weaviate-server binary $bin missing: run hack/build-tools.sh weaviate" >&2; exit 1; }
	mkdir -p "$state"
	rm -rf "$state/data" "$state"/node*.log "$state"/node*.pid
	local base i
	if [[ -n "${RAGOPS_WEAVIATE_PORT_BASE:-}" ]]; then
		base=$RAGOPS_WEAVIATE_PORT_BASE
		for ((i = 0; i < 6 * nodes; i++)); do port_free $((base + i)) || { echo "port $((base + i)) is in use (RAGOPS_WEAVIATE_PORT_BASE=$base)" >&2; exit 1; }; done
	else
		base=$(pick_ports $((6 * nodes)))
	fi
	echo "$base" >"$state/base"
	echo "$nodes" >"$state/nodes"
	printf 'RAGOPS_WEAVIATE_HTTP_HOST=127.0.0.1:%s\nRAGOPS_WEAVIATE_GRPC_HOST=127.0.0.1:%s\n' $((base + 5)) $((base + 4)) >"$state/env"
	# node1 is the gossip seed: the others exit when CLUSTER_JOIN is refused.
	launch 1
	for _ in $(seq 1 150); do port_free "$base" || break; node_running 1 || break; sleep 0.2; done
	for ((i = 2; i <= nodes; i++)); do launch "$i"; done
	for ((i = 1; i <= nodes; i++)); do
		wait_ready "$i" || { stop; exit 1; }
	done
	cat "$state/env"
}

stop() {
	if ! running; then
		log "not running"
		rm -rf "$state"/node*.pid "$state/data" "$state/env"
		return
	fi
	local i pid
	for i in $(recorded_nodes); do node_running "$i" && kill -TERM "$(cat "$state/node$i.pid")"; done
	for i in $(recorded_nodes); do
		node_running "$i" || continue
		pid=$(cat "$state/node$i.pid")
		for _ in $(seq 1 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "node$i still running after 30 s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$state"/node*.pid "$state/data" "$state/env"
	log "stopped"
}

status() {
	running || { echo "stopped"; return 1; }
	local i base
	base=$(cat "$state/base")
	for i in $(recorded_nodes); do
		if node_running "$i"; then
			echo "node$i running (pid $(cat "$state/node$i.pid")): http 127.0.0.1:$((base + 6 * (i - 1) + 5)) grpc 127.0.0.1:$((base + 6 * (i - 1) + 4))"
		else
			echo "node$i stopped"
		fi
	done
	cat "$state/env"
}

# node_arg I: checks that I names a recorded node.
node_arg() {
	[[ "${1:-}" =~ ^[0-9]+$ && -f "$state/nodes" ]] && (($1 >= 1 && $1 <= $(cat "$state/nodes"))) ||
		{ echo "want a node number 1..$(cat "$state/nodes" 2>/dev/null || echo N) of a started cluster" >&2; exit 2; }
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) running && cat "$state/env" || { echo "not running (hack/weaviate.sh start)" >&2; exit 1; } ;;
status) status ;;
kill)
	node_arg "${2:-}"
	node_running "$2" || { echo "node$2 is not running" >&2; exit 1; }
	pid=$(cat "$state/node$2.pid")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	log "node$2 killed (data kept in $state/data/node$2)"
	;;
restart)
	node_arg "${2:-}"
	node_running "$2" && { echo "node$2 is running; kill it first" >&2; exit 1; }
	launch "$2"
	wait_ready "$2"
	;;
*) echo "usage: $0 start|stop|env|status|kill I|restart I" >&2; exit 2 ;;
esac
