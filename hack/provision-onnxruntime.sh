#!/usr/bin/env bash
# Provisions the ONNX Runtime shared library that the embedder (package embedder/ort) loads.
#
#   hack/provision-onnxruntime.sh [cpu|cuda]
#
# cpu  (default): libonnxruntime.so.1 from the npm package onnxruntime-node@1.24.3
#                 (fetched with `npm pack`, no install scripts run).
# cuda:           the PyPI wheel onnxruntime-gpu==1.31.1 (CPython 3.12, manylinux x86-64);
#                 its onnxruntime/capi/ folder holds libonnxruntime.so.1.31.1 and the CUDA
#                 execution provider (libonnxruntime_providers_cuda.so, 284 MB), built for
#                 CUDA 13 + cuDNN 9 (the 1.24.x wheels are CUDA 12 builds). The CUDA libraries
#                 themselves (cuBLAS, cuDNN, ...) must be on the GPU machine's library path.
#
# Downloads are checked against pinned SHA-256 sums and cached under
# .cache/onnxruntime/<flavour>-<version>/. The last line printed is the library path; export it:
#
#   export RAGOPS_ONNXRUNTIME_LIB=$(hack/provision-onnxruntime.sh | tail -n1)
set -euo pipefail

mode="${1:-cpu}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/onnxruntime"

CPU_VERSION=1.24.3
CPU_TGZ_SHA256=aa1bb5fa261ea68de05dd53efbba210cd7adf2d2850f4c3a201054c74cc78040
CPU_LIB_SHA256=92ba8e44d31b80a34f5e805076a044122c3be1fffe0d88ed790de7267b0b2682

GPU_VERSION=1.31.1
GPU_WHEEL=onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl
GPU_WHEEL_SHA256=05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7

check() { # file sha256
	local got
	got="$(sha256sum "$1" | cut -d' ' -f1)"
	if [[ "$got" != "$2" ]]; then
		echo "provision-onnxruntime: checksum mismatch for $1: got $got, want $2" >&2
		rm -f "$1"
		exit 1
	fi
}

case "$mode" in
cpu)
	dir="$cache/cpu-$CPU_VERSION"
	lib="$dir/libonnxruntime.so.1"
	if [[ -f "$lib" ]] && [[ "$(sha256sum "$lib" | cut -d' ' -f1)" == "$CPU_LIB_SHA256" ]]; then
		echo "$lib"
		exit 0
	fi
	command -v npm >/dev/null || { echo "provision-onnxruntime: npm is needed for the cpu mode" >&2; exit 1; }
	mkdir -p "$dir"
	tgz="$dir/onnxruntime-node-$CPU_VERSION.tgz"
	if [[ ! -f "$tgz" ]]; then
		(cd "$dir" && npm pack --silent "onnxruntime-node@$CPU_VERSION" >/dev/null)
	fi
	check "$tgz" "$CPU_TGZ_SHA256"
	tar -xzf "$tgz" -C "$dir" --strip-components=5 package/bin/napi-v6/linux/x64/libonnxruntime.so.1
	check "$lib" "$CPU_LIB_SHA256"
	rm -f "$tgz"
	echo "$lib"
	;;
cuda)
	dir="$cache/cuda-$GPU_VERSION"
	lib="$dir/onnxruntime/capi/libonnxruntime.so.$GPU_VERSION"
	if [[ -f "$lib" && -f "$dir/onnxruntime/capi/libonnxruntime_providers_cuda.so" ]]; then
		echo "$lib"
		exit 0
	fi
	py="${PYTHON:-python3}"
	mkdir -p "$dir"
	if [[ ! -f "$dir/$GPU_WHEEL" ]]; then
		"$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
			--implementation cp --platform manylinux_2_28_x86_64 -d "$dir" "onnxruntime-gpu==$GPU_VERSION"
	fi
	check "$dir/$GPU_WHEEL" "$GPU_WHEEL_SHA256"
	(cd "$dir" && unzip -q -o "$GPU_WHEEL" 'onnxruntime/capi/libonnxruntime*')
	echo "$lib"
	;;
*)
	echo "usage: $0 [cpu|cuda]" >&2
	exit 2
	;;
esac
