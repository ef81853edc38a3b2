#!/usr/bin/env bash
# The Go embedder on ONNX Runtime's CUDA execution provider, fp32 against fp16, on a GPU
# machine that cannot reach any registry (everything it needs travels with the working tree).
#
# 1. Here, on the development machine:
#      hack/bench-embedder/gpu.sh prepare   # .cache/gpu-bench: test binaries, fp16 folders, data
#      hack/bench-embedder/gpu.sh stage     # .cache/gpu-stage/part-00 .. part-NN (xz, 55 MiB each)
#    prepare writes: the embedder test binary (go test -c) and hack/scifact-model; for
#    all-minilm-l6-v2 and e5-small-v2 the real fp16 variant (model.fp16.onnx, 45 and 66 MB,
#    hack/export-model/fp16.py), tokenizer.json and ragops.json; the fp32 SciFact document
#    vectors of each model computed on the CPU here (hack/scifact-model -vectors, cached in
#    .cache/scifact-model/MODEL.f32; 15-25 CPU-minutes each when missing); SciFact (corpus,
#    test queries, qrels). stage packs that with onnxruntime-gpu 1.31.1's libraries (CUDA 13 +
#    cuDNN 9 build; 1.24.x wheels are CUDA 12 builds) into parts under the 64 MiB a call carries.
# 2. On the GPU machine (device tool), each part in its own call, back to back within the
#    machine's warm window (ignored files a call leaves there are kept), the last one running:
#      run(command="true", carry=[".cache/gpu-stage/part-00"])   ... one per part but the last
#      run(command="bash hack/bench-embedder/gpu.sh run", carry=[".cache/gpu-stage/part-NN"], timeout_s=600)
#    It prints the execution provider, then, side by side in one process per model:
#      - tokens/s of fp32 and fp16, naive and late (BenchmarkSciFact, 2,000 SciFact documents,
#        65,536 padded tokens per batch); the fp32 graph has seeded random weights in the same
#        architecture (export.py --random-weights; 90 and 133 MB would not travel), which does
#        not change throughput;
#      - fp16 without the batch pipeline (embedder.Options.Overlap off), and fp16 naive at
#        token budgets 16,384, 131,072 and 262,144 per batch;
#      - quality: the whole SciFact corpus embedded with the real fp16 variant on the GPU,
#        every abstract's cosine to the CPU fp32 vector (bar 0.999) and nDCG@10 (fp32 CPU:
#        65.41 MiniLM, 68.75 e5-small-v2; bar 0.2 points);
#      - an Index build of the whole SciFact corpus by the Job's worker (ragops embed) into a
#        Weaviate started there (bin/weaviate-server travels too), fp16 MiniLM, sentence-128
#        naive and late: wall time to the last chunk written, against the pure embedding rate;
#      - GPU utilisation and memory sampled every second by nvidia-smi during the runs;
#      - the CPU on the same machine, fp32, for scale.
#    Its log is copied to $OUT/gpu-bench.txt. About 7 minutes; timeouts inside bound each step.
# Staged: 8 parts (395 MB before xz); RAGOPS_GPU_BENCH_BUILD=0 at prepare leaves the Index build
# (the worker and weaviate-server, 224 MB before xz) out, for fewer parts when device time is short.
# RAGOPS_GPU_BENCH_DEVICE=cpu runs step 2 on the CPU (with RAGOPS_ORT_CUDA_LIB pointing at any
# ONNX Runtime and small RAGOPS_BENCH_DOCS) to check the script here before a device is lent.
#
# The ONNX Runtime with CUDA: the run uses, in order, (a) $RAGOPS_ORT_CUDA_LIB, (b) the staged
# onnxruntime-gpu wheel's library, (c) the image's own Python onnxruntime if it reports
# CUDAExecutionProvider (the plain `onnxruntime` package the image lists is a CPU build). The
# CUDA libraries (cuBLAS, cuDNN, cuFFT, cuRAND, CUDA runtime) come from the image's nvidia-*
# Python packages (site-packages/nvidia/*/lib), put on LD_LIBRARY_PATH.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bench=.cache/gpu-bench
stage=.cache/gpu-stage
models=(all-minilm-l6-v2 e5-small-v2)

ORT_GPU_VERSION=1.31.1 # keep equal to GPU_VERSION in hack/provision-onnxruntime.sh

prepare() {
	local data=${RAGOPS_DATASETS:-$root/../shared/datasets} vectors=${RAGOPS_SCIFACT_VECTORS:-$root/.cache/scifact-model}
	local minilm lib m dir
	minilm=$(hack/export-model/export.sh | tail -n1)
	hack/export-model/models.sh >/dev/null
	lib=$(hack/provision-onnxruntime.sh cpu | tail -n1)
	rm -rf "$bench"
	mkdir -p "$bench/datasets/scifact/qrels" "$bench/reference"
	CGO_ENABLED=1 go test -c -ldflags="-s -w" -o "$bench/embedder.test" ./embedder
	go build -ldflags="-s -w" -o "$bench/scifact-model" ./hack/scifact-model
	if [[ ${RAGOPS_GPU_BENCH_BUILD:-1} == 1 ]]; then # the Index build step
		go build -ldflags="-s -w" -o "$bench/ragops" .
		hack/build-tools.sh weaviate >/dev/null
		cp bin/weaviate-server "$bench/weaviate-server"
	fi
	cp "$data/scifact/corpus.jsonl" "$data/scifact/queries.jsonl" "$bench/datasets/scifact/"
	cp "$data/scifact/qrels/test.tsv" "$bench/datasets/scifact/qrels/"
	mkdir -p "$vectors"
	for m in "${models[@]}"; do
		dir=$root/.cache/models/$m
		[[ $m == all-minilm-l6-v2 ]] && dir=$minilm
		mkdir -p "$bench/models/$m"
		cp "$dir/tokenizer.json" "$dir/ragops.json" "$dir/model.fp16.onnx" "$bench/models/$m/"
		if [[ ! -f "$vectors/$m.f32" ]]; then
			echo "fp32 SciFact vectors of $m on the CPU (cached in $vectors/$m.f32)..."
			RAGOPS_ONNXRUNTIME_LIB=$lib "$bench/scifact-model" -model "$dir" -datasets "$data" -threads "$(nproc)" \
				-vectors "$vectors/$m.f32" -tolerance 100 >/dev/null
		fi
		cp "$vectors/$m.f32" "$bench/reference/$m.f32"
	done
	du -sh "$bench"
	echo "now: hack/bench-embedder/gpu.sh stage"
}

stage_parts() {
	local lib capi
	[[ -x "$bench/embedder.test" ]] || { echo "run 'hack/bench-embedder/gpu.sh prepare' first" >&2; exit 1; }
	lib=$(hack/provision-onnxruntime.sh cuda | tail -n1)
	capi=$(dirname "$lib")
	rm -rf "$stage"
	mkdir -p "$stage"
	tar -cf - -C "$capi/../.." onnxruntime/capi/libonnxruntime.so.$ORT_GPU_VERSION \
		onnxruntime/capi/libonnxruntime_providers_shared.so onnxruntime/capi/libonnxruntime_providers_cuda.so \
		-C "$root/.cache" gpu-bench |
		xz -6 -T2 | split -b 55m -d - "$stage/part-"
	ls -la "$stage"
	local parts=("$stage"/part-*) last
	last=${parts[-1]}
	for p in "${parts[@]}"; do
		[[ $p == "$last" ]] && break
		echo "run(command=\"true\", carry=[\"$p\"])"
	done
	echo "run(command=\"bash hack/bench-embedder/gpu.sh run\", carry=[\"$last\"], timeout_s=600)"
}

# bench_model NAME LAYERS OUTPUT: fp32 (random weights) against fp16 (real) tokens/s.
bench_model() {
	local name=$1 layers=$2 output=$3 py=$4 work=$5 dev=$6
	local dir=$work/bench-$name
	mkdir -p "$dir"
	"$py" hack/export-model/export.py --random-weights --layers "$layers" --output-name "$output" --name "$name" \
		--tokenizer "$work/gpu-bench/models/$name/tokenizer.json" --out "$work/random-$name" >/dev/null
	cp "$work/random-$name/model.onnx" "$dir/model.onnx"
	cp "$work/gpu-bench/models/$name/"{tokenizer.json,ragops.json,model.fp16.onnx} "$dir/"
	echo "== $name ($layers layers): fp32 (seeded random weights) and fp16 (real weights), $dev, budget 65536, $RAGOPS_BENCH_DOCS documents"
	RAGOPS_MODEL_DIR=$dir RAGOPS_BENCH_DEVICE=$dev RAGOPS_BENCH_PRECISIONS=fp32,fp16 RAGOPS_BENCH_BATCH_TOKENS=65536 \
		timeout 100 "$work/gpu-bench/embedder.test" -test.run '^$' -test.bench 'SciFact' -test.benchtime 3x -test.v ||
		echo "$name fp32/fp16 run failed: exit $?"
	if [[ $name == all-minilm-l6-v2 ]]; then
		echo "== $name fp16 without the batch pipeline (RAGOPS_BENCH_OVERLAP=off), budget 65536"
		RAGOPS_MODEL_DIR=$dir RAGOPS_BENCH_DEVICE=$dev RAGOPS_BENCH_PRECISIONS=fp16 RAGOPS_BENCH_BATCH_TOKENS=65536 RAGOPS_BENCH_OVERLAP=off \
			timeout 40 "$work/gpu-bench/embedder.test" -test.run '^$' -test.bench 'SciFact/fp16' -test.benchtime 3x ||
			echo "overlap off failed: exit $?"
		local b
		for b in 16384 131072 262144; do
			echo "== $name fp16 naive, budget $b"
			RAGOPS_MODEL_DIR=$dir RAGOPS_BENCH_DEVICE=$dev RAGOPS_BENCH_PRECISIONS=fp16 RAGOPS_BENCH_BATCH_TOKENS=$b \
				timeout 40 "$work/gpu-bench/embedder.test" -test.run '^$' -test.bench 'SciFact/fp16/naive' -test.benchtime 3x ||
				echo "budget $b failed: exit $?"
		done
	fi
}

# build_index NAME LATE: the worker of an Index Job (ragops embed, one shard) builds the whole
# SciFact corpus into a local Weaviate with the fp16 MiniLM on the GPU: Sentence 128 chunks,
# naive or late (windows 512/128). Prints the wall time from start to the last chunk written
# and the worker's result (documents, chunks, tokens).
build_index() {
	local name=$1 late=$2 work=$3 dev=$4 lib=$5
	local planfile=$work/plan-$name.json late_json=""
	[[ $late == true ]] && late_json=', "late": {"enabled": true, "window": 512, "windowOverlap": 128}'
	cat >"$planfile" <<-EOF
		{"version": "ragops.dev/plan/v1", "namespace": "gpu-bench", "index": "$name", "revision": "g1",
		 "collection": "GpuBench_$name", "shards": 1,
		 "source": {"dir": "$work/gpu-bench/datasets/scifact", "format": "BEIR", "include": ["corpus.jsonl"]},
		 "strategy": {"type": "Sentence", "size": 128, "unit": "Tokens"$late_json},
		 "modelDir": "$work/gpu-bench/models/all-minilm-l6-v2",
		 "embedder": {"device": "$dev", "precision": "fp16", "threads": 4, "batchTokens": 65536, "shards": 1},
		 "vectorIndex": {"type": "hnsw", "distance": "cosine"},
		 "weaviate": {"url": "http://$RAGOPS_WEAVIATE_HTTP_HOST", "grpcAddress": "$RAGOPS_WEAVIATE_GRPC_HOST"}}
	EOF
	echo "== Index build, SciFact (5,183 abstracts), sentence-128 $([[ $late == true ]] && echo late || echo naive), MiniLM fp16, $dev, one worker"
	local t0=$SECONDS
	timeout 150 "$work/gpu-bench/ragops" embed --plan "$planfile" --onnxruntime-lib "$lib" \
		--termination-log "$work/result-$name.json" --progress-interval 10s 2>&1 | grep -E 'progress|model loaded|level=ERROR' | tail -n 8 ||
		echo "build $name: exit $?"
	echo "wall $((SECONDS - t0)) s; result: $(cat "$work/result-$name.json" 2>/dev/null)"
}

run_gpu() {
	local out=${OUT:-/tmp/gpu-bench-out} dev=${RAGOPS_GPU_BENCH_DEVICE:-cuda}
	mkdir -p "$out"
	exec > >(tee "$out/gpu-bench.txt") 2>&1
	nvidia-smi -L || true
	local py=python3 work=/tmp/ragops-gpu
	mkdir -p "$work"
	if [[ -e "$stage/part-00" ]]; then
		echo "== unpacking $(ls "$stage" | wc -l) staged parts"
		if command -v xz >/dev/null; then
			cat "$stage"/part-* | xz -d | tar -xf - -C "$work"
		else
			cat "$stage"/part-* | "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' | tar -xf - -C "$work"
		fi
	elif [[ -d "$bench" ]]; then
		rm -rf "$work/gpu-bench" && cp -r "$bench" "$work/gpu-bench"
	fi
	[[ -x "$work/gpu-bench/embedder.test" ]] || { echo "missing the staged gpu-bench: see the header of $0" >&2; exit 1; }

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
	[[ -z "$lib" && -f "$work/onnxruntime/capi/libonnxruntime.so.$ORT_GPU_VERSION" ]] &&
		lib=$work/onnxruntime/capi/libonnxruntime.so.$ORT_GPU_VERSION && echo "== ONNX Runtime: staged onnxruntime-gpu $ORT_GPU_VERSION"
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
	[[ -n "$lib" ]] || { echo "no ONNX Runtime with a CUDA execution provider: stage the parts (see the header of $0)"; exit 2; }
	export RAGOPS_ONNXRUNTIME_LIB=$lib RAGOPS_DATASETS=$work/gpu-bench/datasets
	export RAGOPS_BENCH_DOCS=${RAGOPS_BENCH_DOCS:-2000} RAGOPS_BENCH_THREADS=${RAGOPS_BENCH_THREADS:-4}

	local smi=""
	if command -v nvidia-smi >/dev/null; then
		nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 1 >"$out/gpu-util.csv" 2>/dev/null &
		smi=$!
	fi
	bench_model all-minilm-l6-v2 6 token_embeddings "$py" "$work" "$dev"
	bench_model e5-small-v2 12 last_hidden_state "$py" "$work" "$dev"
	local m
	for m in "${models[@]}"; do
		echo "== quality: SciFact, $m fp16 on $dev against fp32 on the CPU"
		timeout 75 "$work/gpu-bench/scifact-model" -model "$work/gpu-bench/models/$m" -datasets "$RAGOPS_DATASETS" \
			-device "$dev" -precision fp16 -batch-tokens 65536 -step 2048 -threads "$RAGOPS_BENCH_THREADS" \
			-reference "$work/gpu-bench/reference/$m.f32" ${RAGOPS_QUALITY_QUERIES:+-queries $RAGOPS_QUALITY_QUERIES} ||
			echo "$m quality run: exit $? (3: nDCG@10 off the published figure by > 1 point; 4: a cosine < 0.999)"
	done
	if [[ -x "$work/gpu-bench/weaviate-server" ]]; then
		export RAGOPS_WEAVIATE_BIN=$work/gpu-bench/weaviate-server RAGOPS_WEAVIATE_STATE=$work/weaviate
		if hack/weaviate.sh start >/dev/null; then
			eval "$(hack/weaviate.sh env | sed 's/^/export /')"
			build_index sentence128 false "$work" "$dev" "$lib"
			build_index sentence128late true "$work" "$dev" "$lib"
			hack/weaviate.sh stop >/dev/null || true
		else
			echo "weaviate did not start: no Index build"
		fi
	fi
	[[ -z "$smi" ]] || { kill "$smi" 2>/dev/null || true; echo "== GPU utilisation (%), samples: $(wc -l <"$out/gpu-util.csv")"; awk -F', ' '{u=$2+0; s+=u; n++; if (u>m) m=u} END {if (n) printf "mean %.0f, max %d\n", s/n, m}' "$out/gpu-util.csv"; }
	if [[ $dev == cuda ]]; then
		local cpudocs=${RAGOPS_BENCH_CPU_DOCS:-300}
		echo "== CPU on the same machine for scale: $(nproc) threads, $cpudocs documents, fp32"
		RAGOPS_MODEL_DIR=$work/bench-all-minilm-l6-v2 RAGOPS_BENCH_DEVICE=cpu RAGOPS_BENCH_THREADS=$(nproc) RAGOPS_BENCH_DOCS=$cpudocs \
			RAGOPS_BENCH_BATCH_TOKENS=4096 timeout 45 "$work/gpu-bench/embedder.test" -test.run '^$' -test.bench 'SciFact' -test.benchtime 1x ||
			echo "cpu run failed: exit $?"
	fi
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
