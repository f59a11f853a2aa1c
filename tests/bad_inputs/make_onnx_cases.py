#!/usr/bin/python3
"""Writes the bad ONNX models of the bad-input catalogue (catalogue.toml) into this folder.
Run with Debian's python3-onnx: /usr/bin/python3 tests/bad_inputs/make_onnx_cases.py
The outputs are committed; this script documents how each was made."""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def model(nodes, inputs, outputs, inits=(), opset=13, check=False):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def save(name, m):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(m.SerializeToString())


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def weight(name, dims):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    return t


def conv(x, w, y, **kw):
    return helper.make_node("Conv", [x, w], [y], name="conv", **kw)


good = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1, 4])], [vi("y", [1, 4])])
data = good.SerializeToString()
with open(os.path.join(HERE, "truncated.onnx"), "wb") as f:
    f.write(data[: len(data) // 2])
with open(os.path.join(HERE, "wrong_magic.onnx"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
open(os.path.join(HERE, "empty.onnx"), "wb").close()

# a cycle: a -> b -> a
save("cyclic.onnx", model([helper.make_node("Relu", ["x", "b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second"),
                           helper.make_node("Relu", ["b"], ["y"], name="third")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
# two nodes writing the same tensor
save("duplicate_tensor.onnx", model([helper.make_node("Relu", ["x"], ["t"], name="one"), helper.make_node("Sigmoid", ["x"], ["t"], name="two"),
                                     helper.make_node("Relu", ["t"], ["y"], name="three")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
# a node reading a tensor nobody produces
save("missing_initializer.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
# negative pads
save("negative_pads.onnx", model([conv("x", "w", "y", pads=[-1, -1, -1, -1])], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
                                 [weight("w", [4, 3, 3, 3])]))
# Conv weights for 5 input channels on a 3-channel input
save("conv_channels.onnx", model([conv("x", "w", "y")], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [weight("w", [4, 5, 3, 3])]))
# an opset from the future
save("future_opset.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1, 4])], [vi("y", [1, 4])], opset=99))
# an operator nobody knows
save("unknown_op.onnx", model([helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")], [vi("x", [1, 4])], [vi("y", [1, 4])]))
# a symbolic dim never bound
save("symbolic_dim.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", ["batch", 4])], [vi("y", ["batch", 4])]))


def external(name, location):
    w = weight("w", [4, 4])
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", location
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], [vi("x", [1, 4])], [vi("y", [1, 4])], [w])


save("external_dotdot.onnx", external("external_dotdot", "../../../etc/passwd"))
save("external_absolute.onnx", external("external_absolute", "/etc/passwd"))
# a 10^12-element tensor claimed by an initializer (must be refused, never allocated)
save("huge_tensor.onnx", model([helper.make_node("Relu", ["w"], ["y"], name="relu")], [], [vi("y", [1000000, 1000000])],
                               [weight("w", [1000000, 1000000])]))
# a graph with no nodes
save("no_nodes.onnx", model([], [vi("x", [1, 4])], [vi("x", [1, 4])]))
# Gemm with inner dims that disagree
save("gemm_mismatch.onnx", model([helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm")], [vi("x", [2, 3])], [vi("y", [2, 4])],
                                 [weight("w", [5, 4])]))
# a model input with a zero-sized dim: nothing to compute
save("zero_dim.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], [vi("x", [0, 4])], [vi("y", [0, 4])],
                            [weight("w", [4, 4])]))
print("wrote the bad ONNX cases to", HERE)
