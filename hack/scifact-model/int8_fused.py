"""Would our own int8 export of e5-small-v2 reach 1.8x fp32 where the published one does not?

The Maven int8 export (`e5-small-v2-q.onnx`) quantises every linear layer but leaves attention
unfused (BENCHMARKS.md, "int8 against fp32"). This probe builds the other export the notes
name: ONNX Runtime's transformer optimiser fuses the fp32 graph first (Attention,
SkipLayerNormalization, BiasGelu; as hack/export-model/fp16.py), then
onnxruntime.quantization.quantize_dynamic quantises it (Attention -> QAttention, MatMul ->
DynamicQuantizeMatMul), per tensor or per channel. Every graph then embeds the same SciFact
abstracts side by side in this process (one intra-op thread, 512 padded tokens per batch:
the embedder's CPU default), and each int8 graph's mean-pooled vectors are compared with
fp32's (cosine per abstract).

    .cache/export-model/models-venv/bin/python hack/scifact-model/int8_fused.py \
        [-docs 48] [-rounds 3] [-datasets ../shared/datasets] [-models .cache/models] [-out .cache/int8-fused]

Prints one Markdown row per graph: tokens per CPU-second (median of the rounds), its ratio to
fp32, and the worst and mean cosine to fp32.
"""

import argparse
import json
import os
import statistics
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.transformers import optimizer
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_settings import cpu_seconds, padded_batches, session  # noqa: E402

BUDGET = 512


def fused(src, dst):
    model = onnx.load(src)
    layers = sum(1 for n in model.graph.node if n.op_type == "Softmax")
    opt = optimizer.optimize_model(model, model_type="bert", num_heads=0, hidden_size=0, opt_level=0)
    stats = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
    if stats.get("Attention", 0) < layers:
        sys.exit(f"{src}: {stats.get('Attention', 0)} of {layers} attention layers fused ({stats})")
    opt.save_model_to_file(dst)
    return stats


def pooled_pass(sess, enc):
    out = [None] * len(enc)
    for b, feeds in padded_batches(enc, BUDGET):
        h = sess.run(None, feeds)[0]
        for k, i in enumerate(b):
            v = h[k, : len(enc[i])].astype(np.float64).mean(axis=0)
            out[i] = v / np.linalg.norm(v)
    return np.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-docs", type=int, default=48)
    ap.add_argument("-rounds", type=int, default=3)
    ap.add_argument("-datasets", default="../shared/datasets")
    ap.add_argument("-models", default=".cache/models")
    ap.add_argument("-out", default=".cache/int8-fused")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fp32 = os.path.join(a.models, "e5-small-v2", "model.onnx")
    graphs = {
        "fp32 (Maven)": fp32,
        "int8 (Maven, unfused)": os.path.join(a.models, "e5-small-v2-int8", "model.onnx"),
    }
    f32f = os.path.join(a.out, "fused.fp32.onnx")
    stats = fused(fp32, f32f)
    print(f"fused: {stats}")
    graphs["fp32 fused"] = f32f
    for label, per_channel, wt in (
        ("int8 fused, per tensor, QInt8", False, QuantType.QInt8),
        ("int8 fused, per channel, QInt8", True, QuantType.QInt8),
        ("int8 fused, per tensor, QUInt8", False, QuantType.QUInt8),
    ):
        dst = os.path.join(a.out, label.replace(" ", "").replace(",", "_") + ".onnx")
        # Shape inference cannot type the outputs of com.microsoft ops (Attention & co.).
        quantize_dynamic(f32f, dst, per_channel=per_channel, weight_type=wt,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        ops = {}
        for n in onnx.load(dst).graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        print(f"{label}: {os.path.getsize(dst) / 1e6:.0f} MB, QAttention {ops.get('QAttention', 0)}, "
              f"DynamicQuantizeMatMul {ops.get('DynamicQuantizeMatMul', 0)}, MatMulInteger {ops.get('MatMulInteger', 0)}")
        graphs[label] = dst

    with open(os.path.join(a.datasets, "scifact", "corpus.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(a.docs), f)]
    tok = Tokenizer.from_file(os.path.join(a.models, "e5-small-v2", "tokenizer.json"))
    tok.enable_truncation(512)
    enc = [tok.encode("passage: " + (d["title"] + " " + d["text"]).strip()).ids for d in docs]
    tokens = sum(len(e) for e in enc)
    print(f"{len(docs)} SciFact abstracts, {tokens} tokens, onnxruntime {ort.__version__}, "
          f"1 thread, {BUDGET} padded tokens per batch, {a.rounds} rounds")

    sessions = {k: session(p, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, 1) for k, p in graphs.items()}
    vecs = {k: pooled_pass(s, enc) for k, s in sessions.items()}  # warm-up and vectors
    tps = {k: [] for k in sessions}
    for r in range(a.rounds):
        order = list(sessions) if r % 2 == 0 else list(reversed(sessions))
        for k in order:
            c = cpu_seconds()
            pooled_pass(sessions[k], enc)
            tps[k].append(tokens / (cpu_seconds() - c))
    base = statistics.median(tps["fp32 (Maven)"])
    print("| graph | tokens per CPU-second (median) | / fp32 | worst cosine to fp32 | mean cosine |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for k in sessions:
        cos = (vecs[k] * vecs["fp32 (Maven)"]).sum(axis=1)
        m = statistics.median(tps[k])
        print(f"| {k} | {m:,.0f} | {m / base:.2f}x | {cos.min():.4f} | {cos.mean():.4f} |", flush=True)


if __name__ == "__main__":
    main()
