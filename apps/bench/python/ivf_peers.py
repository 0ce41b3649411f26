"""faiss-cpu peers of `pnpm bench:big-bank --ivf --ivf-peers`: inverted-file indexes over the same
float32 token states, with the same number of lists, searched with the same query rows.

usage: ivf_peers.py VECTORS.f32 QUERIES.f32 EXACT.i32 DIM K NLIST NPROBE_LIST ROWS SAMPLE SEED PASSES [EF_LIST]

- IndexIVFScalarQuantizer, 4 bits a dimension (QT_4bit: dim / 2 bytes a token, as bfe's 4-bit);
- IndexIVFPQFastScan, 4-bit codes of 4 dimensions (M = dim / 4: dim / 8 bytes a token) and of 2
  dimensions (M = dim / 2: dim / 4 bytes, as bfe's 2-bit): faiss's SIMD fast scan.
- IndexHNSWFlat (M 16, efConstruction 64, as the HNSW section's faiss peer; float32 vectors, no
  training), per efSearch of EF_LIST (default 64,128,256), searched on one thread and on two (one
  query's rows split between them, as bfe's two-thread search splits them).
Each IVF index trains its coarse quantizer and codes on the first SAMPLE rows of a seeded permutation of the
vectors (2 threads for training and adding), then searches one query — ROWS query rows in one
call, one thread, as bfe scans — per nprobe: p50 / p90 ms over PASSES passes over the queries
(after one warm-up search) and recall@K against EXACT.i32 (the caller's exact fp32 top-K per row). Faiss returns its
approximate top K; the fast-scan indexes also behind IndexRefineFlat (k_factor 2 and 4: that many
proposals re-ranked exactly from the float32 vectors, as bfe rescores). Bytes a token count codes,
ids (8 B in faiss) and the refine vectors where used.
Prints one JSON line.
"""
import json
import sys
import time

import faiss
import numpy as np


def simd_level():
    """The SIMD level faiss runs at: its builds dispatch at run time to the widest the CPU has
    (AVX-512 where present), and FAISS_SIMD_LEVEL=AVX2 holds them to AVX2."""
    config = getattr(faiss, "SIMDConfig", None)
    if config is not None and hasattr(config, "get_level_name"):
        return config.get_level_name()
    return faiss.get_compile_options()


def recall(got, want):
    return float(np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want)]))


def main():
    vec_path, q_path, exact_path, dim, k, nlist, nprobes, rows, sample, seed, passes = sys.argv[1:12]
    efs = [int(e) for e in (sys.argv[12] if len(sys.argv) > 12 else "64,128,256").split(",")]
    dim, k, nlist, rows, sample, passes = int(dim), int(k), int(nlist), int(rows), int(sample), int(passes)
    x = np.fromfile(vec_path, dtype=np.float32).reshape(-1, dim)
    q = np.fromfile(q_path, dtype=np.float32).reshape(-1, dim)
    want = np.fromfile(exact_path, dtype=np.int32).reshape(-1, k)
    n = x.shape[0]
    order = np.random.default_rng(int(seed)).permutation(n)[: min(n, sample)]
    train = np.ascontiguousarray(x[np.sort(order)])
    queries = q.shape[0] // rows
    out = {"faiss": faiss.__version__, "simd": simd_level(), "tokens": int(n), "nlist": nlist,
           "indexes": []}
    kinds = [
        ("IVF-SQ4", lambda: faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(dim), dim, nlist, faiss.ScalarQuantizer.QT_4bit, faiss.METRIC_INNER_PRODUCT), dim // 2),
        ("IVF-PQ4fs M=dim/4", lambda: faiss.IndexIVFPQFastScan(
            faiss.IndexFlatIP(dim), dim, nlist, dim // 4, 4, faiss.METRIC_INNER_PRODUCT), dim // 8),
        ("IVF-PQ4fs M=dim/2", lambda: faiss.IndexIVFPQFastScan(
            faiss.IndexFlatIP(dim), dim, nlist, dim // 2, 4, faiss.METRIC_INNER_PRODUCT), dim // 4),
    ]
    for name, make, code_bytes in kinds:
        faiss.omp_set_num_threads(2)
        t = time.perf_counter()
        index = make()
        index.train(train)
        # The fast-scan indexes also with faiss's exact re-ranking of k_factor · K proposals from
        # the float32 vectors (IndexRefineFlat), as bfe rescores its proposals.
        refine = faiss.IndexRefineFlat(index) if "fs" in name else None
        (refine or index).add(x)
        build = time.perf_counter() - t
        faiss.omp_set_num_threads(1)
        searched = [(name, index, code_bytes)]
        if refine is not None:
            for factor in (2, 4):
                searched.append((f"{name} + refine ×{factor}", refine, code_bytes + dim * 4))
        for label, searcher, nbytes in searched:
            if searcher is refine:
                refine.k_factor = float(label.split("×")[1])
            for nprobe in [int(p) for p in nprobes.split(",")]:
                index.nprobe = nprobe
                # `passes` passes over the queries, as bfe's --ivf-reps: recall from the first.
                p50, p90, r = timed(searcher.search, q, want, k, rows, queries, passes)
                out["indexes"].append({
                    "name": label, "nprobe": nprobe, "threads": 1, "build_s": build,
                    "bytes_per_token": nbytes + 8 + nlist * dim * 4 / n,
                    "p50_ms": p50, "p90_ms": p90, "recall": r,
                })
        del index, refine
    hnsw_flat(out, x, q, want, dim, k, rows, queries, passes, efs)
    print(json.dumps(out), flush=True)


def timed(search, q, want, k, rows, queries, passes):
    """p50 / p90 ms of one query over `passes` passes (after one warm-up), recall from the first."""
    search(q[:rows], k)
    ms, got = [], []
    for j in range(queries * passes):
        i = j % queries
        qi = q[i * rows:(i + 1) * rows]
        t = time.perf_counter()
        _, ids = search(qi, k)
        ms.append((time.perf_counter() - t) * 1e3)
        if j < queries:
            got.extend(ids.tolist())
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 90)), recall(got, want)


def hnsw_flat(out, x, q, want, dim, k, rows, queries, passes, efs):
    """IndexHNSWFlat, M 16 / efConstruction 64, built on 2 threads; per efSearch, 1 and 2 threads."""
    faiss.omp_set_num_threads(2)
    t = time.perf_counter()
    index = faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 64
    index.add(x)
    build = time.perf_counter() - t
    # float32 vectors, ids implicit, 2·M neighbours of 4 B at level 0 (upper levels ≈ 1/M of it).
    nbytes = dim * 4 + 2 * 16 * 4 * (1 + 1 / 16)
    for ef in efs:
        index.hnsw.efSearch = ef
        for threads in (1, 2):
            faiss.omp_set_num_threads(threads)
            p50, p90, r = timed(index.search, q, want, k, rows, queries, passes)
            out["indexes"].append({
                "name": "HNSWFlat M=16", "nprobe": ef, "threads": threads, "build_s": build,
                "bytes_per_token": nbytes, "p50_ms": p50, "p90_ms": p90, "recall": r,
            })
    del index


main()
