#!/usr/bin/env python3
"""Write the QMSum val meetings as a BEIR folder for hack/measure-legalnl.

    hack/qmsum-late/subset.py QMSUM_DIR OUT_DIR

Keeps the 35 meetings of the val split (corpus metadata.split == "val"), the val specific
queries (qrels/val.tsv, each judged on its one meeting) and their query_spans.jsonl lines,
and writes qrels/val.tsv as qrels/dev.tsv (the split measure-legalnl evaluates). The val
meetings are ~365,000 words (~480,000 MiniLM tokens), a seventh of the corpus: small enough
to embed each model four times (naive, late windows 128, 256, 512) on 2 cores.
"""
import json
import os
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "qrels"), exist_ok=True)
    keep = set()
    with open(os.path.join(src, "corpus.jsonl")) as f, open(os.path.join(out, "corpus.jsonl"), "w") as w:
        for line in f:
            d = json.loads(line)
            if d["metadata"]["split"] == "val":
                keep.add(d["_id"])
                w.write(line)
    queries = set()
    with open(os.path.join(src, "qrels", "val.tsv")) as f, open(os.path.join(out, "qrels", "dev.tsv"), "w") as w:
        for i, line in enumerate(f):
            if i == 0:
                w.write(line)
                continue
            q, d, _ = line.rstrip("\n").split("\t")
            if d not in keep:
                sys.exit(f"val query {q} is judged on {d}, which is not a val meeting")
            queries.add(q)
            w.write(line)
    for name in ("queries.jsonl", "query_spans.jsonl"):
        with open(os.path.join(src, name)) as f, open(os.path.join(out, name), "w") as w:
            for line in f:
                d = json.loads(line)
                if d.get("_id", d.get("query-id")) in queries:
                    w.write(line)
    print(f"{len(keep)} meetings, {len(queries)} queries -> {out}")


if __name__ == "__main__":
    main()
