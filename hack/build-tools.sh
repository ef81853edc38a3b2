#!/usr/bin/env bash
# Builds the pinned external binaries the tests, CI and the demo use, from the tools modules
# under hack/tools (go.sum committed), into bin/ (git-ignored), cached by version.
#
#   hack/build-tools.sh [controlplane] [etcd] [controller-gen] [weaviate] [helm] [all]
#
# A cold build of the control plane takes about 8 minutes on 2 cores (a linker peaks near 3 GB);
# Weaviate 4-8 minutes; Helm about 3 minutes. A warm run (same versions already in bin/) takes seconds.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
mkdir -p "$bin"

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
CONTROLLER_TOOLS_VERSION=v0.23.0
WEAVIATE_VERSION=v1.37.6
HELM_VERSION=v3.22.0

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# stamp NAME VERSION: true when bin/NAME was built at VERSION.
fresh() { [[ -x "$bin/$1" && -f "$bin/.$1.version" && "$(cat "$bin/.$1.version")" == "$2" ]]; }
stamp() { echo "$2" >"$bin/.$1.version"; }

build_controlplane() {
	local want=(kube-apiserver kube-controller-manager kube-scheduler kubectl) missing=()
	for b in "${want[@]}"; do fresh "$b" "$K8S_VERSION" || missing+=("$b"); done
	if ((${#missing[@]} == 0)); then log "control plane $K8S_VERSION: cached"; return; fi
	log "building ${missing[*]} $K8S_VERSION from source (cold: about 8 min on 2 cores)"
	local pkg=k8s.io/kubernetes/cmd date
	date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	local ld="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=37"
		ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
	done
	local pkgs=()
	for b in "${missing[@]}"; do pkgs+=("$pkg/$b"); done
	(cd "$root/hack/tools/controlplane" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$bin/" "${pkgs[@]}")
	for b in "${missing[@]}"; do stamp "$b" "$K8S_VERSION"; done
	log "control plane $K8S_VERSION: built"
}

build_etcd() {
	if fresh etcd "$ETCD_VERSION"; then log "etcd $ETCD_VERSION: cached"; return; fi
	log "building etcd $ETCD_VERSION from source (cold: about 1-2 min)"
	(cd "$root/hack/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/etcd" .)
	stamp etcd "$ETCD_VERSION"
}

build_controller_gen() {
	if fresh controller-gen "$CONTROLLER_TOOLS_VERSION"; then log "controller-gen $CONTROLLER_TOOLS_VERSION: cached"; return; fi
	log "building controller-gen $CONTROLLER_TOOLS_VERSION (cold: about 35 s)"
	(cd "$root/hack/tools/controllergen" && go build -o "$bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
	stamp controller-gen "$CONTROLLER_TOOLS_VERSION"
}

build_weaviate() {
	if fresh weaviate-server "$WEAVIATE_VERSION"; then log "weaviate $WEAVIATE_VERSION: cached"; return; fi
	log "building weaviate-server $WEAVIATE_VERSION from source (cold: 4-8 min on 2 cores)"
	(cd "$root/hack/tools/weaviate" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/weaviate-server" github.com/weaviate/weaviate/cmd/weaviate-server)
	stamp weaviate-server "$WEAVIATE_VERSION"
}

# Helm (the chart tests run `helm lint` and `helm template`), with the version and the default
# Kubernetes version (from its client-go, 1.37) linked in the way Helm's own Makefile does.
build_helm() {
	if fresh helm "$HELM_VERSION"; then log "helm $HELM_VERSION: cached"; return; fi
	log "building helm $HELM_VERSION (cold: about 3 min)"
	local kv ld
	kv=$(cd "$root/hack/tools/helm" && go list -f '{{.Version}}' -m k8s.io/client-go) # v0.37.0
	kv=${kv#v0.}
	ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		ld+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=${kv%%.*}"
	done
	(cd "$root/hack/tools/helm" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$bin/helm" helm.sh/helm/v3/cmd/helm)
	stamp helm "$HELM_VERSION"
}

targets=("$@")
((${#targets[@]})) || targets=(all)
for t in "${targets[@]}"; do
	case "$t" in
	controlplane) build_controlplane ;;
	etcd) build_etcd ;;
	controller-gen) build_controller_gen ;;
	weaviate) build_weaviate ;;
	helm) build_helm ;;
	all) build_controller_gen; build_etcd; build_controlplane; build_weaviate; build_helm ;;
	*) echo "unknown target $t (controlplane|etcd|controller-gen|weaviate|helm|all)" >&2; exit 2 ;;
	esac
done
