#!/usr/bin/env python3
"""Write the fixture that @bfe/eval's metrics are cross-checked against.

It generates (seeded, standard-library `random`) ~200 random queries over random candidate
sets, each with a raw ranking that may hold ids outside the candidate set, random binary
qrels (none, one, a few, many; sometimes relevant memories that are not candidates), and a
subtask. For each query it records the metrics bfe must reproduce to 1e-9:

  recall@k    capped recall |rel ∩ top-k| / min(|rel|, k) (METHOD.md §6). No library has it,
              so it is computed here from its definition, and checked against the value
              derived from pytrec_eval's recall_k (hits = recall_k · |rel|).
  ndcg@k      NDCG@k from pytrec_eval (trec_eval's ndcg_cut; binary gains here, graded with
              --graded), checked against ranx and a direct implementation.
  trecRecall  standard recall@k from pytrec_eval (recall_k), checked against ranx.

for k in 1, 5, 10, 25, 50, plus the per-subtask means and the headline (mean over subtasks
with at least one evaluated query, each weighted equally). Queries without a relevant
memory are dropped and counted; one subtask has only such queries.

Ranking order and ties. The evaluator takes each ranking in the order given and filters it
to the candidates, keeping that order. This script does the same filtering itself and hands
the libraries strictly decreasing scores (n, n-1, …, 1) so that their sort reproduces the
given order exactly: pytrec_eval/trec_eval would otherwise break score ties by document id
*descending*. For the tie cases (queries with a `tie` block) the raw scores have many ties
and the stated order is: score descending, then id ascending (bfe's `rankByScore`). Those
queries also record `trecEvalTieOrder`: pytrec_eval's metrics on the raw tied scores (its own
tie rule), to show the tie rule changes the numbers.

Graded relevance (--graded). The same queries, drawn from the same seed, then each relevant
memory gets a grade (a second generator seeded from --seed, so the binary fixture is
unchanged): about a fifth of the queries keep grade 1 everywhere, the others draw grades
from {1, 2, 3, 4}. The cut-offs are the default ones with the memory budgets,
k ∈ {1, 4, 5, 8, 10, 16, 25, 50}. NDCG@k is trec_eval's ndcg_cut with graded qrels: gain =
grade (linear), discount 1/log2(rank + 1), ideal DCG from the query's grades sorted
descending, cut at k; checked against ranx's `ndcg` (Järvelin's linear gain) and a direct
implementation. Recall keeps "relevant = grade > 0" (trec_eval's relevance_level 1).

Example:
  python3 -m venv /tmp/venv-eval && /tmp/venv-eval/bin/pip install pytrec-eval-terrier ranx
  /tmp/venv-eval/bin/python tools/reference/eval_reference.py \
      --out packages/eval/fixtures/reference-metrics.json
  /tmp/venv-eval/bin/python tools/reference/eval_reference.py --graded \
      --out packages/eval/fixtures/reference-graded.json
Tested with pytrec_eval-terrier 0.5.11, ranx 0.3.21, numpy 2.4.6, Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from importlib.metadata import version
from pathlib import Path

import pytrec_eval
from ranx import Qrels, Run
from ranx import evaluate as ranx_evaluate

KS = [1, 5, 10, 25, 50]
# --graded: the default cut-offs of @bfe/eval, memory budgets 4, 8, 10, 16 included.
GRADED_KS = [1, 4, 5, 8, 10, 16, 25, 50]
SUBTASKS = ["single-hop", "multi-hop", "temporal", "open-domain", "adversarial"]
# 'adversarial' queries never have a relevant memory: the whole subtask is dropped and must
# not enter the headline.
EMPTY_SUBTASK = "adversarial"


def make_queries(rng: random.Random, n_queries: int, n_ties: int) -> list[dict]:
    universe = [f"d{i}" for i in range(400)]
    queries = []
    for qi in range(n_queries):
        qid = f"q{qi:03d}"
        subtask = rng.choice(SUBTASKS[:-1]) if qi % 25 != 7 else EMPTY_SUBTASK
        size_kind = rng.random()
        if size_kind < 0.03:
            n_cand = 0
        elif size_kind < 0.15:
            n_cand = rng.randint(55, 80)  # longer than the largest k
        else:
            n_cand = rng.randint(1, 40)
        candidates = rng.sample(universe, n_cand)
        cand_set = set(candidates)
        outside = [d for d in universe if d not in cand_set]

        # Relevant memories: none / one / a few / many, sometimes some outside the candidates.
        r = rng.random()
        if subtask == EMPTY_SUBTASK or r < 0.10:
            n_rel = 0
        elif r < 0.45:
            n_rel = 1
        elif r < 0.80:
            n_rel = rng.randint(2, 5)
        else:
            n_rel = rng.randint(8, 40)
        relevant = rng.sample(candidates, min(n_rel, len(candidates)))
        if n_rel > 0 and (rng.random() < 0.2 or not relevant):
            relevant += rng.sample(outside, rng.randint(1, 3))
        rng.shuffle(relevant)

        tie = qi < n_ties
        # The raw ranking: all or a prefix of the candidates, plus a few non-candidates.
        ranked = candidates[:]
        rng.shuffle(ranked)
        if ranked and rng.random() < 0.3:
            ranked = ranked[: rng.randint(1, len(ranked))]
        for _ in range(rng.randint(0, 4) if rng.random() < 0.5 else 0):
            extra = rng.choice(outside)
            if extra not in ranked:
                ranked.insert(rng.randint(0, len(ranked)), extra)

        query = {"id": qid, "subtask": subtask, "candidates": candidates, "relevant": relevant}
        if tie:
            # Integer scores from a tiny range: many ties. Stated order: score desc, id asc.
            scores = [float(rng.randint(0, 3)) for _ in ranked]
            pairs = list(zip(ranked, scores))
            rng.shuffle(pairs)
            query["tie"] = {"ids": [p[0] for p in pairs], "scores": [p[1] for p in pairs]}
            ranked = [d for d, _ in sorted(pairs, key=lambda p: (-p[1], p[0]))]
        query["ranked"] = ranked
        queries.append(query)

    # One hand-written tie case, easy to read: three candidates with the same score. The
    # stated order is d1, d2, d3 (id ascending); trec_eval would rank d3, d2, d1.
    queries.append({
        "id": "q-tie-explicit",
        "subtask": "single-hop",
        "candidates": ["d3", "d1", "d2"],
        "relevant": ["d1"],
        "tie": {"ids": ["d3", "d1", "d2", "x9"], "scores": [0.5, 0.5, 0.5, 0.9]},
        "ranked": ["x9", "d1", "d2", "d3"],
    })
    return queries


def add_grades(rng: random.Random, queries: list[dict]) -> None:
    """Gives every relevant memory a grade > 0 (`grades`, parallel to `relevant`)."""
    for q in queries:
        if q["id"] == "q-tie-explicit":
            q["grades"] = [1 for _ in q["relevant"]]
            continue
        if rng.random() < 0.2:
            q["grades"] = [1 for _ in q["relevant"]]
        else:
            q["grades"] = [rng.choice([1, 1, 2, 3, 4]) for _ in q["relevant"]]
    # A hand-written graded case, easy to read: the grade-3 memory is second, so binary
    # NDCG@1 is 1 but graded NDCG@1 is 1/3 (ideal: the grade-3 memory first).
    queries.append({
        "id": "q-graded-explicit",
        "subtask": "single-hop",
        "candidates": ["g1", "g2", "g3"],
        "relevant": ["g1", "g2"],
        "grades": [1, 3],
        "ranked": ["g1", "g2", "g3"],
    })


def filtered(query: dict) -> list[str]:
    cand = set(query["candidates"])
    return [d for d in query["ranked"] if d in cand]


def direct_metrics(ranking: list[str], grades: dict[str, int]) -> dict[str, float]:
    """The definitions, written out: capped recall, standard recall and NDCG with gain = grade
    (binary NDCG when every grade is 1)."""
    relevant = set(grades)
    ideal = sorted(grades.values(), reverse=True)
    out = {}
    for k in KS:
        top = ranking[:k]
        hits = sum(1 for d in top if d in relevant)
        dcg = sum(grades[d] / math.log2(i + 2) for i, d in enumerate(top) if d in relevant)
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))
        out[f"recall@{k}"] = hits / min(len(relevant), k)
        out[f"trecRecall@{k}"] = hits / len(relevant)
        out[f"ndcg@{k}"] = dcg / idcg
    return out


def pytrec_metrics(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    cuts = ",".join(str(k) for k in KS)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{cuts}", f"recall.{cuts}"})
    return evaluator.evaluate(run)


def ranx_metrics(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    metrics = [f"ndcg@{k}" for k in KS] + [f"recall@{k}" for k in KS]
    ranx_run = Run(run)
    ranx_evaluate(Qrels(qrels), ranx_run, metrics, make_comparable=False)
    return {m: dict(ranx_run.scores[m]) for m in metrics}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="packages/eval/fixtures/reference-metrics.json")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ties", type=int, default=24, help="how many queries get tied scores")
    parser.add_argument("--max-bytes", type=int, default=300_000)
    parser.add_argument("--graded", action="store_true", help="graded qrels and the budget ks")
    args = parser.parse_args()

    global KS
    if args.graded:
        KS = GRADED_KS
    rng = random.Random(args.seed)
    queries = make_queries(rng, args.queries, args.ties)
    if args.graded:
        add_grades(random.Random(f"graded-{args.seed}"), queries)

    def grades_of(q: dict) -> dict[str, int]:
        return dict(zip(q["relevant"], q.get("grades") or [1] * len(q["relevant"])))

    # Library inputs: qrels as given (binary, grade 1), the filtered ranking with strictly
    # decreasing scores. Queries without relevant memories or without a filtered ranking are
    # left out of the libraries (trec_eval skips them): the first are dropped, the second
    # score 0 by definition.
    qrels, run, tied_run = {}, {}, {}
    for q in queries:
        ranking = filtered(q)
        if not q["relevant"] or not ranking:
            continue
        qrels[q["id"]] = grades_of(q)
        run[q["id"]] = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}
        if "tie" in q:
            cand = set(q["candidates"])
            tied_run[q["id"]] = {
                d: s for d, s in zip(q["tie"]["ids"], q["tie"]["scores"]) if d in cand
            }
    trec = pytrec_metrics(qrels, run)
    ranx = ranx_metrics(qrels, run)
    trec_tied = pytrec_metrics({q: qrels[q] for q in tied_run}, tied_run)

    diffs = {"ndcgPytrecVsRanx": 0.0, "ndcgPytrecVsDirect": 0.0, "trecRecallPytrecVsRanx": 0.0,
             "trecRecallPytrecVsDirect": 0.0, "cappedRecallDirectVsPytrecDerived": 0.0}

    def track(name: str, a: float, b: float) -> None:
        diffs[name] = max(diffs[name], abs(a - b))

    out_queries = []
    n_tie_order_matters = 0
    for q in queries:
        relevant = set(q["relevant"])
        entry = {k: q[k] for k in ("id", "subtask", "candidates", "ranked", "relevant")}
        if args.graded:
            entry["grades"] = q["grades"]
        if "tie" in q:
            entry["tie"] = q["tie"]
        if not relevant:
            entry["expected"] = None  # dropped
            out_queries.append(entry)
            continue
        ranking = filtered(q)
        direct = direct_metrics(ranking, grades_of(q))
        expected: dict[str, float] = {}
        if q["id"] in trec:
            t = trec[q["id"]]
            for k in KS:
                expected[f"recall@{k}"] = direct[f"recall@{k}"]
                expected[f"ndcg@{k}"] = t[f"ndcg_cut_{k}"]
                expected[f"trecRecall@{k}"] = t[f"recall_{k}"]
                track("ndcgPytrecVsRanx", t[f"ndcg_cut_{k}"], ranx[f"ndcg@{k}"][q["id"]])
                track("ndcgPytrecVsDirect", t[f"ndcg_cut_{k}"], direct[f"ndcg@{k}"])
                track("trecRecallPytrecVsRanx", t[f"recall_{k}"], ranx[f"recall@{k}"][q["id"]])
                track("trecRecallPytrecVsDirect", t[f"recall_{k}"], direct[f"trecRecall@{k}"])
                derived = t[f"recall_{k}"] * len(relevant) / min(len(relevant), k)
                track("cappedRecallDirectVsPytrecDerived", direct[f"recall@{k}"], derived)
        else:
            # Empty filtered ranking: every metric is 0 by definition.
            expected = {name: 0.0 for name in direct}
            assert all(v == 0.0 for v in direct.values())
        # Key order: recall, ndcg, trecRecall, each by k (matches bfe's record order).
        entry["expected"] = {
            name: expected[name]
            for prefix in ("recall", "ndcg", "trecRecall")
            for name in (f"{prefix}@{k}" for k in KS)
        }
        if q["id"] in trec_tied:
            t = trec_tied[q["id"]]
            entry["trecEvalTieOrder"] = {f"ndcg@{k}": t[f"ndcg_cut_{k}"] for k in KS}
            if any(abs(t[f"ndcg_cut_{k}"] - expected[f"ndcg@{k}"]) > 1e-12 for k in KS):
                n_tie_order_matters += 1
        out_queries.append(entry)

    # Aggregates: subtask means in query order, headline = mean over non-empty subtasks.
    names = [f"{p}@{k}" for p in ("recall", "ndcg") for k in KS]
    subtasks_out = {}
    for s in SUBTASKS:
        members = [q for q in out_queries if q["subtask"] == s]
        kept = [q for q in members if q["expected"] is not None]
        subtasks_out[s] = {
            "nQueries": len(kept),
            "nDropped": len(members) - len(kept),
            "metrics": {n: sum(q["expected"][n] for q in kept) / len(kept) for n in names}
            if kept
            else None,
        }
    non_empty = [v for v in subtasks_out.values() if v["metrics"] is not None]
    headline = {n: sum(v["metrics"][n] for v in non_empty) / len(non_empty) for n in names}

    limit = 1e-12
    bad = {k: v for k, v in diffs.items() if v > limit}
    if bad:
        print(f"independent implementations disagree beyond {limit}: {bad}", file=sys.stderr)
        return 1
    if n_tie_order_matters == 0:
        print("no tie case changes a metric under trec_eval's tie rule; raise --ties", file=sys.stderr)
        return 1

    fixture = {
        "description": (
            "Cross-check of @bfe/eval: random queries, candidates, raw rankings and "
            f"{'graded' if args.graded else 'binary'} qrels; expected per-query metrics from pytrec_eval (ndcg@k, trecRecall@k = "
            "standard recall) and from the definition (recall@k = capped recall). Written by "
            "tools/reference/eval_reference.py; do not edit by hand."
        ),
        "generator": {
            "script": "tools/reference/eval_reference.py",
            "seed": args.seed,
            "queries": args.queries,
            "ties": args.ties,
            "python": sys.version.split()[0],
            "pytrecEval": version("pytrec-eval-terrier"),
            "ranx": version("ranx"),
        },
        **(
            {
                "graded": True,
                "gains": "linear: gain = grade, discount 1/log2(rank + 1), ideal DCG from the "
                "grades sorted descending (trec_eval ndcg_cut); recall: relevant = grade > 0",
            }
            if args.graded
            else {}
        ),
        "tieRule": "score descending, then id ascending; rankings are evaluated in the given order",
        "ks": KS,
        "subtasks": SUBTASKS,
        "maxAbsDiff": diffs,
        "tieCasesWhereTrecEvalOrderDiffers": n_tie_order_matters,
        "queries": out_queries,
        "aggregate": {
            "metrics": headline,
            "subtasks": subtasks_out,
            "nQueries": sum(v["nQueries"] for v in subtasks_out.values()),
            "droppedNoRelevant": sum(v["nDropped"] for v in subtasks_out.values()),
        },
    }
    text = json.dumps(fixture, separators=(",", ":")) + "\n"
    if len(text.encode()) > args.max_bytes:
        print(f"fixture is {len(text.encode())} bytes > --max-bytes {args.max_bytes}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(
        f"wrote {out} ({len(text.encode())} bytes): {len(out_queries)} queries, "
        f"{fixture['aggregate']['droppedNoRelevant']} dropped, {n_tie_order_matters} tie cases "
        f"where trec_eval's order differs; max abs diffs {diffs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
