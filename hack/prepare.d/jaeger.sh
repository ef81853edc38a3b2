#!/usr/bin/env bash
# Prepares the tracing test (internal/tracing): Jaeger's all-in-one binary (cmd/jaeger, an
# OpenTelemetry Collector with OTLP receivers, in-memory storage and the query API), built from
# the pinned module in hack/tools/jaeger (its own go.mod, so ragops's does not take Jaeger's
# dependencies). Cached as bin/jaeger-<version>, and beside that in the machine's tool cache
# ($RAGOPS_TOOL_CACHE, default ~/.cache/ragops-tools) so that a later clone on the same machine
# finds it; a cold build takes many minutes on 2 cores, a warm run milliseconds. Prints
# RAGOPS_JAEGER=<path>.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mod="$root/hack/tools/jaeger"
version=$(cd "$mod" && go list -f '{{.Version}}' -m github.com/jaegertracing/jaeger)
out="$root/bin/jaeger-$version"
shared="${RAGOPS_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragops-tools}/jaeger-$version"
if [[ ! -x "$out" ]]; then
	mkdir -p "$root/bin"
	if [[ -x "$shared" ]]; then
		echo "jaeger.sh: jaeger $version from the machine's tool cache ($shared)" >&2
		cp "$shared" "$out.tmp"
	else
		echo "jaeger.sh: building jaeger $version (cold: many minutes)" >&2
		(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$out.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
	fi
	mv "$out.tmp" "$out"
fi
if [[ ! -x "$shared" ]]; then
	# Best effort: a read-only or full cache folder leaves the build in bin/ only.
	{ mkdir -p "$(dirname "$shared")" && cp "$out" "$shared.tmp.$$" && mv -f "$shared.tmp.$$" "$shared"; } 2>/dev/null || rm -f "$shared.tmp.$$"
fi
echo "RAGOPS_JAEGER=$out"
