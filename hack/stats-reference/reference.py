"""Reference values for the Go statistics parity test (evaluator/stats).

Reads two per-query result sets (ragops per-query-results/v1, gzip JSON), takes the
per-query values of each metric, and computes with scipy.stats:
  - bootstrap(method="percentile", n_resamples=10000): 95% interval and standard error of the
    candidate's mean, and of the mean paired difference (candidate - baseline);
  - permutation_test(permutation_type="samples", n_resamples=10000, two-sided): the p-value of
    the paired randomization (sign-flip) test of the mean difference (exact when 2^n <= 10000).
on the first n queries (by ID) for each n given, or, for "<n>nz", on the first n queries whose
values differ between the two sets. Writes TSV lines
  n <TAB> metric <TAB> quantity <TAB> value
and "#seconds" lines with scipy's time per call for the Go test to log beside its own.

usage: reference.py OUT.tsv BASELINE.json.gz CANDIDATE.json.gz METRIC[,METRIC...] N[,N...]
"""
import gzip
import json
import sys
import time

import numpy as np
from scipy import stats

RESAMPLES = 10000
SEED = 20260

def column(path, metric):
    with gzip.open(path, "rt") as f:
        s = json.load(f)
    if s["version"] != "ragops.dev/per-query-results/v1":
        sys.exit(f"{path}: version {s['version']!r}")
    j = s["metrics"].index(metric)
    return [q["id"] for q in s["queries"]], np.array([q["v"][j] for q in s["queries"]], dtype=float)


def mean(x, axis=-1):
    return np.mean(x, axis=axis)


def mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def main():
    out, base_path, cand_path, metrics, ns = sys.argv[1:6]
    rows, timing = [], {}
    for metric in metrics.split(","):
        ids_a, a = column(base_path, metric)
        ids_b, b = column(cand_path, metric)
        if ids_a != ids_b:
            sys.exit("the two sets hold different queries")
        for n in ns.split(","):
            if n.endswith("nz"):
                keep = np.flatnonzero(b != a)[: int(n[:-2])]
                x, y = b[keep], a[keep]
            else:
                x, y = b[: int(n)], a[: int(n)]
            t0 = time.perf_counter()
            boot = stats.bootstrap((x,), mean, n_resamples=RESAMPLES, method="percentile",
                                   confidence_level=0.95, vectorized=True, rng=np.random.default_rng(SEED))
            t1 = time.perf_counter()
            diff = stats.bootstrap((x - y,), mean, n_resamples=RESAMPLES, method="percentile",
                                   confidence_level=0.95, vectorized=True, rng=np.random.default_rng(SEED + 1))
            t2 = time.perf_counter()
            perm = stats.permutation_test((x, y), mean_diff, permutation_type="samples", vectorized=True,
                                          n_resamples=RESAMPLES, alternative="two-sided",
                                          rng=np.random.default_rng(SEED + 2))
            t3 = time.perf_counter()
            timing.setdefault(n, []).append((t1 - t0, t3 - t2))
            rows += [
                (n, metric, "mean.lo", boot.confidence_interval.low),
                (n, metric, "mean.hi", boot.confidence_interval.high),
                (n, metric, "mean.se", boot.standard_error),
                (n, metric, "diff.lo", diff.confidence_interval.low),
                (n, metric, "diff.hi", diff.confidence_interval.high),
                (n, metric, "diff.se", diff.standard_error),
                (n, metric, "p", perm.pvalue),
            ]
    with open(out, "w") as f:
        f.write(f"#scipy\t{__import__('scipy').__version__}\tnumpy\t{np.__version__}\n")
        for n, ts in timing.items():
            f.write(f"#seconds\t{n}\tbootstrap\t{min(t for t, _ in ts):.6f}\tpermutation_test\t{min(t for _, t in ts):.6f}\n")
        for n, metric, q, v in rows:
            f.write(f"{n}\t{metric}\t{q}\t{float(v)!r}\n")


if __name__ == "__main__":
    main()
