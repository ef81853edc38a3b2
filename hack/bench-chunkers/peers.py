"""Prepare the benchmark texts and time the Python peer chunkers on them.

  peers.py prepare DATASETS OUTDIR   writes OUTDIR/{scifact,qmsum,markdown}.json (lists of texts)
  peers.py bench DOCS CORPUS SIZE REPS  prints one JSON line per peer strategy
  peers.py table RESULTS BENCHMARKS_MD  prints the table and writes it under "## Chunkers"
"""
import json
import os
import sys
import time


def prepare(datasets, outdir, repo):
    def corpus(name, n):
        docs = []
        with open(os.path.join(datasets, name, "corpus.jsonl"), encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                docs.append(d["title"] + "\n\n" + d["text"] if d.get("title") else d["text"])
                if len(docs) == n:
                    break
        return docs
    md = []
    for name in ("goldmark-README.md", "logr-README.md"):
        with open(os.path.join(repo, "chunkers/testdata/markdown", name), encoding="utf-8") as f:
            md.append(f.read())
    for name, docs in (("scifact", corpus("scifact", 500)), ("qmsum", corpus("qmsum", 5)), ("markdown", md * 20)):
        with open(os.path.join(outdir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(docs, f)


def peers(size):
    from chonkie import RecursiveChunker, SentenceChunker, TokenChunker
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    import semchunk

    tok = TokenChunker(tokenizer="character", chunk_size=size, chunk_overlap=0)
    sent = SentenceChunker(tokenizer="character", chunk_size=size, chunk_overlap=0)
    rec = RecursiveChunker(tokenizer="character", chunk_size=size)
    lrec = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0)
    lmd = MarkdownHeaderTextSplitter(headers_to_split_on=[("#" * i, "h%d" % i) for i in range(1, 7)])
    sem = semchunk.chunkerify(len, size)
    return [
        ("chonkie 1.7.0 TokenChunker", "Fixed", lambda t: [c.text for c in tok.chunk(t)]),
        ("chonkie 1.7.0 SentenceChunker", "Sentence", lambda t: [c.text for c in sent.chunk(t)]),
        ("chonkie 1.7.0 RecursiveChunker", "Recursive", lambda t: [c.text for c in rec.chunk(t)]),
        ("langchain-text-splitters 1.1.3 RecursiveCharacterTextSplitter", "Recursive", lrec.split_text),
        ("semchunk 4.1.1", "Recursive", sem),
        ("langchain-text-splitters 1.1.3 MarkdownHeaderTextSplitter", "Heading",
         lambda t: [d.page_content for d in lmd.split_text(t)]),
    ]


def bench(docs_path, corpus, size, reps):
    with open(docs_path, encoding="utf-8") as f:
        docs = json.load(f)
    total = sum(len(d.encode("utf-8")) for d in docs)
    for tool, strategy, fn in peers(size):
        best = float("inf")
        for _ in range(reps):
            start = time.perf_counter()
            out = [fn(d) for d in docs]
            best = min(best, time.perf_counter() - start)
        chunks = [c for cs in out for c in cs]
        print(json.dumps({"corpus": corpus, "tool": tool, "strategy": strategy, "mbps": total / best / 1e6,
                          "chunks": len(chunks), "mean": sum(len(c) for c in chunks) / max(len(chunks), 1)}))


def table(results_path, md_path):
    rows = [json.loads(l) for l in open(results_path, encoding="utf-8") if l.strip()]
    lines = ["| corpus | strategy | tool | MB/s | chunks | mean size (chars) | ragops / this |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for corpus in ("scifact", "qmsum", "markdown"):
        for strategy in ("Fixed", "Sentence", "Recursive", "Heading"):
            group = [r for r in rows if r["corpus"] == corpus and r["strategy"] == strategy]
            ours = [r for r in group if r["tool"] == "ragops"]
            if not ours or len(group) < 2:
                continue
            for r in sorted(group, key=lambda r: r["tool"] != "ragops"):
                ratio = "" if r["tool"] == "ragops" else "%.1fx" % (ours[0]["mbps"] / r["mbps"])
                lines.append("| %s | %s | %s | %.1f | %d | %.0f | %s |" % (
                    corpus, strategy, r["tool"], r["mbps"], r["chunks"], r["mean"], ratio))
    text = "\n".join(lines)
    print(text)
    intro = ("Command: `hack/bench-chunkers/run.sh` (size 512 characters, overlap 0, best of 3 runs over all "
             "documents of each corpus in one process per tool: SciFact first 500 abstracts, QMSum first 5 "
             "meeting transcripts, two Markdown READMEs x 20). MB/s counts UTF-8 bytes. ragops chunks carry exact "
             "byte offsets; the peers return strings. Per-strategy Go benchmarks: "
             "`go test -run '^$' -bench . ./chunkers`.\n\n")
    with open(md_path, encoding="utf-8") as f:
        md = f.read()
    head = "## Chunkers\n"
    i = md.index(head) + len(head)
    # Replace the intro and the first table only: the prose under it (the run's machine and
    # reading, the CPU-time comparison) and the subsections (earlier runs kept for comparison,
    # the long-document benchmarks) stay, to be edited by whoever publishes the run.
    t = md.find("\n| corpus | strategy | tool |", i)
    ends = [k for k in (md.find("\n## ", i), md.find("\n### ", i)) if k >= 0]
    section_end = min(ends) + 1 if ends else len(md)
    if 0 <= t < section_end:
        j = t + 1
        while md.startswith("|", j):
            j = md.index("\n", j) + 1
    else:
        j = section_end
    md = md[:i] + "\n" + intro + text + "\n" + md[j:]
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(md)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "prepare":
        prepare(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "bench":
        bench(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "table":
        table(sys.argv[2], sys.argv[3])
