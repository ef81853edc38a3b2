#!/usr/bin/env python3
"""Cut a reproducible subset out of a legalqa-nl BEIR folder, in place.

    hack/demo/legalnl-subset.py DIR [--max-judged-words W] [--distractors N]
                                    [--max-distractor-words D] [--seed S]

Keeps every judged law (a law named in qrels/dev.tsv) of at most W words (0: all 14), and
N unjudged laws drawn with random.Random(S) from the unjudged laws of at most D words (in
corpus order before drawing, so the draw depends only on the data and the seed). Rewrites
corpus.jsonl, qrels/dev.tsv, qrels/dev_articles.tsv, queries.jsonl and query_spans.jsonl so
that they hold only the kept laws and the questions judged on them, and prints the laws kept.

The defaults are the `make demo-legalnl` subset: the 7 judged laws under 24,000 words (12 dev
questions) and 20 distractors of at most 10,000 words, seed 15. Words are whitespace-separated
tokens of the law's text. Used by hack/demo.sh (RAGOPS_DEMO_DOCS) and for
`go run ./hack/measure-legalnl -data DIR`.
"""
import argparse
import json
import os
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--max-judged-words", type=int, default=24000)
    ap.add_argument("--distractors", type=int, default=20)
    ap.add_argument("--max-distractor-words", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()

    corpus = os.path.join(a.dir, "corpus.jsonl")
    lines = open(corpus, encoding="utf-8").read().splitlines()
    docs = [(json.loads(l)["_id"], len(json.loads(l)["text"].split()), l) for l in lines]
    words = {i: w for i, w, _ in docs}
    qrels = os.path.join(a.dir, "qrels", "dev.tsv")
    rows = open(qrels, encoding="utf-8").read().splitlines()
    judged = {r.split("\t")[1] for r in rows[1:]}
    keep_judged = {i for i in judged if a.max_judged_words == 0 or words[i] <= a.max_judged_words}
    pool = [i for i, w, _ in docs if i not in judged and w <= a.max_distractor_words]
    if a.distractors > len(pool):
        raise SystemExit(f"{a.distractors} distractors asked, {len(pool)} unjudged laws of at most {a.max_distractor_words} words")
    distractors = set(random.Random(a.seed).sample(pool, a.distractors))
    keep = keep_judged | distractors

    kept_lines = [l for i, _, l in docs if i in keep]
    open(corpus, "w", encoding="utf-8").write("\n".join(kept_lines) + "\n")
    kept_rows = [rows[0]] + [r for r in rows[1:] if r.split("\t")[1] in keep]
    open(qrels, "w", encoding="utf-8").write("\n".join(kept_rows) + "\n")
    queries = {r.split("\t")[0] for r in kept_rows[1:]}

    arts = os.path.join(a.dir, "qrels", "dev_articles.tsv")
    if os.path.exists(arts):
        rs = open(arts, encoding="utf-8").read().splitlines()
        rs = [rs[0]] + [r for r in rs[1:] if r.split("\t")[0] in queries]
        open(arts, "w", encoding="utf-8").write("\n".join(rs) + "\n")
    for name, key in (("queries.jsonl", "_id"), ("query_spans.jsonl", "query-id")):
        p = os.path.join(a.dir, name)
        if os.path.exists(p):
            ls = [l for l in open(p, encoding="utf-8").read().splitlines() if l and json.loads(l)[key] in queries]
            open(p, "w", encoding="utf-8").write("\n".join(ls) + "\n")

    print(f"subset: {len(kept_lines)} laws ({len(keep_judged)} judged, {len(distractors)} distractors, seed {a.seed}), "
          f"{sum(words[i] for i in keep):,} words, {len(queries)} questions")
    print("judged:", " ".join(sorted(keep_judged)))
    print("distractors:", " ".join(sorted(distractors)))


if __name__ == "__main__":
    main()
