"""Python peer for hack/bench-embedder: the same documents and chunk spans (written by the Go
benchmark with -spans), the same model.onnx, run with onnxruntime + HF tokenizers (pinned in
hack/export-model/requirements.txt) with the same batching: length-sorted batches under a
4,096 padded-token budget (at most 256 sequences), mean pooling, L2 normalisation; late
chunking with the same windows. Prints one JSON result per phase, like the Go side.
Tokens are counted the same way (real tokens incl. [CLS]/[SEP], padding excluded).

Usage: peer.py --model DIR --spans spans.jsonl [--threads 1]
"""

import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

BUDGET, MAX_BATCH = 4096, 256  # the Go embedder's defaults; --batch-tokens overrides


def session(model_dir, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])


def batches(lengths):
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    i = 0
    while i < len(order):
        longest = lengths[order[i]]
        j = i + 1
        while j < len(order) and j - i < MAX_BATCH and (j - i + 1) * longest <= BUDGET:
            j += 1
        yield order[i:j]
        i = j


def encode(sess, seqs, consume):
    """Runs id sequences through the model in sorted token-budget batches."""
    lengths = [len(s) for s in seqs]
    for b in batches(lengths):
        s = max(lengths[i] for i in b)
        ids = np.zeros((len(b), s), np.int64)
        mask = np.zeros((len(b), s), np.int64)
        for k, i in enumerate(b):
            ids[k, :lengths[i]] = seqs[i]
            mask[k, :lengths[i]] = 1
        out = sess.run(["token_embeddings"], {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
        for k, i in enumerate(b):
            consume(i, out[k, :lengths[i]])


def normalize(v):
    return v / np.linalg.norm(v)


def naive(tok, sess, docs, cls, sep, limit):
    texts = [d["text"].encode("utf-8")[a:b].decode("utf-8") for d in docs for a, b in d["spans"]]
    encs = tok.encode_batch(texts, add_special_tokens=False)
    seqs = [[cls] + e.ids[:limit] + [sep] for e in encs]
    out = [None] * len(seqs)

    def consume(i, states):
        out[i] = normalize(states.mean(0))

    encode(sess, seqs, consume)
    return out, sum(len(s) for s in seqs)


def plan_windows(n, size, overlap):
    if n <= size:
        return [(0, n)]
    stride, out, s = size - overlap, [], 0
    while True:
        if s + size >= n:
            out.append((n - size, n))
            return out
        out.append((s, s + size))
        s += stride


def best_window(n, wins):
    best, score = [0] * n, [-1] * n
    for w, (a, b) in enumerate(wins):
        for i in range(a, b):
            left = n if a == 0 else i - a
            right = n if b == n else b - 1 - i
            c = min(left, right)
            if c > score[i]:
                score[i], best[i] = c, w
    return best


def late(tok, sess, docs, cls, sep, window, overlap):
    size = window - 2
    encs = tok.encode_batch([d["text"] for d in docs], add_special_tokens=False)
    seqs, plan = [], []
    for e in encs:
        wins = plan_windows(len(e.ids), size, overlap)
        plan.append((len(seqs), wins))
        for a, b in wins:
            seqs.append([cls] + e.ids[a:b] + [sep])
    states = [None] * len(seqs)

    def consume(i, s):
        states[i] = s

    encode(sess, seqs, consume)
    out = []
    for d, e, (first, wins) in zip(docs, encs, plan):
        n = len(e.ids)
        best = best_window(n, wins)
        tok_states = np.stack([states[first + best[i]][1 + i - wins[best[i]][0]] for i in range(n)])
        cls_s, sep_s = states[first][0], states[first + len(wins) - 1][-1]
        # Byte offsets of token starts (tokenizers reports code-point offsets).
        text = d["text"]
        pos = [0]
        for ch in text:
            pos.append(pos[-1] + len(ch.encode("utf-8")))
        starts = np.array([pos[s] for s, _ in e.offsets])
        for a, b in d["spans"]:
            i = int(np.searchsorted(starts, a, "left"))
            j = int(np.searchsorted(starts, b, "left"))
            rows = [tok_states[i:j]]
            if i == 0:
                rows.append(cls_s[None])
            if j == n:
                rows.append(sep_s[None])
            out.append(normalize(np.concatenate(rows).mean(0)))
    return out, sum(len(s) for s in seqs)


def main():
    global BUDGET
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--spans", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-tokens", type=int, default=BUDGET)
    ap.add_argument("--go-vectors", help="the Go side's naive vectors (float32 LE) to cross-check")
    args = ap.parse_args()
    BUDGET = args.batch_tokens
    conf = json.load(open(os.path.join(args.model, "ragops.json")))
    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    docs = [json.loads(l) for l in open(args.spans, encoding="utf-8")]
    sess = session(args.model, args.threads)
    naive(tok, sess, docs[:4], cls, sep, conf["maxPositions"] - 2)  # warm-up
    chunks = sum(len(d["spans"]) for d in docs)
    for phase in ("naive", "late"):
        t0, c0, extra = time.perf_counter(), time.process_time(), {}
        if phase == "naive":
            vecs, tokens = naive(tok, sess, docs, cls, sep, conf["maxPositions"] - 2)
        else:
            vecs, tokens = late(tok, sess, docs, cls, sep, conf["maxPositions"], conf["maxPositions"] // 2)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert len(vecs) == chunks
        if phase == "naive" and args.go_vectors:
            gv = np.fromfile(args.go_vectors, np.float32).reshape(len(vecs), -1).astype(np.float64)
            pv = np.stack(vecs).astype(np.float64)
            cos = (gv * pv).sum(1) / np.linalg.norm(gv, axis=1) / np.linalg.norm(pv, axis=1)
            extra["minCosineVsGo"] = float(cos.min())
        print(json.dumps({"impl": "python", "phase": phase, "tokens": tokens, "chunks": chunks, "wallS": wall,
                          "cpuS": cpu, "tokensPerS": tokens / wall, "tokensPerCpuS": tokens / cpu, **extra}), flush=True)


if __name__ == "__main__":
    main()
