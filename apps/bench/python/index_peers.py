"""faiss-cpu peers of `pnpm bench:big-bank`: IndexHNSWFlat (inner product, the same M / efConstruction /
efSearch as bfe) and IndexIVFPQ on the same float32 vectors.

usage: index_peers.py --serve BANK.f32 QUERIES.f32 EXACT.i32 DIM K M EF_CONSTRUCTION EF_LIST NPROBE_LIST
       index_peers.py --latency VECTORS.f32 QUERIES.f32 EXACT.json DIM K M EF_CONSTRUCTION EF_LIST ROWS_LIST THREADS INDEX_FILE
--serve (`--peer-sweep`): builds IndexHNSWFlat, prints `ready`, then answers each stdin line
`ef N` with one JSON line (that efSearch, timed now), so the caller can interleave faiss with its
own sides; `end` runs the IVF-PQ part (one build, then every nprobe in NPROBE_LIST) and prints
one JSON line (its `hnsw` list: every point answered, in order). Recall@K against EXACT.i32, the
caller's exact top-K per query row, so both sides are scored against one reference
--latency: faiss IndexHNSWFlat over a segmented build's `vectors.f32` (built once with THREADS
threads and saved as INDEX_FILE, loaded from it later), then one query at a time — ROWS query rows
searched in one call, THREADS threads, as bfe searches one query — per efSearch and query length:
p50 / p90 ms over the queries (after one warm-up pass) and recall@K against EXACT.json (the
build's exact fp32 top-K token ids per row, a flat JSON list)
"""
import json
import sys
import time

import faiss
import numpy as np


def recall(got, want):
    return float(np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want)]))


def timed_search(index, q, k, repeats=3):
    """Best of `repeats` passes over all query rows (the machine is shared): (qps, ids)."""
    best, got = None, None
    for _ in range(repeats):
        t = time.perf_counter()
        _, got = index.search(q, k)
        secs = time.perf_counter() - t
        best = secs if best is None else min(best, secs)
    return q.shape[0] / best, got


def serve():
    bank_path, query_path, exact_path, dim, k, m, efc, _efs, nprobes = sys.argv[2:11]
    dim, k, m, efc = int(dim), int(k), int(m), int(efc)
    x = np.fromfile(bank_path, dtype=np.float32).reshape(-1, dim)
    q = np.fromfile(query_path, dtype=np.float32).reshape(-1, dim)
    want = np.fromfile(exact_path, dtype=np.int32).reshape(-1, k)
    faiss.omp_set_num_threads(1)
    out = {"tokens": int(x.shape[0]), "rows": int(q.shape[0]), "faiss": faiss.__version__, "threads": 1}
    t = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = efc
    hnsw.add(x)
    out["hnsw_build_s"] = time.perf_counter() - t
    out["hnsw"] = []
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "end":
            break
        hnsw.hnsw.efSearch = int(line.split()[1])
        qps, got = timed_search(hnsw, q, k)
        point = {"ef": hnsw.hnsw.efSearch, "qps": qps, "recall": recall(got, want)}
        out["hnsw"].append(point)
        print(json.dumps(point), flush=True)
    nlist = max(1, int(4 * np.sqrt(x.shape[0])))
    t = time.perf_counter()
    ivf = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, nlist, 48, 8, faiss.METRIC_INNER_PRODUCT)
    ivf.train(x)
    ivf.add(x)
    out["ivfpq_build_s"] = time.perf_counter() - t
    out["ivfpq_nlist"] = nlist
    out["ivfpq"] = []
    for nprobe in [int(p) for p in nprobes.split(",")]:
        ivf.nprobe = nprobe
        qps, got = timed_search(ivf, q, k)
        out["ivfpq"].append({"nprobe": nprobe, "qps": qps, "recall": recall(got, want)})
    print(json.dumps(out))


def latency():
    vec_path, query_path, exact_path, dim, k, m, efc, efs, rows_list, threads, index_file = sys.argv[2:13]
    dim, k, m, efc, threads = int(dim), int(k), int(m), int(efc), int(threads)
    q = np.fromfile(query_path, dtype=np.float32).reshape(-1, dim)
    with open(exact_path) as f:
        want = np.array(json.load(f), dtype=np.int64).reshape(-1, k)
    faiss.omp_set_num_threads(threads)
    out = {"faiss": faiss.__version__, "threads": threads, "M": m, "efConstruction": efc}
    try:
        hnsw = faiss.read_index(index_file)
        out["loaded"] = index_file
    except RuntimeError:
        x = np.fromfile(vec_path, dtype=np.float32).reshape(-1, dim)
        t, c = time.perf_counter(), time.process_time()
        hnsw = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = efc
        hnsw.add(x)
        out["build_s"], out["build_cpu_s"] = time.perf_counter() - t, time.process_time() - c
        del x
        faiss.write_index(hnsw, index_file)
    out["tokens"] = int(hnsw.ntotal)
    out["points"] = []
    for ef in [int(e) for e in efs.split(",")]:
        hnsw.hnsw.efSearch = ef
        for rows in [int(r) for r in rows_list.split(",")]:
            n = q.shape[0] // rows
            lat, got = [], []
            for rep in range(2):
                for i in range(n):
                    t = time.perf_counter()
                    _, ids = hnsw.search(q[i * rows:(i + 1) * rows], k)
                    if rep == 1:
                        lat.append((time.perf_counter() - t) * 1000)
                        got.extend(ids)
            out["points"].append({
                "ef": ef, "rows": rows, "queries": n, "p50": float(np.median(lat)),
                "p90": float(np.quantile(lat, 0.9)), "recall": recall(got, want[:n * rows]),
            })
            print(json.dumps(out["points"][-1]), file=sys.stderr, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--latency":
        latency()
    elif len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve()
    else:
        sys.exit(__doc__)
