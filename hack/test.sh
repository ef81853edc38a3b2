#!/usr/bin/env bash
# The test command (README: `make test`). Prepares everything the tests need from the
# project's own pinned files (cached under bin/ and .cache/, so a warm run skips the builds),
# then runs every Go test with RAGOPS_REQUIRE_ALL=1: a test whose prepared part is missing
# fails instead of skipping.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n== %s (%s)\n' "$*" "$(date +%H:%M:%S)"; }

step "pinned binaries: etcd, kube-apiserver & co., controller-gen, weaviate, helm (cold build: ~18 min)"
hack/build-tools.sh all

export KUBEBUILDER_ASSETS="$root/bin"
export RAGOPS_WEAVIATE_BIN="$root/bin/weaviate-server"
export RAGOPS_REQUIRE_ALL=1
# The full data sets (../shared/datasets) or, without them, the copies in hack/demo.
RAGOPS_DATASETS=$(hack/datasets.sh)
export RAGOPS_DATASETS

for prep in hack/prepare.d/*.sh; do
	[[ -e "$prep" ]] || continue
	step "prepare: $prep"
	# Each prepare script prints KEY=VALUE lines for the environment of the tests; a script
	# that fails stops the run here (a missing input would otherwise surface as test failures).
	if ! env_lines=$(bash "$prep"); then
		echo "prepare script failed: $prep" >&2
		exit 1
	fi
	while IFS= read -r line; do
		[[ "$line" == *=* ]] && export "${line?}" && echo "  $line"
	done <<<"$env_lines"
done

step "generated code and CRDs are up to date"
hack/verify-generated.sh

step "go vet"
go vet ./...

step "go test"
# One package at a time: the envtest suites (controllers, test/...) wait on real reconciles with timeouts, and
# on 2 cores a second package beside them made their waits flaky; CI has time for it.
go test -p 1 -count=1 -timeout 45m ./... "$@"
