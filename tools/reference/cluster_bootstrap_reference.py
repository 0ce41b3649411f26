#!/usr/bin/env python3
"""Write the fixture that @bfe/eval's cluster-level paired tests are cross-checked against.

Input (seeded numpy): paired differences of 3 subtasks over 9 clusters (banks). Clusters hold
2–9 queries, a cluster shifts all its queries by a shared random effect (so queries of one
cluster are dependent), and one subtask has queries in only 4 of the clusters, so some
resamples draw none of it and the statistic averages over the subtasks present.

The statistic (METHOD.md §6): the unweighted mean over subtasks of each subtask's mean
difference. The paired cluster bootstrap draws as many clusters as there are, with
replacement; each subtask's mean is the mean over all its queries in the drawn clusters (a
cluster drawn twice counts twice); the CI is the 2.5% / 97.5% type-7 percentiles
(numpy's default 'linear' method).

Recorded, for the TypeScript test to compare within Monte-Carlo error (the generators differ):
  ci95Mean, ci95Sd   mean and standard deviation of the CI ends over `repeats` independent
                     runs of `resamples` resamples each (numpy's PCG64, seed --seed);
  exactP             the exact two-sided cluster sign-flip p-value: the share of the 2^n
                     cluster sign patterns with |T*| >= |T| - 1e-12 (a cluster's queries flip
                     together), enumerated.

Usage:
  python3 tools/reference/cluster_bootstrap_reference.py \
      --out packages/eval/fixtures/reference-cluster.json
"""

import argparse
import itertools
import json

import numpy as np


def make_input(rng):
    n_clusters = 9
    strata = [[], [], []]
    for c in range(n_clusters):
        effect = rng.normal(0.04, 0.08)
        for s in range(3):
            if s == 2 and c % 2 == 1:
                continue  # the third subtask lives in clusters 0, 2, 4, 6, 8 only
            for _ in range(int(rng.integers(1, 4))):
                value = float(np.clip(effect + rng.normal(0, 0.15), -1, 1))
                strata[s].append((round(value, 6), f"bank-{c}"))
    return strata


def statistic(strata, weight):
    """Mean over subtasks present of sum(weight[c] * v) / sum(weight[c]) per subtask."""
    means = []
    for rows in strata:
        num = sum(weight[c] * v for v, c in rows)
        den = sum(weight[c] for _, c in rows)
        if den > 0:
            means.append(num / den)
    return float(np.mean(means))


def bootstrap_ci(strata, clusters, resamples, rng):
    index = {c: i for i, c in enumerate(clusters)}
    k = len(clusters)
    # counts[s][i], sums[s][i]: the subtask-s queries of cluster i
    counts = np.zeros((len(strata), k))
    sums = np.zeros((len(strata), k))
    for s, rows in enumerate(strata):
        for v, c in rows:
            counts[s, index[c]] += 1
            sums[s, index[c]] += v
    draws = rng.integers(0, k, size=(resamples, k))
    weight = np.zeros((resamples, k))
    for j in range(k):
        np.add.at(weight, (np.arange(resamples), draws[:, j]), 1)
    num = weight @ sums.T  # [resamples × strata]
    den = weight @ counts.T
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(den > 0, num / den, np.nan)
    stat = np.nanmean(per, axis=1)
    return np.quantile(stat, [0.025, 0.975])


def exact_p(strata, clusters):
    ones = {c: 1.0 for c in clusters}
    observed = abs(statistic(strata, ones))
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=len(clusters)):
        sign = dict(zip(clusters, signs))
        flipped = [[(sign[c] * v, c) for v, c in rows] for rows in strata]
        if abs(statistic(flipped, ones)) >= observed - 1e-12:
            hits += 1
    return hits / 2 ** len(clusters)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=20240628)
    parser.add_argument("--resamples", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    strata = make_input(rng)
    clusters = sorted({c for rows in strata for _, c in rows})
    cis = np.array(
        [bootstrap_ci(strata, clusters, args.resamples, rng) for _ in range(args.repeats)]
    )
    ones = {c: 1.0 for c in clusters}
    fixture = {
        "generator": "tools/reference/cluster_bootstrap_reference.py",
        "numpy": np.__version__,
        "seed": args.seed,
        "strata": [[v for v, _ in rows] for rows in strata],
        "clusters": [[c for _, c in rows] for rows in strata],
        "meanDiff": statistic(strata, ones),
        "resamples": args.resamples,
        "repeats": args.repeats,
        "ci95Mean": cis.mean(axis=0).tolist(),
        "ci95Sd": cis.std(axis=0, ddof=1).tolist(),
        "exactP": exact_p(strata, clusters),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
