#!/usr/bin/env bash
# Runs a throwaway single-node Weaviate (v1.37.6, built from source by hack/build-tools.sh) on
# free loopback ports with a temporary data folder, for the demo and manual checks. Go tests do
# not need it: package vectorstore/weaviatetest starts its own server.
#
#   hack/weaviate.sh start   # build if needed (cached), start, wait for ready, print addresses
#   hack/weaviate.sh env     # print RAGOPS_WEAVIATE_HTTP_HOST=... and RAGOPS_WEAVIATE_GRPC_HOST=...
#   hack/weaviate.sh stop    # SIGTERM, wait, remove the data folder
#   hack/weaviate.sh status
#
# State (pid, env, log, data) lives in $RAGOPS_WEAVIATE_STATE (default .cache/weaviate-run).
# RAGOPS_WEAVIATE_BIN overrides the binary (default bin/weaviate-server).
# RAGOPS_WEAVIATE_PORT_BASE=B uses the fixed ports B..B+5 (gossip, data, raft, raft RPC, gRPC,
# HTTP) instead of a free block; the demo uses 18075, so HTTP is 18080 and gRPC 18079.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state=${RAGOPS_WEAVIATE_STATE:-$root/.cache/weaviate-run}
bin=${RAGOPS_WEAVIATE_BIN:-$root/bin/weaviate-server}

log() { printf '[weaviate %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

running() { [[ -f "$state/pid" ]] && kill -0 "$(cat "$state/pid")" 2>/dev/null; }

# port_free PORT: nothing listens on PORT (any interface).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports N: a block of N consecutive free ports. Consecutive because Weaviate derives peer
# addresses by convention (data = gossip + 1, raft internal RPC = raft + 1); with unrelated ports
# the single node's raft join dials the wrong port and startup stalls for a minute.
pick_ports() {
	local n=$1 base i ok
	for _ in $(seq 1 200); do
		base=$((20000 + RANDOM % 30000)) ok=1
		for ((i = 0; i < n; i++)); do port_free $((base + i)) || { ok=0; break; }; done
		if ((ok)); then seq -s ' ' "$base" $((base + n - 1)); return; fi
	done
	echo "no block of $n free ports found" >&2
	return 1
}

start() {
	if running; then
		log "already running (pid $(cat "$state/pid"))"
		cat "$state/env"
		return
	fi
	if [[ -z "${RAGOPS_WEAVIATE_BIN:-}" ]]; then
		"$root/hack/build-tools.sh" weaviate
	fi
	[[ -x "$bin" ]] || { echo "weaviate-server binary $bin missing: run hack/build-tools.sh weaviate" >&2; exit 1; }
	mkdir -p "$state"
	rm -rf "$state/data"
	mkdir -p "$state/data"
	local gossip data raft raftrpc grpc http
	if [[ -n "${RAGOPS_WEAVIATE_PORT_BASE:-}" ]]; then
		# Fixed ports (the demo's manifests name them): base .. base+5.
		local b=$RAGOPS_WEAVIATE_PORT_BASE
		for ((i = 0; i < 6; i++)); do port_free $((b + i)) || { echo "port $((b + i)) is in use (RAGOPS_WEAVIATE_PORT_BASE=$b)" >&2; exit 1; }; done
		read -r gossip data raft raftrpc grpc http < <(seq -s ' ' "$b" $((b + 5)))
	else
		read -r gossip data raft raftrpc grpc http < <(pick_ports 6)
	fi
	# Environment as in ../shared/FACTS.md (and vectorstore/weaviatetest.Env).
	# USE_INVERTED_SEARCHABLE=false: new collections use exact WAND BM25, not BlockMax WAND, which
	# in 1.37.6 returns wrong BM25 top-k on freshly imported collections (weaviate/weaviate#8704;
	# see vectorstore/weaviatetest.EnvExactBM25). Read when a collection is created.
	env PERSISTENCE_DATA_PATH="$state/data" \
		DEFAULT_VECTORIZER_MODULE=none \
		AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true \
		AUTOSCHEMA_ENABLED=false \
		CLUSTER_HOSTNAME=node1 CLUSTER_IN_LOCALHOST=true \
		CLUSTER_BIND_ADDR=127.0.0.1 CLUSTER_ADVERTISE_ADDR=127.0.0.1 \
		CLUSTER_GOSSIP_BIND_PORT="$gossip" CLUSTER_DATA_BIND_PORT="$data" \
		RAFT_PORT="$raft" RAFT_INTERNAL_RPC_PORT="$raftrpc" \
		RAFT_BOOTSTRAP_EXPECT=1 RAFT_TIMEOUTS_MULTIPLIER=1 \
		GRPC_PORT="$grpc" DISABLE_TELEMETRY=true GO_PROFILING_DISABLE=true LOG_LEVEL=warning \
		USE_INVERTED_SEARCHABLE=false \
		setsid "$bin" --host 127.0.0.1 --port "$http" --scheme http >"$state/weaviate.log" 2>&1 </dev/null &
	echo $! >"$state/pid"
	printf 'RAGOPS_WEAVIATE_HTTP_HOST=127.0.0.1:%s\nRAGOPS_WEAVIATE_GRPC_HOST=127.0.0.1:%s\n' "$http" "$grpc" >"$state/env"
	local deadline=$((SECONDS + 60))
	until curl -fsS -o /dev/null "http://127.0.0.1:$http/v1/.well-known/ready" 2>/dev/null; do
		if ! running; then
			tail -n 30 "$state/weaviate.log" >&2
			rm -f "$state/pid"
			echo "weaviate-server exited before it was ready (log: $state/weaviate.log)" >&2
			exit 1
		fi
		if ((SECONDS > deadline)); then
			tail -n 30 "$state/weaviate.log" >&2
			stop
			echo "weaviate-server not ready after 60 s" >&2
			exit 1
		fi
		sleep 0.2
	done
	log "ready: http 127.0.0.1:$http, grpc 127.0.0.1:$grpc (pid $(cat "$state/pid"), log $state/weaviate.log)"
	cat "$state/env"
}

stop() {
	if ! running; then
		log "not running"
		rm -rf "$state/pid" "$state/data"
		return
	fi
	local pid
	pid=$(cat "$state/pid")
	kill -TERM "$pid"
	for _ in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "still running after 30 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$state/pid" "$state/data" "$state/env"
	log "stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) running && cat "$state/env" || { echo "not running (hack/weaviate.sh start)" >&2; exit 1; } ;;
status) if running; then echo "running (pid $(cat "$state/pid"))"; cat "$state/env"; else echo "stopped"; exit 1; fi ;;
*) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
