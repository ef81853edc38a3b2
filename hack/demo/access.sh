#!/usr/bin/env bash
# The access demo of `make demo-access`: hack/demo.sh runs it once the Index of
# config/samples/demo-access is Ready; it also runs by itself against that cluster.
#
#   hack/demo/access.sh
#
# It asks the archive's question "welke moties zijn er aangenomen over windenergie tussen 2018
# en 2022?" through the namespace's access endpoint (ragops endpoint, run by the operator),
# as persona A (ServiceAccount website in ragops-demo-inwoners: open sessions only) and
# persona B (ServiceAccount assistent in ragops-demo-raad: closed sessions too), each once as
# is and once with the date range as a where filter (type=motie, aangenomen=true,
# 2018-01-01 <= datum < 2023-01-01), and prints each answer: rank, document, date, type,
# adopted, groups. The metadata and groups printed are read from Weaviate directly (the
# operator's view of the chunks), not from the endpoint's answer.
#
# It is a check, not a show: exit status 1 when a request without a valid token gets anything
# but 401, when a persona gets a document none of its groups may read (groups as TokenReview
# reports them, plus ragops:public), when an answer lacks a document the persona may read
# (k exceeds the corpus), when a filtered answer holds a document outside the date range, of
# another type or not adopted, or lacks one inside it, or when B reads nothing that A cannot.
#
# Environment: KUBECONFIG (the demo's), RAGOPS_DEMO_NAMESPACE (default ragops-demo-access),
# RAGOPS_DEMO_WEAVIATE_PORT_BASE (default 18075: Weaviate's HTTP port is B+5),
# RAGOPS_DEMO_STEP_TIMEOUT (seconds to wait for the endpoint, default 300).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ns=${RAGOPS_DEMO_NAMESPACE:-ragops-demo-access}
wbase=${RAGOPS_DEMO_WEAVIATE_PORT_BASE:-18075}
timeout=${RAGOPS_DEMO_STEP_TIMEOUT:-300}
index=raadsinformatie
kc() { "$root/bin/kubectl" "$@"; }
die() { printf 'access: %s\n' "$*" >&2; exit 1; }

# The operator creates the endpoint when the first Index with access rules appears.
for _ in $(seq 1 "$timeout"); do
	kc get deployment ragops-endpoint -n "$ns" >/dev/null 2>&1 && break
	sleep 1
done
kc rollout status deployment/ragops-endpoint -n "$ns" --timeout "${timeout}s" >/dev/null ||
	die "the endpoint did not become ready: kubectl describe pods -n $ns -l app.kubernetes.io/component=access-endpoint"
url="http://$(kc get service ragops-endpoint -n "$ns" -o jsonpath='{.spec.clusterIP}'):8080"
echo "endpoint: $url (Service ragops-endpoint, served by the local node's Service proxy)"

# Each persona's token, and its groups as the API server reports them (TokenReview).
persona() {
	local sa=$1 sans=$2 token
	token=$(kc create token "$sa" -n "$sans" --duration 1h)
	kc create -o json -f - <<EOF | python3 -c 'import json, sys; u = json.load(sys.stdin)["status"]["user"]; print(json.dumps({"user": u["username"], "groups": u.get("groups", [])}))' >"$tmp/$sa.identity"
{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "$token"}}
EOF
	printf '%s' "$token" >"$tmp/$sa.token"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
persona website ragops-demo-inwoners
persona assistent ragops-demo-raad

# The operator's view: every chunk of the active revision with its metadata and groups
# (GraphQL on the revision's collection; a GraphQL where cannot go through an alias).
collection=$(kc get index "$index" -n "$ns" -o json | python3 -c '
import json, sys
s = json.load(sys.stdin)["status"]
print(next(r["collection"] for r in s["revisions"] if r["name"] == s["activeRevision"]))')
curl -fsS "http://127.0.0.1:$((wbase + 5))/v1/graphql" -H 'Content-Type: application/json' \
	-d "{\"query\": \"{ Get { $collection(limit: 1000) { docId title type datum aangenomen zitting accessGroups } } }\"}" >"$tmp/chunks.json" ||
	die "reading $collection from Weaviate failed"

python3 - "$url/v1/indexes/$index/search" "$tmp" "$collection" <<'PY'
import json, sys, urllib.error, urllib.request

url, tmp, collection = sys.argv[1:4]
question = "welke moties zijn er aangenomen over windenergie tussen 2018 en 2022?"
where = ["type=motie", "aangenomen=true", "datum>=2018-01-01", "datum<2023-01-01"]
failures = []

def check(ok, msg):
    if not ok:
        failures.append(msg)
        print(f"  FAIL: {msg}")

body = json.load(open(f"{tmp}/chunks.json"))
if body.get("errors"):
    sys.exit(f"access: Weaviate: {body['errors']}")
docs = {}
for c in body["data"]["Get"][collection]:
    docs[c["docId"]] = c
print(f"\nThe corpus as the operator sees it ({len(docs)} documents, read from Weaviate directly):")
row = "  {:<54} {:<10} {:<10} {:<10} {:<8} {}"
print(row.format("document", "datum", "type", "aangenomen", "zitting", "accessGroups"))
for d in sorted(docs):
    c = docs[d]
    print(row.format(d, (c["datum"] or "-")[:10], c["type"] or "-", str(c["aangenomen"]).lower(), c["zitting"] or "-", ",".join(c["accessGroups"] or [])))

def search(token, req):
    r = urllib.request.Request(url, data=json.dumps(req).encode(), method="POST", headers={"Content-Type": "application/json"})
    if token is not None:
        r.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")

print("\nFail closed: no token, and a token the API server does not know")
for name, token in (("no Authorization header", None), ("a made-up token", "not-a-token")):
    code, ans = search(token, {"query": question, "k": 10})
    print(f"  {name}: HTTP {code}, {len(ans.get('results', []))} results")
    check(code == 401 and not ans.get("results"), f"{name}: HTTP {code}, want 401 without results")

def in_range(c):
    return (c["type"] == "motie" and c["aangenomen"] is True and c["datum"] is not None
            and "2018-01-01" <= c["datum"][:10] < "2023-01-01")

personas = {}
for key, sa in (("A", "website"), ("B", "assistent")):
    ident = json.load(open(f"{tmp}/{sa}.identity"))
    groups = set(ident["groups"]) | {"ragops:public"}
    readable = {d for d, c in docs.items() if groups & set(c["accessGroups"] or [])}
    personas[key] = (ident["user"], open(f"{tmp}/{sa}.token").read(), groups, readable)

seen = {}
for key, (user, token, groups, readable) in personas.items():
    for filtered in (False, True):
        req = {"query": question, "mode": "hybrid", "k": 10}
        if filtered:
            req["where"] = where
        code, ans = search(token, req)
        label = f"Persona {key}: {user}"
        print(f"\n{label}\n  groups (TokenReview, plus ragops:public): {', '.join(sorted(groups))}")
        print(f"  POST {json.dumps(req, ensure_ascii=False)}")
        if code != 200:
            check(False, f"{label}: HTTP {code}: {ans}")
            continue
        print("  {:>4} {:>7}  {:<54} {:<10} {:<10} {:<10} {}".format("rank", "score", "document", "datum", "type", "aangenomen", "groups"))
        got = set()
        for h in ans["results"]:
            c = docs.get(h["docId"], {"datum": None, "type": None, "aangenomen": None, "accessGroups": []})
            got.add(h["docId"])
            print("  {:>4} {:>7.4f}  {:<54} {:<10} {:<10} {:<10} {}".format(h["rank"], h["score"], h["docId"], (c["datum"] or "-")[:10],
                  c["type"] or "-", str(c["aangenomen"]).lower(), ",".join(c["accessGroups"] or [])))
            check(h["docId"] in readable, f"{label}: {h['docId']} is not readable by {sorted(groups)} (groups {c['accessGroups']})")
            if filtered:
                check(in_range(c), f"{label}: {h['docId']} ({c['type']}, {c['datum']}, aangenomen {c['aangenomen']}) is outside the filter")
        want = {d for d in readable if in_range(docs[d])} if filtered else readable
        check(got == want, f"{label}{' with where' if filtered else ''}: documents {sorted(got)}, want {sorted(want)}")
        seen[key, filtered] = got

only_b = seen.get(("B", False), set()) - seen.get(("A", False), set())
print(f"\nB reads what A cannot: {', '.join(sorted(only_b)) or 'nothing'}")
check(bool(only_b), "persona B reads nothing that persona A cannot: the demo shows no access rule")
only_b = seen.get(("B", True), set()) - seen.get(("A", True), set())
print(f"and in the date range: {', '.join(sorted(only_b)) or 'nothing'}")
if failures:
    print(f"\naccess demo: {len(failures)} check(s) failed")
    sys.exit(1)
print("\naccess demo: every check passed (no leak, the date range held, nothing readable went missing)")
PY
