"""Peer side of hack/bench-weaviate: batch-import the benchmark's chunk objects into an existing
Weaviate collection with the official Python client (weaviate-client, pinned in run.sh).

Reads objects.jsonl (uuid + properties per line) and vectors.f32 (float32 little-endian, one row
of --dims per object), loads everything before the clock starts, imports with
collection.batch.fixed_size(batch_size, concurrent_requests), checks failed objects, and prints
one JSON line: {"objects", "seconds", "client_cpu_seconds", "failed"}.
"""

import argparse
import array
import json
import resource
import sys
import time

import weaviate


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http-port", type=int, required=True)
    ap.add_argument("--grpc-port", type=int, required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--objects", required=True)
    ap.add_argument("--vectors", required=True)
    ap.add_argument("--dims", type=int, required=True)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()

    with open(args.objects) as f:
        objects = [json.loads(line) for line in f]
    vecs = array.array("f")
    with open(args.vectors, "rb") as f:
        vecs.frombytes(f.read())
    if sys.byteorder != "little":
        vecs.byteswap()
    if len(vecs) != len(objects) * args.dims:
        sys.exit(f"vectors.f32 has {len(vecs)} floats, want {len(objects)} x {args.dims}")
    rows = [vecs[i * args.dims:(i + 1) * args.dims].tolist() for i in range(len(objects))]

    client = weaviate.connect_to_local(host="127.0.0.1", port=args.http_port, grpc_port=args.grpc_port)
    try:
        coll = client.collections.get(args.collection)
        c0, t0 = cpu_seconds(), time.perf_counter()
        with coll.batch.fixed_size(batch_size=args.batch_size, concurrent_requests=args.concurrency) as batch:
            for o, v in zip(objects, rows):
                batch.add_object(properties=o["properties"], uuid=o["uuid"], vector=v)
        seconds = time.perf_counter() - t0
        cpu = cpu_seconds() - c0
        failed = coll.batch.failed_objects
        if failed:
            print(f"first failed object: {failed[0].message}", file=sys.stderr)
    finally:
        client.close()
    print(json.dumps({"objects": len(objects), "seconds": seconds, "client_cpu_seconds": cpu, "failed": len(failed)}))


if __name__ == "__main__":
    main()
