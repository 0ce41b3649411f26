"""Opens a bfe bank directory with pyarrow alone and checks it explains itself.

Usage: python tools/reference/check_bank_pyarrow.py <bank dir>
Prints each table's schema metadata and row counts, and checks: n_tokens sum to the tokens
table's rows, every token's owner index is in range and grouped in row order, and every
vector is unit-norm (float16 files to 2e-3, float32 to 1e-5).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc


def table(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


def unit_check(column: pa.ChunkedArray, dim: int, tol: float) -> float:
    values = np.concatenate([c.flatten().to_numpy(zero_copy_only=False) for c in column.chunks]).astype(np.float64)
    norms = np.linalg.norm(values.reshape(-1, dim), axis=1)
    worst = float(np.max(np.abs(norms - 1))) if len(norms) else 0.0
    assert worst < tol, f"a vector is {worst} away from unit norm"
    return worst


def main(bank: Path) -> None:
    manifest = json.loads((bank / "bank.json").read_text())
    for rows_name, tokens_name, index in [
        ("memories.arrow", "memory-tokens.arrow", "memory_index"),
        ("queries.arrow", "query-tokens.arrow", "query_index"),
    ]:
        rows, tokens = table(bank / rows_name), table(bank / tokens_name)
        meta = {k.decode(): v.decode() for k, v in (rows.schema.metadata or {}).items()}
        dim, dtype = int(meta["bfe.dim"]), meta["bfe.dtype"]
        tol = 2e-3 if dtype == "float16" else 1e-5
        n_tokens = rows.column("n_tokens").to_numpy()
        owner = tokens.column(index).to_numpy()
        assert int(n_tokens.sum()) == tokens.num_rows, "n_tokens do not sum to the tokens table"
        assert np.all(np.diff(owner) >= 0) and (len(owner) == 0 or owner[-1] < rows.num_rows)
        worst_pooled = unit_check(rows.column("pooled"), dim, tol)
        worst_tokens = unit_check(tokens.column("vector"), dim, tol)
        print(f"{rows_name}: {rows.num_rows} rows, {tokens_name}: {tokens.num_rows} tokens, dim {dim}, {dtype}, "
              f"model {meta['bfe.model_id']}, max |norm-1| pooled {worst_pooled:.2e} tokens {worst_tokens:.2e}")
    print(f"ok: {bank} ({manifest['dataset']}, {manifest['model']['name']})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
