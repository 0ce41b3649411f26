"""faiss-cpu peers for `pnpm bench:index`: IndexHNSWFlat (inner product, the same M / efConstruction /
efSearch as bfe) and IndexIVFPQ on the same float32 vectors, one thread. Prints one JSON line.

usage: index_peers.py BANK.f32 QUERIES.f32 DIM K M EF_CONSTRUCTION EF_SEARCH
"""
import json
import sys
import time

import faiss
import numpy as np


def recall(got, want):
    return float(np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want)]))


def main():
    bank_path, query_path, dim, k, m, efc, efs = sys.argv[1:8]
    dim, k, m, efc, efs = int(dim), int(k), int(m), int(efc), int(efs)
    x = np.fromfile(bank_path, dtype=np.float32).reshape(-1, dim)
    q = np.fromfile(query_path, dtype=np.float32).reshape(-1, dim)
    faiss.omp_set_num_threads(1)
    flat = faiss.IndexFlatIP(dim)
    flat.add(x)
    _, want = flat.search(q, k)
    out = {"tokens": int(x.shape[0]), "queries": int(q.shape[0]), "faiss": faiss.__version__}
    t = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = efc
    hnsw.add(x)
    build = time.perf_counter() - t
    hnsw.hnsw.efSearch = efs
    t = time.perf_counter()
    _, got = hnsw.search(q, k)
    secs = time.perf_counter() - t
    out["hnsw"] = {"build_s": build, "qps": q.shape[0] / secs, "recall": recall(got, want)}
    nlist = max(1, int(4 * np.sqrt(x.shape[0])))
    t = time.perf_counter()
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, nlist, 48, 8, faiss.METRIC_INNER_PRODUCT)
    ivf.train(x)
    ivf.add(x)
    build = time.perf_counter() - t
    ivf.nprobe = 16
    t = time.perf_counter()
    _, got = ivf.search(q, k)
    secs = time.perf_counter() - t
    out["ivfpq"] = {"build_s": build, "qps": q.shape[0] / secs, "recall": recall(got, want), "nlist": nlist, "nprobe": 16, "bytes_per_token": 48}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
