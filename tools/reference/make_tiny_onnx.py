"""Writes two tiny ONNX graphs for bfe's encoder unit tests (no model download needed).

- tiny-encoder.onnx: inputs input_ids, attention_mask (int64 [batch, seq]); output
  last_hidden_state float32 [batch, seq, 4] = float(input_ids) * [1, -1, 0.5, 2] + float(mask) * [0, 0, 1, 0]
- no-hidden-state.onnx: the same inputs, but its only output is named `logits`.

Run: python tools/reference/make_tiny_onnx.py packages/encoder/fixtures
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def graph(output_name: str) -> onnx.ModelProto:
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    out = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", "seq", 4])
    w = numpy_helper.from_array(np.array([1, -1, 0.5, 2], dtype=np.float32), "w")
    v = numpy_helper.from_array(np.array([0, 0, 1, 0], dtype=np.float32), "v")
    axes = numpy_helper.from_array(np.array([2], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["idf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["idf", "axes"], ["id3"]),
        helper.make_node("Unsqueeze", ["mf", "axes"], ["m3"]),
        helper.make_node("Mul", ["id3", "w"], ["a"]),
        helper.make_node("Mul", ["m3", "v"], ["b"]),
        helper.make_node("Add", ["a", "b"], [output_name]),
    ]
    g = helper.make_graph(nodes, "tiny", [ids, mask], [out], initializer=[w, v, axes])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="bfe-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    onnx.save(graph("last_hidden_state"), out / "tiny-encoder.onnx")
    onnx.save(graph("logits"), out / "no-hidden-state.onnx")
