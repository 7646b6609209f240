"""Shared helpers of the Python suite: small Relay modules and a hand-encoded ONNX model (so the
suite needs no `onnx` package)."""
import struct

import pytest

import graphpass as gp

ADD2 = "def @main(%x: Tensor[(2, 3), float32]) { add(%x, %x) }"


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num, wire, payload):
    key = _varint(num << 3 | wire)
    if wire == 0:
        return key + _varint(payload)
    return key + _varint(len(payload)) + payload


def _s(num, text):
    return _field(num, 2, text.encode() if isinstance(text, str) else text)


def _value_info(name, dims):
    dim_msgs = b"".join(_field(1, 2, _s(2, d) if isinstance(d, str) else _field(1, 0, d)) for d in dims)
    tensor_type = _field(1, 0, 1) + _field(2, 2, dim_msgs)  # elem_type FLOAT, shape
    return _s(1, name) + _field(2, 2, _field(1, 2, tensor_type))


def onnx_relu_add(n="N", c=4):
    """y = Relu(x + b): x of shape (n, c) (n a dim_param by default), b an initializer (c,)
    holding 0, -1, 2, -3, ... -- bytes of a ModelProto."""
    b = [float(i if i % 2 == 0 else -i) for i in range(c)]
    init = (_field(1, 0, c) + _field(2, 0, 1) + _s(8, "b") + _s(9, struct.pack("<%df" % c, *b)))
    node1 = _s(1, "x") + _s(1, "b") + _s(2, "s") + _s(3, "add0") + _s(4, "Add")
    node2 = _s(1, "s") + _s(2, "y") + _s(3, "relu0") + _s(4, "Relu")
    graph = (_field(1, 2, node1) + _field(1, 2, node2) + _s(2, "g") + _field(5, 2, init)
             + _field(11, 2, _value_info("x", [n, c])) + _field(12, 2, _value_info("y", [n, c])))
    opset = _s(1, "") + _field(2, 0, 13)
    return _field(1, 0, 8) + _field(8, 2, opset) + _field(7, 2, graph)


@pytest.fixture
def add2():
    return gp.parse(ADD2)
