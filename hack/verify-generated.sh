#!/usr/bin/env bash
# Fails when `make generate manifests` would change a committed file.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s generate manifests >/dev/null
if ! git diff --exit-code --stat -- api config charts/ragops/files; then
	echo "generated files are stale: run 'make generate manifests' and commit the result" >&2
	exit 1
fi
untracked=$(git ls-files --others --exclude-standard -- api config/crd config/rbac charts/ragops/files)
if [[ -n "$untracked" ]]; then
	echo "generated files not committed: $untracked" >&2
	exit 1
fi
