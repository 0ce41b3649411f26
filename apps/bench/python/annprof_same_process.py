"""faiss vs usearch in ONE process (issue 13, "annprof"): the raw-usearch-to-faiss ratio without the
load drift between processes on a shared machine. Per efSearch and round, in turn: faiss IndexHNSWFlat
(the saved INDEX of annprof_faiss.py), then the usearch graphs GRAPH... (the very files bfe searches;
usearch's Python binding, the same C++ core and NumKong kernels as the npm package), every query row
in one call, one thread each. Best of ROUNDS; recall@64 against exact-N.json. Prints one JSON line.

usage: annprof_same_process.py DIR N EF_LIST ROUNDS INDEX KIND:GRAPH...
(needs `usearch` and `numkong` importable, e.g. pip install --target, PYTHONPATH)
"""
import json
import os
import sys
import time

import faiss
import numpy as np
from usearch.index import Index

K = 64


def main():
    d, n, efs, rounds, path = sys.argv[1:6]
    graphs = [g.split(":", 1) for g in sys.argv[6:]]
    n, rounds = int(n), int(rounds)
    meta = json.load(open(os.path.join(d, "meta.json")))
    dim = meta["dim"]
    faiss.omp_set_num_threads(1)
    q = np.fromfile(os.path.join(d, "queries.f32"), dtype=np.float32).reshape(-1, dim)
    want = np.array(json.load(open(os.path.join(d, f"exact-{n}.json"))), dtype=np.int64).reshape(-1, K)
    fx = faiss.read_index(path)
    sides = {"faiss": None}
    for kind, g in graphs:
        index = Index(ndim=dim, metric="ip", dtype=kind, connectivity=meta["M"], expansion_add=meta["efConstruction"])
        index.load(g)
        sides[f"usearch-{kind}"] = index
    accel = {name: ix.hardware_acceleration for name, ix in sides.items() if ix is not None}
    out = {"tokens": n, "rows": int(q.shape[0]), "threads": 1, "rounds": rounds, "isa": accel, "result": []}
    for ef in [int(e) for e in efs.split(",")]:
        fx.hnsw.efSearch = ef
        for ix in sides.values():
            if ix is not None:
                ix.expansion_search = ef
        best, got = {}, {}
        for _ in range(rounds):
            for name, ix in sides.items():
                t = time.perf_counter()
                if ix is None:
                    _, ids = fx.search(q, K)
                else:
                    ids = ix.search(q, K, threads=1).keys
                s = time.perf_counter() - t
                best[name] = min(best.get(name, s), s)
                got[name] = ids
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        for name, s in best.items():
            rec = float(np.mean([len(set(g.tolist()) & set(w.tolist())) / K for g, w in zip(got[name], want)]))
            out["result"].append({"ef": ef, "variant": name, "qps": q.shape[0] / s, "recall": rec, "load": load})
        print(f"ef {ef} done ({load})", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
