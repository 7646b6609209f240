"""ONNX import from bytes and from a path."""
import numpy as np
import pytest

import graphpass as gp
from conftest import onnx_relu_add


def test_from_bytes_with_a_fixed_shape():
    m = gp.from_onnx(onnx_relu_add(), shapes={"x": (2, 4)})
    assert m.params() == [("x", ((2, 4), "float32"))]
    x = np.array([[1, 1, 1, 1], [-5, 5, -5, 5]], np.float32)
    (y,) = gp.evaluate(gp.optimize(m, opt_level=3), x)
    np.testing.assert_array_equal(y, np.maximum(x + np.array([0, -1, 2, -3], np.float32), 0))


def test_from_path(tmp_path):
    p = tmp_path / "relu_add.onnx"
    p.write_bytes(onnx_relu_add(n=3))
    m = gp.from_onnx(p)
    assert m.params() == [("x", ((3, 4), "float32"))]
    assert gp.load(str(p)) == m
    assert m.source_name == str(p)


def test_onnx_errors(tmp_path):
    with pytest.raises(gp.ParseError):
        gp.from_onnx(b"\xff\xff not protobuf")
    with pytest.raises(gp.GPIOError) as ei:
        gp.from_onnx(tmp_path / "missing.onnx")
    assert "missing.onnx" in ei.value.message
    with pytest.raises(gp.GPValueError):
        gp.from_onnx(onnx_relu_add(), shapes={"x": (-1, 4)})
