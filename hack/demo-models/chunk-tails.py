"""Where does a fixed-507 SciFact Index lose against whole abstracts? (docs/results.md, "SciFact per
model through the operator".)

Reads every chunk vector of a `make demo-models` collection back from Weaviate, embeds the 300
SciFact test queries with the model's ONNX graph in Python ONNX Runtime ("query: " prefix, mean
pooling: the e5 models), and ranks documents by their best chunk with exact cosine search, as
the Evaluation does. It prints nDCG@10 for the whole-abstract vectors of hack/scifact-model
(-vectors FILE), for all chunks, and for the first chunk of each document only, and the cosine
between each single-chunk document's vector in Weaviate and its whole-abstract vector.

  .cache/export-model/models-venv/bin/python hack/demo-models/chunk-tails.py \\
      COLLECTION .cache/models/e5-small-v2 VECTORS.f32 [DATASETS] [WEAVIATE_URL]
"""
import json
import math
import sys
import urllib.request

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

collection, model, vectors = sys.argv[1:4]
data = (sys.argv[4] if len(sys.argv) > 4 else "../shared/datasets") + "/scifact"
weaviate = sys.argv[5] if len(sys.argv) > 5 else "http://127.0.0.1:18080"

ids = [json.loads(line)["_id"] for line in open(f"{data}/corpus.jsonl")]
queries = {d["_id"]: d["text"] for d in map(json.loads, open(f"{data}/queries.jsonl"))}
qrels = {}
for line in open(f"{data}/qrels/test.tsv"):
    q, d, rel = line.split()[:3]
    if rel.isdigit():
        qrels.setdefault(q, {})[d] = int(rel)

tok = Tokenizer.from_file(f"{model}/tokenizer.json")
sess = ort.InferenceSession(f"{model}/model.onnx", providers=["CPUExecutionProvider"])
inputs = [i.name for i in sess.get_inputs()]
qids = list(qrels)
Q = []
for q in qids:
    ii = np.array([tok.encode("query: " + queries[q]).ids], dtype=np.int64)
    feed = {"input_ids": ii, "attention_mask": np.ones_like(ii)}
    if "token_type_ids" in inputs:
        feed["token_type_ids"] = np.zeros_like(ii)
    v = sess.run(None, feed)[0][0].mean(0)
    Q.append(v / np.linalg.norm(v))
Q = np.array(Q)

whole = np.frombuffer(open(vectors, "rb").read(), dtype=np.float32).reshape(len(ids), -1)
whole = whole / np.linalg.norm(whole, axis=1, keepdims=True)

objs, after = [], None
while True:
    url = f"{weaviate}/v1/objects?class={collection}&limit=500&include=vector" + (f"&after={after}" if after else "")
    page = json.load(urllib.request.urlopen(url)).get("objects") or []
    if not page:
        break
    objs += page
    after = page[-1]["id"]
chunks = np.array([o["vector"] for o in objs], dtype=np.float32)
chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
doc = [o["properties"]["docId"] for o in objs]
ordinal = [o["properties"]["chunkOrdinal"] for o in objs]
per_doc = {d: doc.count(d) for d in set(doc)}


def ndcg10(ranked, rel):
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if rel.get(d, 0) > 0)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, sum(1 for v in rel.values() if v > 0))))
    return dcg / ideal


def best_chunk(keep):
    def rank(qi):
        scores, best = chunks @ Q[qi], {}
        for j in np.argsort(-scores):
            if keep[j] and doc[j] not in best:
                best[doc[j]] = scores[j]
                if len(best) == 10:
                    break
        return list(best)
    return rank


def mean_ndcg(rank):
    return sum(ndcg10(rank(qi), qrels[q]) for qi, q in enumerate(qids)) / len(qids)


pos = {d: i for i, d in enumerate(ids)}
single = [float(chunks[j] @ whole[pos[doc[j]]]) for j in range(len(objs)) if per_doc[doc[j]] == 1]
print(f"{len(objs)} chunks of {len(per_doc)} documents; {len(single)} single-chunk documents, "
      f"cosine to the whole-abstract vector: min {min(single):.6f}")
print(f"nDCG@10 whole abstracts: {mean_ndcg(lambda qi: [ids[j] for j in np.argsort(-(whole @ Q[qi]))[:10]]):.4f}")
print(f"nDCG@10 best chunk per document: {mean_ndcg(best_chunk([True] * len(objs))):.4f}")
print(f"nDCG@10 first chunks only: {mean_ndcg(best_chunk([o == 0 for o in ordinal])):.4f}")
