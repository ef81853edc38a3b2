#!/usr/bin/env bash
# The gated rollout of `make demo`, as a GitOps user makes it: hack/demo.sh runs it after the
# results; it also runs by itself against a demo cluster that is up.
#
#   hack/demo/rollout.sh [DIR]   DIR: the manifests (default config/samples/demo-rollout):
#                                00-index.yaml, then every changes/*.yaml in order, then
#                                00-index.yaml's strategy again (the revert)
#
# Each commit is `kubectl apply`; the script waits for the gate's decision on the revision it
# asks for and prints it, interval included. The revert names a revision that served before,
# so the alias moves back without a build or a gate: the script prints how long that took.
# Then `ragops compare` on the gating Evaluations of the first two revisions.
#
# Environment: KUBECONFIG (the demo's), RAGOPS_DEMO_NAMESPACE (default ragops-demo),
# RAGOPS_DEMO_WEAVIATE_PORT_BASE (default 18075: the manifests' 127.0.0.1:18080/18079 are
# rewritten to B+5/B+4), RAGOPS_DEMO_STEP_TIMEOUT (seconds per decision, default 1800).
# Exit status 1 when a revision fails to build or the Index stalls for another reason than a
# refused gate; a refusal is a decision, printed, not an error.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/config/samples/demo-rollout}
ns=${RAGOPS_DEMO_NAMESPACE:-ragops-demo}
wbase=${RAGOPS_DEMO_WEAVIATE_PORT_BASE:-18075}
timeout=${RAGOPS_DEMO_STEP_TIMEOUT:-1800}
index=rollout
kc() { "$root/bin/kubectl" "$@"; }
die() { printf 'rollout: %s\n' "$*" >&2; exit 1; }
# manifest prints a file with the demo's Weaviate ports.
manifest() { sed -e "s/127\.0\.0\.1:18080/127.0.0.1:$((wbase + 5))/g" -e "s/127\.0\.0\.1:18079/127.0.0.1:$((wbase + 4))/g" "$1"; }
get() { kc get index "$index" -n "$ns" -o jsonpath="$1"; }

# decide waits until the Index asks for a revision other than $1 (the one asked for before
# the commit; empty waits for any) and the gate has decided on it: it prints the revision,
# its phase (Active or Rejected) and the gate's message, and sets $revision and $phase.
decide() {
	local before=$1 start=$SECONDS stalled reason
	while :; do
		revision=$(get '{.status.revision}')
		if [[ -n "$revision" && "$revision" != "$before" ]]; then
			phase=$(get "{.status.revisions[?(@.name==\"$revision\")].phase}")
			case "$phase" in
			Active | Rejected) break ;;
			Failed) die "revision $revision failed: $(get "{.status.revisions[?(@.name==\"$revision\")].message}")" ;;
			esac
		fi
		stalled=$(get '{.status.conditions[?(@.type=="Stalled")].status}')
		reason=$(get '{.status.conditions[?(@.type=="Stalled")].reason}')
		if [[ "$stalled" == True && "$reason" != GateFailed ]]; then
			die "Index $index is Stalled ($reason): $(get '{.status.conditions[?(@.type=="Stalled")].message}')"
		fi
		((SECONDS - start > timeout)) && die "no decision on Index $index within $timeout s: $(get '{.status.conditions[?(@.type=="Ready")].message}')"
		sleep 5
	done
	printf '  revision %s: %s after %d s\n' "$revision" "$phase" $((SECONDS - start))
	local msg
	msg=$(get "{.status.revisions[?(@.name==\"$revision\")].gateMessage}")
	[[ -n "$msg" ]] || msg=$(get "{.status.revisions[?(@.name==\"$revision\")].message}")
	[[ -n "$msg" ]] && printf '  gate: %s\n' "$msg"
	return 0
}

[[ -f "$dir/00-index.yaml" ]] || die "no $dir/00-index.yaml"
if kc get index "$index" -n "$ns" >/dev/null 2>&1; then
	# A walkthrough starts from nothing: an earlier run's revisions would answer at once.
	echo "-- deleting Index $index of an earlier run"
	kc delete index "$index" -n "$ns" --wait --timeout "${timeout}s" >/dev/null
fi
echo "-- $index: the first revision (not gated: nothing serves yet)"
manifest "$dir/00-index.yaml" | kc apply -f - >/dev/null
decide ""
first=$revision
[[ "$phase" == Active ]] || die "the first revision $first is $phase"
revisions=("$first")
for change in "$dir"/changes/*.yaml; do
	echo
	echo "-- commit $(basename "$change"): $(sed -n '1s/^# //p' "$change")"
	# Read before the apply: the controller may record the new revision before kubectl returns.
	before=$(get '{.status.revision}')
	manifest "$change" | kc apply -f - >/dev/null
	decide "$before"
	revisions+=("$revision")
done
echo
echo "-- revert to the first strategy (git revert): revision $first served before"
manifest "$dir/00-index.yaml" | kc apply -f - >/dev/null
start=$SECONDS
while [[ "$(get '{.status.activeRevision}')" != "$first" ]]; do
	((SECONDS - start > timeout)) && die "the alias did not move back to $first within $timeout s"
	sleep 1
done
printf '  the alias is back on %s after %d s, no build and no gate (%s)\n' "$first" $((SECONDS - start)) \
	"$(get '{.status.conditions[?(@.type=="Ready")].message}')"

echo
kc get index "$index" -n "$ns" -o jsonpath='{range .status.revisions[*]}  {.name}  {.phase}  gate recall@10 {.gateRecall}{"\n"}{end}'
if ((${#revisions[@]} > 1)); then
	echo
	echo "-- ragops compare: the gating Evaluations of ${revisions[0]} and ${revisions[1]}, query by query"
	"$root/bin/ragops" compare -n "$ns" --top 5 "$index-gate-${revisions[0]}" "$index-gate-${revisions[1]}"
fi
