"""NumPy in and out through DLPack, without copies."""
import sys

import numpy as np
import pytest

import graphpass as gp


def test_numpy_to_tensor_shares_memory():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = gp.Tensor.from_numpy(x)
    assert t.shape == (3, 4) and t.dtype == "float32"
    assert t.data_ptr == x.ctypes.data  # the host tensor views x's buffer
    y = np.from_dlpack(t)
    assert y.ctypes.data == x.ctypes.data and np.shares_memory(x, y)
    x[0, 0] = 42.0
    assert y[0, 0] == 42.0
    assert t.numpy().flags.writeable is False


def test_deleters_run_once_and_release_the_array():
    x = np.ones(16, dtype=np.float64)
    base = sys.getrefcount(x)
    t = gp.Tensor.from_numpy(x)
    assert sys.getrefcount(x) == base + 1  # NumPy's DLManagedTensor holds x
    y = np.from_dlpack(t)
    cap = t.__dlpack__()  # an unconsumed capsule frees its DLManagedTensor itself
    del cap
    t.close()
    assert sys.getrefcount(x) == base + 1  # y's view still holds the host tensor
    del y
    assert sys.getrefcount(x) == base


def test_eval_outputs_are_views_of_host_tensors():
    m = gp.parse("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }")
    x = np.array([-1, 2, -3, 4], dtype=np.float32)
    (t,) = gp.evaluate(m, x, tensors=True)
    a = t.numpy()
    assert a.ctypes.data == t.data_ptr
    np.testing.assert_array_equal(a, [0, 2, 0, 4])
    (b,) = gp.evaluate(m, x)
    np.testing.assert_array_equal(b, a)
    assert not b.flags.writeable


def test_strided_and_other_dtypes():
    x = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2]  # a strided view
    t = gp.Tensor.from_numpy(x)
    assert t.data_ptr == x.ctypes.data and t.dtype == "int64"
    np.testing.assert_array_equal(np.from_dlpack(t), x)
    b = np.array([True, False])
    tb = gp.Tensor.from_numpy(b)  # NumPy 1.24 cannot export bool: copied
    assert tb.dtype == "bool"
    vb = tb.numpy()
    assert vb.ctypes.data == tb.data_ptr
    np.testing.assert_array_equal(vb, b)
    with pytest.raises(BufferError):
        np.from_dlpack(tb)


def test_copy_flag():
    x = np.arange(4, dtype=np.float32)
    assert gp.Tensor.from_numpy(x, copy=True).data_ptr != x.ctypes.data
    ro = x.copy()
    ro.flags.writeable = False
    with pytest.raises(gp.UnsupportedError):
        gp.Tensor.from_numpy(ro, copy=False)
    np.testing.assert_array_equal(gp.Tensor.from_numpy(ro).numpy(), ro)


def test_bind_params_shares_the_array():
    w = np.array([1, 2, 3, 4], dtype=np.float32)
    m = gp.parse("def @main(%x: Tensor[(4), float32], %w: Tensor[(4), float32]) { add(%x, %w) }")
    b = m.bind_params({"w": w})
    assert [n for n, _ in b.params()] == ["x"]
    x = np.full(4, 10, dtype=np.float32)
    np.testing.assert_array_equal(gp.evaluate(b, x)[0], [11, 12, 13, 14])
    w[0] = 100  # the constant views w (no copy)
    np.testing.assert_array_equal(gp.evaluate(b, x)[0], [110, 12, 13, 14])
    with pytest.raises(gp.NotFoundError):
        m.bind_params({"nope": w})
