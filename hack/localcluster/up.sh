#!/usr/bin/env bash
# Starts a local Kubernetes cluster that really runs pods, as local processes:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler (pinned builds in bin/, made by
# hack/build-tools.sh) and the local node (hack/localnode, a virtual-kubelet node; needs root).
#
#   hack/localcluster/up.sh [localnode flags...]
#   e.g. hack/localcluster/up.sh --image-map busybox=/ --image-map ragops:latest=/path/to/rootfs \
#          --image-entrypoint ragops:latest=/usr/local/bin/ragops --advertise-gpus 1
#
# Idempotent: what already runs is kept (the node is restarted when its flags changed; its pods
# keep running across the restart). State (certificates, etcd data, node state, logs) lives in
# $LOCALCLUSTER_DIR (default .cache/localcluster). hack/localcluster/down.sh stops everything.
#
# Environment: LOCALCLUSTER_BIN (folder with etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl; default bin/, built by hack/build-tools.sh), LOCALCLUSTER_DIR,
# LOCALCLUSTER_APISERVER_PORT (6443), LOCALCLUSTER_ETCD_PORT (23790),
# LOCALCLUSTER_KUBELET_PORT (10250), LOCALCLUSTER_NODE_NAME (localnode),
# LOCALCLUSTER_SERVICE_CIDR (127.2.0.0/16).
#
# Networking: Service ClusterIPs come from LOCALCLUSTER_SERVICE_CIDR, a loopback range, so the
# local node's Service proxy (hack/localnode internal/svcproxy, in place of kube-proxy) can listen
# on them and forward to the pods' own loopback addresses (127.1.0.0/16); the node writes each
# pod's /etc/hosts with the Services' names (no cluster DNS). From the host, a Service is reached
# at its ClusterIP (kubectl get svc). Clusters side by side need different service ranges.
#
# Authentication: one static admin token (group system:masters) in the kubeconfig; pods get the
# same token at /var/run/secrets/kubernetes.io/serviceaccount (a local test cluster, nothing more).
# The ServiceAccount admission plugin is disabled (no projected token volumes are injected).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${LOCALCLUSTER_BIN:-$root/bin}
state=${LOCALCLUSTER_DIR:-$root/.cache/localcluster}
api_port=${LOCALCLUSTER_APISERVER_PORT:-6443}
etcd_port=${LOCALCLUSTER_ETCD_PORT:-23790}
kubelet_port=${LOCALCLUSTER_KUBELET_PORT:-10250}
node_name=${LOCALCLUSTER_NODE_NAME:-localnode}
service_cidr=${LOCALCLUSTER_SERVICE_CIDR:-127.2.0.0/16}
controllers=job-controller,garbage-collector-controller,node-lifecycle-controller,taint-eviction-controller,persistentvolume-binder-controller,namespace-controller,ttl-after-finished-controller,pod-garbage-collector-controller,serviceaccount-controller,replicaset-controller,deployment-controller,cronjob-controller,disruption-controller

log() { printf '[localcluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "the local node must run as root (it gives each container its own mount namespace)"
command -v openssl >/dev/null || die "openssl is needed to make the cluster's certificates"

if [[ -z "${LOCALCLUSTER_BIN:-}" ]]; then
	log "binaries: hack/build-tools.sh controlplane etcd (cold: about 8 min; cached afterwards)"
	"$root/hack/build-tools.sh" controlplane etcd
fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	[[ -x "$bin/$b" ]] || die "$bin/$b missing: run hack/build-tools.sh controlplane etcd"
done
mkdir -p "$state"/{pki,logs,run,etcd,serviceaccount}
log "building $state/localnode"
(cd "$root" && go build -o "$state/localnode" ./hack/localnode)

chmod 700 "$state/pki" "$state/etcd"
pki="$state/pki"
kubeconfig="$state/kubeconfig"

# --- certificates and credentials (made once) -----------------------------------------------
if [[ ! -s "$pki/apiserver.crt" ]]; then
	log "certificates: CA, apiserver serving certificate, service account key ($pki)"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=localcluster-ca" \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
		-keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1,IP:127.2.0.1\nextendedKeyUsage=serverAuth\n' >"$pki/apiserver.ext"
	openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 3650 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
fi
if [[ ! -s "$pki/tokens.csv" ]]; then
	token=$(openssl rand -hex 24)
	echo "$token,admin,admin,system:masters" >"$pki/tokens.csv"
fi
token=$(cut -d, -f1 "$pki/tokens.csv")
cp "$pki/ca.crt" "$state/serviceaccount/ca.crt"
printf '%s' "$token" >"$state/serviceaccount/token"

kc() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
kc config set-cluster local --server "https://127.0.0.1:$api_port" --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
kc config set-credentials admin --token "$token" >/dev/null
kc config set-context local --cluster local --user admin >/dev/null
kc config use-context local >/dev/null
chmod 600 "$kubeconfig"

# --- processes --------------------------------------------------------------------------------
# running NAME: true when the process recorded in run/NAME.pid is alive.
running() {
	local pidf="$state/run/$1.pid"
	[[ -s "$pidf" ]] && kill -0 "$(cat "$pidf")" 2>/dev/null
}

# start NAME CMD...: starts CMD in its own session with output in logs/NAME.log, unless it runs.
start() {
	local name=$1
	shift
	if running "$name"; then
		log "$name: already running (pid $(cat "$state/run/$name.pid"))"
		return
	fi
	log "$name: starting (log: $state/logs/$name.log)"
	setsid "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$state/run/$name.pid"
}

# wait_until NAME SECONDS CMD...: polls CMD until it succeeds; on timeout shows NAME's log.
wait_until() {
	local name=$1 secs=$2
	shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if ! running "$name"; then
			tail -n 30 "$state/logs/$name.log" >&2 || true
			die "$name exited (log above: $state/logs/$name.log)"
		fi
		if ((SECONDS >= end)); then
			tail -n 30 "$state/logs/$name.log" >&2 || true
			die "$name not ready within ${secs}s (log: $state/logs/$name.log)"
		fi
		sleep 0.5
	done
}

start etcd "$bin/etcd" --name default --data-dir "$state/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
	--initial-cluster "default=http://127.0.0.1:$((etcd_port + 1))" --log-level warn
wait_until etcd 60 curl -sf "http://127.0.0.1:$etcd_port/health"

start kube-apiserver "$bin/kube-apiserver" \
	--etcd-servers "http://127.0.0.1:$etcd_port" \
	--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
	--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
	--token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
	--service-cluster-ip-range "$service_cidr" \
	--disable-admission-plugins ServiceAccount \
	--kubelet-preferred-address-types InternalIP --endpoint-reconciler-type none \
	--allow-privileged=true --profiling=false
wait_until kube-apiserver 120 kc get --raw /readyz

start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$kubeconfig" \
	--controllers "$controllers" --leader-elect=false --use-service-account-credentials=false \
	--secure-port 0 --profiling=false
start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false --secure-port 0

# The node is restarted when its flags changed (its pods keep running and are re-attached).
node_args=(--kubeconfig "$kubeconfig" --node-name "$node_name" --state-dir "$state/node"
	--listen "127.0.0.1:$kubelet_port" --service-account-dir "$state/serviceaccount" "$@")
if running localnode && [[ "$(cat "$state/run/localnode.args" 2>/dev/null)" != "${node_args[*]}" ]]; then
	log "localnode: flags changed, restarting it"
	kill "$(cat "$state/run/localnode.pid")"
	for _ in $(seq 50); do running localnode || break; sleep 0.2; done
fi
printf '%s' "${node_args[*]}" >"$state/run/localnode.args"
start localnode "$state/localnode" "${node_args[@]}"
wait_until localnode 120 kc get node "$node_name"
wait_until localnode 120 kc wait --for=condition=Ready "node/$node_name" --timeout=5s

log "cluster up"
cat <<EOF

Local cluster is running (state: $state).
  export KUBECONFIG=$kubeconfig
  $bin/kubectl get nodes
  $bin/kubectl logs -f POD        # served by the local node
Logs: $state/logs/   Stop: hack/localcluster/down.sh   (down.sh --purge also deletes the state)
EOF
