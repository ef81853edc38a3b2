#!/usr/bin/env bash
# Weaviate import benchmark: ragops vectorstore (Go) versus weaviate-client (Python), side by side
# on one throwaway server. Prepares what it needs from scratch (cached by version):
#   - bin/weaviate-server via hack/build-tools.sh weaviate
#   - .cache/bench-weaviate/venv with weaviate-client==4.24.1
# then runs hack/bench-weaviate (flags pass through, e.g. -objects 20000 -rounds 2) and prints a
# Markdown table for BENCHMARKS.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
WEAVIATE_CLIENT_VERSION=4.24.1
venv=.cache/bench-weaviate/venv

"$root/hack/build-tools.sh" weaviate
if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.weaviate-client.version" 2>/dev/null)" != "$WEAVIATE_CLIENT_VERSION" ]]; then
	echo "[bench-weaviate] creating $venv with weaviate-client==$WEAVIATE_CLIENT_VERSION" >&2
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q "weaviate-client==$WEAVIATE_CLIENT_VERSION"
	echo "$WEAVIATE_CLIENT_VERSION" >"$venv/.weaviate-client.version"
fi
go run ./hack/bench-weaviate -python "$venv/bin/python" -corpus "${RAGOPS_DATASETS:-$root/../shared/datasets}/scifact/corpus.jsonl" "$@"
