"""Score TREC runs against BEIR qrels with pytrec_eval (trec_eval 9.x) for the Go parity test.

usage: reference.py CUTOFFS OUT.tsv[.gz] RUN QRELS [RUN QRELS ...]
  CUTOFFS  comma-separated cut-offs, e.g. 1,3,5,10,100
  RUN      TREC run file (qid Q0 docid rank score tag), optionally .gz
  QRELS    BEIR qrels TSV (query-id, corpus-id, score; header optional)
Writes OUT.tsv (gzip-compressed, reproducibly, when it ends in .gz) lines "fixture<TAB>qid<TAB>metric<TAB>value" (value with 17 significant digits).

Mapping to the Go names (evaluator/metrics):
  ndcg@k    = ndcg_cut_k      recall@k = recall_k       map@k = map_cut_k
  success@k = success_k       mrr@k    = recip_rank on the run cut to its top k, ordered as
                                          trec_eval orders it (score desc, docno desc)
Queries judged but absent from the run score 0 (trec_eval -c); queries without a document of
grade >= 1 are left out, as in the Go evaluator.
"""
import gzip
import io
import sys

import pytrec_eval


def read_run(path):
    opener = gzip.open if path.endswith(".gz") else open
    run = {}
    with opener(path, "rt") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                sys.exit(f"{path}:{n}: want 6 fields, got {len(parts)}")
            qid, _, doc, _, score, _ = parts
            run.setdefault(qid, {})[doc] = float(score)
    return run


def read_qrels(path):
    qrels = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if n == 1 and parts[0] == "query-id":
                continue
            if len(parts) != 3:
                sys.exit(f"{path}:{n}: want 3 fields")
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def top_k(docs, k):
    ranked = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    return dict(ranked[:k])


def main():
    if len(sys.argv) < 5 or len(sys.argv) % 2 == 0:
        sys.exit(__doc__)
    cutoffs = [int(k) for k in sys.argv[1].split(",")]
    path = sys.argv[2]
    if path.endswith(".gz"):
        out = io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8", newline="\n")
    else:
        out = open(path, "w", newline="\n")
    ks = ",".join(map(str, cutoffs))
    for i in range(3, len(sys.argv), 2):
        run_path, qrels_path = sys.argv[i], sys.argv[i + 1]
        fixture = run_path.rsplit("/", 1)[-1]
        run, qrels = read_run(run_path), read_qrels(qrels_path)
        qrels = {q: j for q, j in qrels.items() if any(g >= 1 for g in j.values())}
        run = {q: docs for q, docs in run.items() if q in qrels}
        ev = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{ks}", f"recall.{ks}", f"map_cut.{ks}", f"success.{ks}"})
        full = ev.evaluate(run)
        rr = {k: pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(
            {q: top_k(docs, k) for q, docs in run.items()}) for k in cutoffs}
        for q in sorted(qrels):
            for k in cutoffs:
                vals = {
                    f"ndcg@{k}": full.get(q, {}).get(f"ndcg_cut_{k}", 0.0),
                    f"recall@{k}": full.get(q, {}).get(f"recall_{k}", 0.0),
                    f"map@{k}": full.get(q, {}).get(f"map_cut_{k}", 0.0),
                    f"success@{k}": full.get(q, {}).get(f"success_{k}", 0.0),
                    f"mrr@{k}": rr[k].get(q, {}).get("recip_rank", 0.0),
                }
                for name, v in sorted(vals.items()):
                    out.write(f"{fixture}\t{q}\t{name}\t{v:.17g}\n")
    out.close()


if __name__ == "__main__":
    main()
