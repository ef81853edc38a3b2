#!/usr/bin/env python3
"""Adds a half-precision variant to an embedding model folder, for the CUDA execution provider.

    fp16.py --dir MODEL_DIR [--scifact corpus.jsonl] [--sentences 64]

Reads MODEL_DIR/model.onnx (fp32, a BERT encoder with a [batch, sequence, hidden] token
states output) and writes MODEL_DIR/model.fp16.onnx:

1. ONNX Runtime's transformer optimizer (onnxruntime.transformers.optimizer, model_type
   "bert", Python fusions only: opt_level 0) fuses each layer's attention into one
   com.microsoft Attention node, the GELU into (Bias)Gelu and the residual adds with their
   LayerNorms into SkipLayerNormalization. The export refuses a graph in which fewer
   Attention nodes were fused than it has Softmax nodes (layers): an unfused graph runs, but
   slowly, and that is a pattern bug to fix in the exporter.
2. onnxruntime.transformers.float16.convert_float_to_float16 with keep_io_types: weights and
   activations in fp16, inputs int64 and the token states output float32 as before, so the
   embedder's input and output checks and its pooling are unchanged.

Graphs written by export.py scale attention scores with Mul(1/sqrt(d)); the optimizer's
pattern wants Div(sqrt(d)) (PyTorch's), so that node is rewritten first (the fp16 variant
differs from fp32 by far more than that last bit anyway).

Checked before the file is kept: ONNX Runtime (CPU) runs both graphs on --sentences SciFact
abstracts (or fixed ids without --scifact); every mean-pooled fp16 vector must have cosine
>= 0.999 to its fp32 twin. ragops.json gains "precisions": {"fp16": "model.fp16.onnx"},
which embedder.Options.Precision reads. Prints the fused operators, sizes and the worst
cosine.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from onnxruntime.transformers import optimizer
from onnxruntime.transformers.float16 import convert_float_to_float16

MIN_COSINE = 0.999


def scale_mul_to_div(model):
    """Rewrites Mul(MatMul(q, k), c) feeding Add -> Softmax into Div(MatMul(q, k), 1/c)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    rewritten = 0
    for n in list(g.node):
        if n.op_type != "Mul" or len(n.input) != 2:
            continue
        mm, c = (n.input[0], n.input[1]) if n.input[1] in inits else (n.input[1], n.input[0])
        if c not in inits or producers.get(mm) is None or producers[mm].op_type != "MatMul":
            continue
        nxt = consumers.get(n.output[0], [])
        if len(nxt) != 1 or nxt[0].op_type != "Add":
            continue
        if not any(x.op_type == "Softmax" for x in consumers.get(nxt[0].output[0], [])):
            continue
        val = numpy_helper.to_array(inits[c])
        if val.size != 1 or val.reshape(()) == 0:
            continue
        name = c + "_reciprocal"
        if name not in inits:
            t = numpy_helper.from_array(np.asarray(1.0 / val, dtype=val.dtype), name)
            g.initializer.append(t)
            inits[name] = t
        div = helper.make_node("Div", [mm, name], list(n.output), name=n.name + "_div")
        idx = list(g.node).index(n)
        g.node.remove(n)
        g.node.insert(idx, div)
        rewritten += 1
    return rewritten


def feeds(model_path, sentences, tokenizer_path):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    if sentences:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(tokenizer_path)
        tok.enable_truncation(max_length=256)
        encs = [tok.encode(s) for s in sentences]
        seqs = [e.ids for e in encs]
    else:
        rng = np.random.default_rng(7)
        seqs = [[101] + list(rng.integers(1000, 20000, size=n)) + [102] for n in (8, 31, 64, 127)]
    out = []
    for s in seqs:
        ids = np.array([s], np.int64)
        f = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        out.append({k: v for k, v in f.items() if k in names})
    return out


def pooled(model_path, batch_feeds):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return np.stack([sess.run(None, f)[0][0].astype(np.float64).mean(axis=0) for f in batch_feeds])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--scifact", help="SciFact corpus.jsonl: check on its first abstracts")
    ap.add_argument("--sentences", type=int, default=64)
    args = ap.parse_args()
    src = os.path.join(args.dir, "model.onnx")
    dst = os.path.join(args.dir, "model.fp16.onnx")
    cfg_path = os.path.join(args.dir, "ragops.json")
    cfg = json.load(open(cfg_path))

    model = onnx.load(src)
    if any(n.op_type in ("MatMulInteger", "DynamicQuantizeLinear", "QLinearMatMul") for n in model.graph.node):
        sys.exit(f"fp16.py: {src} is quantised (int8); an fp16 variant is made from fp32 weights")
    layers = sum(1 for n in model.graph.node if n.op_type == "Softmax")
    rewritten = scale_mul_to_div(model)
    opt = optimizer.optimize_model(model, model_type="bert", num_heads=0, hidden_size=0, opt_level=0)
    stats = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
    if stats.get("Attention", 0) + stats.get("MultiHeadAttention", 0) < layers:
        sys.exit(f"fp16.py: {src}: {stats.get('Attention', 0)} of {layers} attention layers fused ({stats}); "
                 "fix the graph pattern in the exporter")
    opt.convert_float_to_float16(keep_io_types=True)
    tmp = dst + ".tmp"
    opt.save_model_to_file(tmp)

    sentences = []
    if args.scifact:
        with open(args.scifact) as fh:
            for line in fh:
                d = json.loads(line)
                sentences.append((d.get("title", "") + " " + d["text"]).strip())
                if len(sentences) == args.sentences:
                    break
    f = feeds(src, sentences, os.path.join(args.dir, "tokenizer.json"))
    a, b = pooled(src, f), pooled(tmp, f)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    if cos.min() < MIN_COSINE:
        os.remove(tmp)
        sys.exit(f"fp16.py: {dst}: worst cosine to fp32 {cos.min():.6f} < {MIN_COSINE}")
    os.replace(tmp, dst)
    cfg["precisions"] = {"fp16": "model.fp16.onnx"}
    with open(cfg_path, "w") as fh:
        json.dump(cfg, fh, indent=2)
        fh.write("\n")
    print(f"wrote {dst} ({os.path.getsize(dst) / 1e6:.1f} MB; fp32 {os.path.getsize(src) / 1e6:.1f} MB); "
          f"fused {stats}; {rewritten} score scales rewritten; {len(f)} inputs, cosine to fp32 "
          f"min {cos.min():.6f} mean {cos.mean():.6f}")


if __name__ == "__main__":
    main()
