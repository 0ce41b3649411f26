"""An int8 variant of a bfe model directory: onnxruntime's dynamic quantisation, per-channel weights.

Usage:
  python tools/model/quantize_int8.py --model-dir <fp32 bfe model dir> --out <new dir> \
      [--name all-minilm-l6-v2-int8pc]

Every MatMul weight becomes int8 with one symmetric scale per output channel
(`quantize_dynamic(per_channel=True, weight_type=QInt8, op_types_to_quantize=["MatMul"])`);
activations are quantised per batch at run time (uint8, dynamic range). Embeddings, LayerNorms
and biases stay fp32. The fp32 graph's other files (tokenizer, configs) are copied unchanged,
and `bfe-model.json` is the fp32 manifest with this graph's name, hashes and `dtype: "int8"`.

Reproducible: with the pinned onnxruntime (tools/model/requirements-export.txt) a second run
writes a byte-identical `model.onnx`; the script quantises twice and refuses to write a
directory when the two graphs differ. Not a default anywhere: `bfe serve --query-model` can
encode the queries with it (passages stay fp32), and `pnpm bench:store --parts codecs
--query-models` measures that store's retrieval beside fp32 (BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from datetime import datetime, timezone


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def quantize(src: str, dst: str) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        src,
        dst,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        reduce_range=False,
        weight_type=QuantType.QInt8,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True, help="fp32 bfe model directory (bfe-model.json)")
    parser.add_argument("--out", required=True, help="new model directory (must not exist)")
    parser.add_argument("--name", default=None, help="model name (default: <fp32 name>-int8pc)")
    args = parser.parse_args()

    with open(os.path.join(args.model_dir, "bfe-model.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    if manifest["dtype"] != "float32":
        print(f"{args.model_dir}: dtype {manifest['dtype']}, expected float32", file=sys.stderr)
        return 2
    if os.path.exists(args.out):
        print(f"{args.out} exists: refusing to overwrite", file=sys.stderr)
        return 2
    src = os.path.join(args.model_dir, manifest["onnxFile"])
    if sha256(src) != manifest["modelSha256"]:
        print(f"{src}: SHA-256 differs from the manifest", file=sys.stderr)
        return 2

    import onnxruntime

    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.out))) as tmp:
        first = os.path.join(tmp, "a.onnx")
        second = os.path.join(tmp, "b.onnx")
        quantize(src, first)
        quantize(src, second)
        digest = sha256(first)
        if sha256(second) != digest:
            print("two quantisations of the same graph differ: not reproducible", file=sys.stderr)
            return 1
        stage = os.path.join(tmp, "out")
        os.mkdir(stage)
        files = []
        for entry in manifest["files"]:
            path = entry["path"]
            if path == manifest["onnxFile"]:
                shutil.copyfile(first, os.path.join(stage, path))
            else:
                shutil.copyfile(os.path.join(args.model_dir, path), os.path.join(stage, path))
            full = os.path.join(stage, path)
            files.append({"path": path, "bytes": os.path.getsize(full), "sha256": sha256(full)})
        name = args.name or f"{manifest['name']}-int8pc"
        out = dict(manifest)
        out.update(
            name=name,
            source={
                "kind": "local",
                "detail": (
                    f"{manifest['name']} (model.onnx sha256 {manifest['modelSha256']}) through "
                    f"onnxruntime {onnxruntime.__version__} quantize_dynamic: MatMul weights int8 "
                    "per channel (symmetric), activations uint8 dynamic (tools/model/quantize_int8.py)"
                ),
            },
            files=files,
            dtype="int8",
            note="int8 weights (per channel) and dynamically quantised activations: not the fp32 model",
            modelSha256=digest,
            createdAt=datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
        )
        with open(os.path.join(stage, "bfe-model.json"), "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        os.rename(stage, args.out)
    print(f"{args.out}: {name}, model.onnx sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
