#!/usr/bin/env bash
# Stops the local cluster hack/localcluster/up.sh started: the local node, every container it
# started, kube-scheduler, kube-controller-manager, kube-apiserver, etcd. Leaves no process behind.
#
#   hack/localcluster/down.sh [--purge]     # --purge also deletes the state folder (etcd data, pods)
#
# Idempotent: stopping a stopped cluster does nothing. Environment: LOCALCLUSTER_DIR as in up.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
state=${LOCALCLUSTER_DIR:-$root/.cache/localcluster}
purge=false
for a in "$@"; do
	case "$a" in
	--purge) purge=true ;;
	*) echo "usage: $0 [--purge]" >&2; exit 2 ;;
	esac
done

log() { printf '[localcluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# stop NAME: SIGTERM to the recorded process (only when its command line is the expected binary),
# SIGKILL after 15 s.
stop() {
	local name=$1 pidf="$state/run/$1.pid" pid
	[[ -s "$pidf" ]] || return 0
	pid=$(cat "$pidf")
	if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "/$name "; then
		log "$name: stopping (pid $pid)"
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 75); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		if kill -0 "$pid" 2>/dev/null; then
			log "$name: still running after 15 s, killing"
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pidf"
}

stop localnode
if [[ -x "$state/localnode" && -d "$state/node" ]]; then
	"$state/localnode" stop-pods --state-dir "$state/node"
fi
stop kube-scheduler
stop kube-controller-manager
stop kube-apiserver
stop etcd
if $purge; then
	log "deleting $state"
	rm -rf "$state"
fi
log "cluster down"
