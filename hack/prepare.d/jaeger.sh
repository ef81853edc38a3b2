#!/usr/bin/env bash
# Prepares the tracing test (internal/tracing): Jaeger's all-in-one binary (cmd/jaeger, an
# OpenTelemetry Collector with OTLP receivers, in-memory storage and the query API), built from
# the pinned module in hack/tools/jaeger (its own go.mod, so ragops's does not take Jaeger's
# dependencies). Cached as bin/jaeger-<version>; a cold build takes many minutes on 2 cores, a
# warm run milliseconds. Prints RAGOPS_JAEGER=<path>.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mod="$root/hack/tools/jaeger"
version=$(cd "$mod" && go list -f '{{.Version}}' -m github.com/jaegertracing/jaeger)
out="$root/bin/jaeger-$version"
if [[ ! -x "$out" ]]; then
	echo "jaeger.sh: building jaeger $version (cold: many minutes)" >&2
	mkdir -p "$root/bin"
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$out.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
	mv "$out.tmp" "$out"
fi
echo "RAGOPS_JAEGER=$out"
