"""Python peers for hack/bench-ingest: the ingestion script a team would write with LlamaIndex
or LangChain (pinned in requirements.txt) on the same BEIR corpus, the same model.onnx and the
same Weaviate as ragops. Each run reads corpus.jsonl, builds each document's text as ragops's
BEIR reader does (the title with its whitespace collapsed, a blank line, the text), splits it
into chunks of at most SIZE tokens of the model's own tokenizer with OVERLAP tokens of
overlap, embeds the chunks with onnxruntime (mean pooling over the attention mask, L2
normalisation, the document prefix of ragops.json; batches of --batch chunks in the
splitter's order, padded to the longest) and writes them through the framework's
WeaviateVectorStore into a new collection. Nothing touches the network but Weaviate: the
tokenizer and the embedding model are given explicitly (no tiktoken, OpenAI or hub default).

Prints one JSON line: documents, chunks, encodedTokens (real tokens incl. [CLS]/[SEP], as
ragops counts them) and the peer's own wall seconds per phase.

Usage: peers.py llamaindex|langchain --corpus corpus.jsonl --model DIR --http HOST:PORT
       --grpc HOST:PORT --collection NAME [--size 128] [--overlap 16] [--batch 32] [--threads 1]
"""

import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


class OnnxEncoder:
    """model.onnx + tokenizer.json as ragops.json describes them (mean or CLS pooling)."""

    def __init__(self, model_dir, threads):
        self.conf = json.load(open(os.path.join(model_dir, "ragops.json")))
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.enable_truncation(max_length=self.conf["maxPositions"])
        self.tok.enable_padding()
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so,
                                         providers=["CPUExecutionProvider"])
        names = self.conf.get("inputs", {})
        self.in_ids = names.get("inputIds", "input_ids")
        self.in_mask = names.get("attentionMask", "attention_mask")
        self.in_types = names.get("tokenTypeIds", "")
        self.output = self.conf.get("tokenStatesOutput", "token_embeddings")
        self.tokens = 0

    def count(self, text):
        """Tokens of text without special tokens: the splitters' length function."""
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def embed(self, texts, prefix):
        encs = self.tok.encode_batch([prefix + t for t in texts])
        ids = np.array([e.ids for e in encs], np.int64)
        mask = np.array([e.attention_mask for e in encs], np.int64)
        feed = {self.in_ids: ids, self.in_mask: mask}
        if self.in_types:
            feed[self.in_types] = np.zeros_like(ids)
        states = self.sess.run([self.output], feed)[0]
        self.tokens += int(mask.sum())
        if self.conf.get("pooling") == "cls":
            v = states[:, 0]
        else:
            m = mask[..., None].astype(np.float32)
            v = (states * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if self.conf.get("normalize", True):
            v = v / np.linalg.norm(v, axis=1, keepdims=True)
        return v.tolist()

    def documents(self, texts, batch):
        out = []
        for i in range(0, len(texts), batch):
            out.extend(self.embed(texts[i:i + batch], self.conf.get("documentPrefix", "")))
        return out

    def query(self, text):
        return self.embed([text], self.conf.get("queryPrefix", ""))[0]


def read_corpus(path):
    """(id, text) per record, the text as ragops's reader/beir.FromFields builds it."""
    out = []
    for line in open(path, encoding="utf-8"):
        if not line.strip():
            continue
        r = json.loads(line)
        title = " ".join((r.get("title") or "").split())
        text = r.get("text") or ""
        out.append((str(r["_id"]), title + "\n\n" + text if title else text))
    return out


def connect(args):
    import weaviate
    h, hp = args.http.rsplit(":", 1)
    _, gp = args.grpc.rsplit(":", 1)
    return weaviate.connect_to_local(host=h, port=int(hp), grpc_port=int(gp))


def llamaindex(args, enc, corpus, phases):
    from llama_index.core import Document
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.vector_stores.weaviate import WeaviateVectorStore
    from pydantic import PrivateAttr

    class OnnxEmbedding(BaseEmbedding):
        _enc: OnnxEncoder = PrivateAttr()

        def __init__(self, enc, **kw):
            super().__init__(**kw)
            self._enc = enc

        def _get_query_embedding(self, query):
            return self._enc.query(query)

        async def _aget_query_embedding(self, query):
            return self._enc.query(query)

        def _get_text_embedding(self, text):
            return self._enc.documents([text], 1)[0]

        def _get_text_embeddings(self, texts):
            return self._enc.documents(texts, len(texts))

    t0 = time.perf_counter()
    docs = [Document(text=text, id_=doc_id) for doc_id, text in corpus]
    splitter = SentenceSplitter(chunk_size=args.size, chunk_overlap=args.overlap,
                                tokenizer=lambda t: enc.tok.encode(t, add_special_tokens=False).ids)
    client = connect(args)
    try:
        store = WeaviateVectorStore(weaviate_client=client, index_name=args.collection, text_key="text")
        pipeline = IngestionPipeline(transformations=[splitter, OnnxEmbedding(enc, embed_batch_size=args.batch)],
                                     vector_store=store)
        nodes = pipeline.run(documents=docs)
        phases["pipeline"] = time.perf_counter() - t0
    finally:
        client.close()
    return len(nodes)


def langchain(args, enc, corpus, phases):
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from langchain_weaviate import WeaviateVectorStore

    class OnnxEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return enc.documents(texts, args.batch)

        def embed_query(self, text):
            return enc.query(text)

    t0 = time.perf_counter()
    docs = [Document(page_content=text, metadata={"doc_id": doc_id}) for doc_id, text in corpus]
    splitter = RecursiveCharacterTextSplitter(chunk_size=args.size, chunk_overlap=args.overlap,
                                              length_function=enc.count)
    chunks = splitter.split_documents(docs)
    phases["split"] = time.perf_counter() - t0
    client = connect(args)
    try:
        t1 = time.perf_counter()
        store = WeaviateVectorStore(client=client, index_name=args.collection, text_key="text",
                                    embedding=OnnxEmbeddings())
        store.add_documents(chunks)
        phases["embedAndWrite"] = time.perf_counter() - t1
    finally:
        client.close()
    return len(chunks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("impl", choices=["llamaindex", "langchain"])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--http", required=True)
    ap.add_argument("--grpc", required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--overlap", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    enc = OnnxEncoder(args.model, args.threads)
    corpus = read_corpus(args.corpus)
    phases = {}
    chunks = (llamaindex if args.impl == "llamaindex" else langchain)(args, enc, corpus, phases)
    print(json.dumps({"impl": args.impl, "documents": len(corpus), "chunks": chunks,
                      "encodedTokens": enc.tokens, "phases": phases}), flush=True)


if __name__ == "__main__":
    main()
