"""Reference inference server for the ragops serve benchmark (hack/bench-serve/run.sh).

The shape of Weaviate's Python t2v-transformers-models app (FastAPI; POST /vectors with
{"text", "config": {"task_type", "pooling_strategy"}}, GET /meta, /.well-known/live and
/.well-known/ready answering 204), running the same model folder as ragops serve: the same
model.onnx through onnxruntime, tokenizer.json through HF tokenizers, ragops.json's prefixes,
mean or CLS pooling and L2 normalisation. One request is one inference (no batching), run on
a single worker thread, as the reference app runs its vectorizer.

    python server.py --model-dir DIR --port 8000 --threads 1
"""

import argparse
import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, Response, status
from pydantic import BaseModel
from tokenizers import Tokenizer


class VectorInputConfig(BaseModel):
    pooling_strategy: str | None = None
    task_type: str | None = None


class VectorInput(BaseModel):
    text: str
    config: VectorInputConfig | None = None


def build(model_dir: str, threads: int) -> FastAPI:
    cfg = json.load(open(os.path.join(model_dir, "ragops.json")))
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.enable_truncation(cfg["maxPositions"])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
    names = cfg["inputs"]
    out_name = cfg["tokenStatesOutput"]
    executor = ThreadPoolExecutor(max_workers=1)

    def embed(text: str, task: str) -> np.ndarray:
        prefix = cfg.get("queryPrefix", "") if task == "query" else cfg.get("documentPrefix", "")
        enc = tok.encode(prefix + text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        feed = {names["inputIds"]: ids, names["attentionMask"]: mask}
        if names.get("tokenTypeIds"):
            feed[names["tokenTypeIds"]] = np.zeros_like(ids)
        states = sess.run([out_name], feed)[0][0]
        v = states[0] if cfg["pooling"] == "cls" else states.mean(axis=0)
        if cfg.get("normalize"):
            v = v / np.linalg.norm(v)
        return v

    app = FastAPI()

    @app.get("/.well-known/live", response_class=Response)
    @app.get("/.well-known/ready", response_class=Response)
    def live_and_ready(response: Response):
        response.status_code = status.HTTP_204_NO_CONTENT

    @app.get("/meta")
    def meta():
        return {"model": cfg["name"], "dimensions": cfg["dimension"]}

    @app.post("/vectors")
    @app.post("/vectors/")
    async def vectors(item: VectorInput, response: Response):
        if not item.text.strip():
            response.status_code = status.HTTP_400_BAD_REQUEST
            return {"error": "text is empty"}
        task = (item.config.task_type if item.config else None) or "passage"
        v = await asyncio.wrap_future(executor.submit(embed, item.text, task))
        return {"text": item.text, "vector": v.tolist(), "dim": int(v.shape[0])}

    embed("warm-up", "query")
    return app


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model-dir", required=True)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    uvicorn.run(build(a.model_dir, a.threads), host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
