#!/usr/bin/env bash
# Tokens/s of the Go embedder with ONNX Runtime's CUDA execution provider, on a GPU machine
# that cannot reach any registry (everything it needs travels with the working tree).
#
# 1. Here, on the development machine:
#      hack/bench-embedder/gpu.sh prepare
#    writes .cache/gpu-bench/ (~30 MB): the embedder test binary (go test -c), the model's
#    tokenizer.json + ragops.json, and the first 2,000 SciFact documents.
#    The real weights (90 MB model.onnx) exceed the 64 MiB that may travel, so the GPU run
#    exports the same architecture with seeded random weights (hack/export-model/export.py
#    --random-weights, numpy + onnx, both on the GPU image): throughput does not depend on
#    weight values. Correctness is covered by the CPU tests.
# 2. On the GPU machine (device tool), from the repository root, one command:
#      command: bash hack/bench-embedder/gpu.sh run      carry: [".cache/gpu-bench"]
#    It prints which execution provider loaded and the tokens/s of naive and late
#    embedding, and copies its log to $OUT/gpu-bench.txt. Under 10 minutes (timeout inside).
#
# The ONNX Runtime with CUDA: the run uses, in order, (a) $RAGOPS_ORT_CUDA_LIB, (b) the staged
# onnxruntime-gpu 1.31.1 wheel (CUDA 13 + cuDNN 9 build, matching the GPU image's CUDA 13
# libraries; 1.24.x wheels are CUDA 12 builds) if its parts were carried in earlier calls,
# (c) the image's own Python onnxruntime if it reports CUDAExecutionProvider (the plain
# `onnxruntime` package, which the image lists, is a CPU build). The wheel's CUDA provider
# library is 284 MB, more than one call may carry, so (b) takes several calls, back to back
# within the machine's 30 s warm window (ignored files a call leaves there are kept):
#      hack/bench-embedder/gpu.sh stage     # here: .cache/gpu-stage/part-00 .. part-03 (xz, 55 MiB each)
#      run(command="true", carry=[".cache/gpu-stage/part-00"])
#      run(command="true", carry=[".cache/gpu-stage/part-01"])
#      run(command="true", carry=[".cache/gpu-stage/part-02"])
#      run(command="bash hack/bench-embedder/gpu.sh run", carry=[".cache/gpu-bench", ".cache/gpu-stage/part-03"], timeout_s=600)
# (each call: at most 55 MiB of parts + the ~6 MiB working tree, under the 64 MiB limit).
# The CUDA libraries (cuBLAS, cuDNN, cuFFT, cuRAND, CUDA runtime) come from the image's
# nvidia-* Python packages (site-packages/nvidia/*/lib), put on LD_LIBRARY_PATH.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bench=.cache/gpu-bench
stage=.cache/gpu-stage

ORT_GPU_VERSION=1.31.1 # keep equal to GPU_VERSION in hack/provision-onnxruntime.sh

prepare() {
	local data=${RAGOPS_DATASETS:-$root/../shared/datasets}
	local model
	model=$(hack/export-model/export.sh | tail -n1)
	rm -rf "$bench"
	mkdir -p "$bench/model" "$bench/datasets/scifact"
	CGO_ENABLED=1 go test -c -o "$bench/embedder.test" ./embedder
	cp "$model/tokenizer.json" "$model/ragops.json" "$bench/model/"
	head -n 2000 "$data/scifact/corpus.jsonl" > "$bench/datasets/scifact/corpus.jsonl"
	du -sh "$bench"
	echo 'now: run(command="bash hack/bench-embedder/gpu.sh run", carry=[".cache/gpu-bench"], timeout_s=600)'
}

stage_parts() {
	local lib capi
	lib=$(hack/provision-onnxruntime.sh cuda | tail -n1)
	capi=$(dirname "$lib")
	rm -rf "$stage"
	mkdir -p "$stage"
	tar -cf - -C "$capi/../.." onnxruntime/capi/libonnxruntime.so.$ORT_GPU_VERSION \
		onnxruntime/capi/libonnxruntime_providers_shared.so onnxruntime/capi/libonnxruntime_providers_cuda.so |
		xz -6 -T2 | split -b 55m -d - "$stage/part-"
	ls -la "$stage"
	echo "carry each part in its own run, back to back; the last one together with .cache/gpu-bench runs 'gpu.sh run'"
}

run_gpu() {
	local out=${OUT:-/tmp/gpu-bench-out}
	mkdir -p "$out"
	exec > >(tee "$out/gpu-bench.txt") 2>&1
	[[ -x "$bench/embedder.test" ]] || { echo "missing $bench/embedder.test: run 'hack/bench-embedder/gpu.sh prepare' here and carry .cache/gpu-bench" >&2; exit 1; }
	nvidia-smi -L || true
	local py=python3 work=/tmp/ragops-gpu
	mkdir -p "$work"
	echo "== model: all-MiniLM-L6-v2 architecture, seeded random weights"
	"$py" hack/export-model/export.py --random-weights --tokenizer "$bench/model/tokenizer.json" --out "$work/model"

	# CUDA libraries of the image's Python packages.
	local nvlibs
	nvlibs=$("$py" - <<'PY'
import glob, os, site
dirs = []
for sp in site.getsitepackages():
    dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "cu13", "lib")))
print(":".join(dirs))
PY
)
	export LD_LIBRARY_PATH="${nvlibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

	local lib=${RAGOPS_ORT_CUDA_LIB:-}
	if [[ -z "$lib" && -e "$stage/part-00" ]]; then
		echo "== ONNX Runtime: staged onnxruntime-gpu $ORT_GPU_VERSION ($(ls "$stage" | wc -l) parts)"
		mkdir -p "$work/ort"
		if command -v xz >/dev/null; then
			cat "$stage"/part-* | xz -d | tar -xf - -C "$work/ort"
		else
			cat "$stage"/part-* | "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' | tar -xf - -C "$work/ort"
		fi
		lib=$work/ort/onnxruntime/capi/libonnxruntime.so.$ORT_GPU_VERSION
	fi
	if [[ -z "$lib" ]]; then
		lib=$("$py" - <<'PY' || true
import glob, os
import onnxruntime as o
if "CUDAExecutionProvider" in o.get_available_providers():
    libs = glob.glob(os.path.join(os.path.dirname(o.__file__), "capi", "libonnxruntime.so*"))
    print(sorted(libs)[0] if libs else "")
PY
)
		[[ -n "$lib" ]] && echo "== ONNX Runtime: the image's Python onnxruntime ($lib)"
	fi
	if [[ -z "$lib" ]]; then
		echo "no ONNX Runtime with a CUDA execution provider here: the image's onnxruntime is $("$py" -c 'import onnxruntime as o; print(o.__version__, o.get_available_providers())' 2>&1)"
		echo "stage the onnxruntime-gpu wheel (see the header of this script) and run again"
		exit 2
	fi
	export RAGOPS_ONNXRUNTIME_LIB=$lib RAGOPS_MODEL_DIR=$work/model RAGOPS_DATASETS=$root/$bench/datasets
	export RAGOPS_BENCH_DOCS=${RAGOPS_BENCH_DOCS:-2000} RAGOPS_BENCH_THREADS=${RAGOPS_BENCH_THREADS:-4}
	echo "== CUDA: device cuda, token budget 65536 per batch, $RAGOPS_BENCH_DOCS SciFact documents"
	RAGOPS_BENCH_DEVICE=cuda RAGOPS_BENCH_BATCH_TOKENS=${RAGOPS_BENCH_BATCH_TOKENS:-65536} timeout 360 \
		"$bench/embedder.test" -test.run '^$' -test.bench 'SciFact' -test.benchtime 3x -test.v || echo "cuda run failed: exit $?"
	local cpudocs=${RAGOPS_BENCH_CPU_DOCS:-300}
	echo "== CPU on the same machine for scale: $(nproc) cores, $(nproc) threads, $cpudocs documents"
	RAGOPS_BENCH_DEVICE=cpu RAGOPS_BENCH_THREADS=$(nproc) RAGOPS_BENCH_DOCS=$cpudocs RAGOPS_BENCH_BATCH_TOKENS=4096 timeout 150 \
		"$bench/embedder.test" -test.run '^$' -test.bench 'SciFact' -test.benchtime 1x -test.v || echo "cpu run failed: exit $?"
}

case "${1:-}" in
prepare) prepare ;;
stage) stage_parts ;;
run) run_gpu ;;
*)
	echo "usage: $0 prepare|stage|run (see the header)" >&2
	exit 2
	;;
esac
