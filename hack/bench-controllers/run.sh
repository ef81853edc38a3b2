#!/usr/bin/env bash
# Controllers at scale: N Index objects (default 500) in one namespace, reconciled by the real
# `ragops manager` binary as its own process against envtest's kube-apiserver, with a real
# Weaviate. Prepares what it needs (cached by version):
#   - bin/etcd, bin/kube-apiserver and bin/weaviate-server via hack/build-tools.sh
#   - bin/ragops via make build
# then runs hack/bench-controllers (flags pass through, e.g. -n 500 -steady 60s), prints one
# Markdown table and writes it into the "## Controllers at scale" section of BENCHMARKS.md
# (replaced when present, appended at the end otherwise). Set RAGOPS_BENCH_NO_WRITE=1 to only print.
# Takes about 25 minutes at -n 500 on the shared 2-core machine (Weaviate schema writes for 500
# collections and 500 aliases dominate); -n 100 takes a few minutes.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

"$root/hack/build-tools.sh" controlplane etcd weaviate
make build
out=()
if [[ "${RAGOPS_BENCH_NO_WRITE:-}" != 1 ]]; then
	out=(-benchmarks "$root/BENCHMARKS.md")
fi
go build -o "$root/bin/bench-controllers" ./hack/bench-controllers
"$root/bin/bench-controllers" -ragops "$root/bin/ragops" "${out[@]}" "$@"
