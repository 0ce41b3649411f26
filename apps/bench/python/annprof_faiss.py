"""faiss-cpu IndexHNSWFlat peer for `annprof.ts` (issue 13): the same first N tokens and query rows of a
`--hnsw-build` directory, inner product, same M / efConstruction, one thread. The graph is built once and
saved to INDEX (reused when it exists). Per efSearch: best-of-ROUNDS query rows per second with every row in
one call (`batch`) and with one call per query of `rows` rows (`query`), and recall@K against exact-N.json.
Prints one JSON line.

usage: annprof_faiss.py DIR N EF_LIST ROUNDS INDEX
"""
import json
import os
import sys
import time

import faiss
import numpy as np

K = 64


def main():
    d, n, efs, rounds, path = sys.argv[1:6]
    n, rounds = int(n), int(rounds)
    meta = json.load(open(os.path.join(d, "meta.json")))
    dim, rows, queries = meta["dim"], meta["rows"], meta["queries"]
    faiss.omp_set_num_threads(1)
    q = np.fromfile(os.path.join(d, "queries.f32"), dtype=np.float32).reshape(-1, dim)
    want = np.array(json.load(open(os.path.join(d, f"exact-{n}.json"))), dtype=np.int64).reshape(-1, K)
    out = {"tokens": n, "rows": int(q.shape[0]), "faiss": faiss.__version__, "threads": 1}
    if os.path.exists(path):
        index = faiss.read_index(path)
    else:
        x = np.fromfile(os.path.join(d, "vectors.f32"), dtype=np.float32, count=n * dim).reshape(-1, dim)
        t = time.perf_counter()
        index = faiss.IndexHNSWFlat(dim, meta["M"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = meta["efConstruction"]
        index.add(x)
        out["build_s"] = time.perf_counter() - t
        faiss.write_index(index, path)
    out["result"] = []
    for ef in [int(e) for e in efs.split(",")]:
        index.hnsw.efSearch = ef
        best = {"batch": None, "query": None}
        for _ in range(rounds):
            t = time.perf_counter()
            _, got = index.search(q, K)
            s = time.perf_counter() - t
            best["batch"] = s if best["batch"] is None else min(best["batch"], s)
            t = time.perf_counter()
            for i in range(queries):
                index.search(q[i * rows : (i + 1) * rows], K)
            s = time.perf_counter() - t
            best["query"] = s if best["query"] is None else min(best["query"], s)
        rec = float(np.mean([len(set(g) & set(w)) / K for g, w in zip(got, want)]))
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        for name, s in best.items():
            out["result"].append({"ef": ef, "variant": f"faiss-{name}", "qps": q.shape[0] / s, "recall": rec, "load": load})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
