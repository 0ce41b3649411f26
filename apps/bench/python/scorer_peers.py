"""numpy and faiss-cpu peers of `pnpm bench:scorer` (apps/bench/src/scorer/scorer.bench.ts).

Usage: python apps/bench/python/scorer_peers.py <job.json>

The job (camelCase keys, written by the TypeScript benchmark) names the bank size, dimension,
query rows to time, k, chunk size, seeds, repeats and `resultFile`. The bank and the queries
are generated exactly as apps/bench/src/scorer/synthetic.ts generates them (lowbias32 hashes,
float64 row norms, rounded to float32), so both sides search the same vectors and their top-k
can be compared. Banks larger than `pool` tokens are streamed: token t is pool token
t mod pool with its components rolled by t // pool places (a fresh, distinct unit vector); the
roll is done before each chunk is searched and is not timed, for every peer alike.

Peers, each timed on the same shapes:
  numpy  Q @ X_chunk.T per chunk, argpartition top-k, running merge (argpartition of 2k)
  faiss  IndexFlatIP.add + search (whole bank in memory), or for streamed banks
         faiss.knn(..., METRIC_INNER_PRODUCT) per chunk merged with faiss.ResultHeap

Threads: OMP/OpenBLAS threads come from the environment the benchmark sets;
faiss.omp_set_num_threads(job["threads"]).
The result (JSON, to job["resultFile"]): {"ok": true, "peers": {"numpy": {...}, "faiss": {...}},
"peakRssMb", "baseRssMb", "generationSeconds", "versions"} or {"ok": false, "error"}.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine_busy_seconds() -> float | None:
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / 100


def own_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    job = json.load(open(sys.argv[1]))
    try:
        result = run(job)
    except Exception as e:  # reported to the parent, which prints it
        result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    with open(job["resultFile"], "w") as f:
        json.dump(result, f)


def run(job: dict) -> dict:
    import numpy as np
    import faiss

    faiss.omp_set_num_threads(job["threads"])

    def lowbias32(x: "np.ndarray") -> "np.ndarray":
        tmp = np.empty_like(x)
        np.right_shift(x, 16, out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        np.multiply(x, np.uint32(0x7FEB352D), out=x)
        np.right_shift(x, 15, out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        np.multiply(x, np.uint32(0x846CA68B), out=x)
        np.right_shift(x, 16, out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        return x

    def synthetic(start: int, n: int, dim: int, seed: int) -> "np.ndarray":
        s = lowbias32(np.array([seed], dtype=np.uint32))
        ht = lowbias32(np.arange(start, start + n, dtype=np.uint32) ^ s)
        steps = np.arange(dim, dtype=np.uint32) * np.uint32(0x9E3779B1)
        h = lowbias32(np.add(ht[:, None], steps[None, :]))
        np.right_shift(h, 8, out=h)
        r = h.astype(np.float64)
        del h
        r *= 2.0**-23
        r -= 1
        r /= np.sqrt(np.einsum("ij,ij->i", r, r))[:, None]
        return r.astype(np.float32)

    dim, size, k, chunk = job["dim"], job["size"], job["k"], job["chunkSize"]
    pool_size = job["pool"]
    base_rss = rss_mb()
    t0 = time.perf_counter()
    pool = np.empty((min(size, pool_size), dim), dtype=np.float32)
    for a in range(0, pool.shape[0], chunk):
        b = min(pool.shape[0], a + chunk)
        pool[a:b] = synthetic(a, b - a, dim, job["seed"])
    queries_all = synthetic(0, max(job["rows"]), dim, job["querySeed"])
    generation = time.perf_counter() - t0
    streamed = size > pool_size

    def chunks():
        """(start, X_chunk, untimed seconds) over the bank, in order."""
        for start in range(0, size, chunk):
            end = min(size, start + chunk)
            t = time.perf_counter()
            c, at = divmod(start, pool_size)
            x = pool[at : at + (end - start)]
            if c > 0:
                x = np.roll(x, -c, axis=1)
            yield start, x, time.perf_counter() - t

    def numpy_topk(q: "np.ndarray"):
        rows = q.shape[0]
        best_v = np.full((rows, 0), -np.inf, dtype=np.float32)
        best_i = np.zeros((rows, 0), dtype=np.int64)
        untimed = 0.0
        for start, x, u in chunks():
            untimed += u
            s = q @ x.T
            kk = min(k, s.shape[1])
            idx = np.argpartition(s, s.shape[1] - kk, axis=1)[:, -kk:]
            v = np.take_along_axis(s, idx, axis=1)
            best_v = np.concatenate([best_v, v], axis=1)
            best_i = np.concatenate([best_i, idx + start], axis=1)
            if best_v.shape[1] > k:
                keep = np.argpartition(best_v, best_v.shape[1] - k, axis=1)[:, -k:]
                best_v = np.take_along_axis(best_v, keep, axis=1)
                best_i = np.take_along_axis(best_i, keep, axis=1)
        order = np.argsort(-best_v, axis=1, kind="stable")
        return np.take_along_axis(best_i, order, axis=1), untimed

    index = None
    if not streamed:
        index = faiss.IndexFlatIP(dim)
        index.add(pool)

    def faiss_topk(q: "np.ndarray"):
        if index is not None:
            _, ids = index.search(q, k)
            return ids, 0.0
        heap = faiss.ResultHeap(q.shape[0], k, keep_max=True)
        untimed = 0.0
        for start, x, u in chunks():
            untimed += u
            d, i = faiss.knn(q, np.ascontiguousarray(x), min(k, x.shape[0]), metric=faiss.METRIC_INNER_PRODUCT)
            heap.add_result(d, i + start)
        heap.finalize()
        return heap.I, untimed

    peers = {}
    for name, fn in (("numpy", numpy_topk), ("faiss", faiss_topk)):
        runs = []
        sample = None
        for rows in job["rows"]:
            q = np.ascontiguousarray(queries_all[:rows])
            fn(q)  # warm-up (also builds BLAS/OpenMP thread pools)
            seconds, other = [], []
            start_all = time.perf_counter()
            while len(seconds) < job["repeat"] or (
                time.perf_counter() - start_all < job["minSeconds"] and len(seconds) < 50
            ):
                busy0, cpu0 = machine_busy_seconds(), own_cpu_seconds()
                t = time.perf_counter()
                ids, untimed = fn(q)
                seconds.append(time.perf_counter() - t - untimed)
                busy1, cpu1 = machine_busy_seconds(), own_cpu_seconds()
                if busy0 is not None and busy1 is not None:
                    other.append(max(0.0, (busy1 - busy0) - (cpu1 - cpu0)))
            if sample is None:
                sample = ids[: job["sampleRows"]].tolist()
            runs.append({"rows": rows, "seconds": seconds, "otherCpuSeconds": other})
        peers[name] = {"runs": runs, "indices": sample}

    latency = None
    lat = job.get("latency")
    if lat is not None:
        bank = synthetic(0, lat["bankTokens"], dim, lat["seed"])
        q = synthetic(0, lat["queryTokens"], dim, lat["seed"] + 1)
        lat_index = faiss.IndexFlatIP(dim)
        lat_index.add(bank)

        def numpy_one():
            s = q @ bank.T
            idx = np.argpartition(s, s.shape[1] - k, axis=1)[:, -k:]
            v = np.take_along_axis(s, idx, axis=1)
            return np.take_along_axis(idx, np.argsort(-v, axis=1), axis=1)

        latency = {}
        for name, fn in (("numpy", numpy_one), ("faiss", lambda: lat_index.search(q, k))):
            for _ in range(lat["warmup"]):
                fn()
            ms = []
            for _ in range(lat["runs"]):
                t = time.perf_counter()
                fn()
                ms.append((time.perf_counter() - t) * 1000)
            latency[name] = ms

    return {
        "ok": True,
        "peers": peers,
        "latencyMs": latency,
        "generationSeconds": generation,
        "baseRssMb": base_rss,
        "peakRssMb": peak_rss_mb(),
        "versions": {"numpy": np.__version__, "faiss": faiss.__version__, "python": sys.version.split()[0]},
    }


if __name__ == "__main__":
    main()
