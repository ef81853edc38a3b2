"""Renders the synthetic archive's scanned council resolutions (hack/bench-scale) with the
repository's scan fixtures (hack/scan-fixtures/scan.py: typeset on A4, degraded like an office
scan, saved as image-only PDFs without a text layer).

  scan_archive.py JOBS.jsonl [--dpi 200] [--level 1.0] [--quality 60]

Each line of JOBS.jsonl is {"path", "blocks": [{"kind", "text"}...], "seed"}; prints one JSON
object {path: pages} on stdout. Seeded: the same job writes the same file.
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scan-fixtures"))
import scan  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("jobs")
    p.add_argument("--dpi", type=int, default=200)
    p.add_argument("--level", type=float, default=1.0)
    p.add_argument("--quality", type=int, default=60)
    a = p.parse_args()
    out = {}
    with open(a.jobs) as fh:
        for line in fh:
            if not line.strip():
                continue
            j = json.loads(line)
            rng = random.Random(j["seed"])
            pages, _ = scan.typeset([(b["kind"], b["text"]) for b in j["blocks"]], a.dpi)
            pages = [scan.degrade(pg, rng, a.level) for pg in pages]
            scan.save_pdf(pages, j["path"], a.dpi, a.quality)
            out[j["path"]] = len(pages)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
