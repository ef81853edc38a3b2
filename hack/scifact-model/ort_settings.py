"""int8 against fp32 e5-small-v2 under ONNX Runtime session settings, side by side.

Which setting, if any, raises the int8 export's speed over fp32? For each setting (graph
optimisation level, intra-op threads, padded tokens per batch) both models are loaded with
it, warmed up once, then embed the same SciFact abstracts ("passage: " + title + " " + text,
cut to 512 positions, length-sorted batches under the token budget as package embedder
batches them), one after the other in this process; tokens per CPU-second is real tokens
(padding excluded) over this process's user + system CPU time around each pass.

    .cache/export-model/models-venv/bin/python hack/scifact-model/ort_settings.py \
        [-docs 32] [-datasets ../shared/datasets] [-models .cache/models]

The venv is the one hack/export-model/models.sh builds (onnxruntime 1.24.3, the library the
Go embedder loads, and tokenizers 0.22.1). It prints one Markdown row per setting.
"""

import argparse
import json
import os
import resource

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

MODELS = ("e5-small-v2-int8", "e5-small-v2")
LEVELS = ort.GraphOptimizationLevel
# (label, graph optimisation level, intra-op threads, padded tokens per batch; 1 = one
# sequence per batch)
SETTINGS = [
    ("ORT_ENABLE_ALL (the default), 1 thread, 4096 tokens", LEVELS.ORT_ENABLE_ALL, 1, 4096),
    ("ORT_ENABLE_EXTENDED, 1 thread, 4096", LEVELS.ORT_ENABLE_EXTENDED, 1, 4096),
    ("ORT_ENABLE_BASIC, 1 thread, 4096", LEVELS.ORT_ENABLE_BASIC, 1, 4096),
    ("ORT_ENABLE_ALL, 2 threads, 4096", LEVELS.ORT_ENABLE_ALL, 2, 4096),
    ("ORT_ENABLE_ALL, 1 thread, 2048", LEVELS.ORT_ENABLE_ALL, 1, 2048),
    ("ORT_ENABLE_ALL, 1 thread, 512", LEVELS.ORT_ENABLE_ALL, 1, 512),
    ("ORT_ENABLE_ALL, 1 thread, one sequence per batch", LEVELS.ORT_ENABLE_ALL, 1, 1),
]


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def batches(lengths, budget):
    """Length-sorted (longest first) index batches with len(batch) * longest <= budget."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out, cur = [], []
    for i in order:
        if cur and (len(cur) + 1) * lengths[cur[0]] > budget:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def padded_batches(enc, budget):
    """Yields (batch indices, BERT input feeds padded to the batch's longest sequence)."""
    for b in batches([len(e) for e in enc], budget):
        width = len(enc[b[0]])
        ids = np.zeros((len(b), width), np.int64)
        mask = np.zeros_like(ids)
        for k, i in enumerate(b):
            ids[k, : len(enc[i])] = enc[i]
            mask[k, : len(enc[i])] = 1
        yield b, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def embed_pass(sess, enc, budget):
    for _, feeds in padded_batches(enc, budget):
        sess.run(None, feeds)


def session(path, level, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as package embedder
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-docs", type=int, default=32)
    ap.add_argument("-datasets", default="../shared/datasets")
    ap.add_argument("-models", default=".cache/models")
    a = ap.parse_args()
    with open(os.path.join(a.datasets, "scifact", "corpus.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(a.docs), f)]
    tok = Tokenizer.from_file(os.path.join(a.models, MODELS[1], "tokenizer.json"))
    tok.enable_truncation(512)
    enc = [tok.encode("passage: " + (d["title"] + " " + d["text"]).strip()).ids for d in docs]
    tokens = sum(len(e) for e in enc)
    print(f"{len(docs)} SciFact abstracts, {tokens} tokens, onnxruntime {ort.__version__}")
    print("| setting | int8 tokens/CPU-s | fp32 tokens/CPU-s | int8 / fp32 |")
    print("| --- | ---: | ---: | ---: |")
    for label, level, threads, budget in SETTINGS:
        sessions = {m: session(os.path.join(a.models, m, "model.onnx"), level, threads) for m in MODELS}
        for s in sessions.values():
            embed_pass(s, enc, budget)  # warm-up
        tps = {}
        for m, s in sessions.items():
            c = cpu_seconds()
            embed_pass(s, enc, budget)
            tps[m] = tokens / (cpu_seconds() - c)
        i8, f32 = tps[MODELS[0]], tps[MODELS[1]]
        print(f"| {label} | {i8:,.0f} | {f32:,.0f} | {i8 / f32:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
