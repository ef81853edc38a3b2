#!/usr/bin/env bash
# Regenerates docs/reference.md (the CRD reference) from the Go types in api/v1alpha1.
# hack/crd-ref's test fails when the committed file is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./hack/crd-ref -api api/v1alpha1 -o docs/reference.md
echo "wrote docs/reference.md"
