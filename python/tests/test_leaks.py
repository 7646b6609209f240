"""Repeated use frees every host object exactly once: the wrappers' live count, the NumPy
arrays' reference counts and the process's resident memory come back."""
import gc
import os
import sys

import numpy as np
import pytest

import graphpass as gp
from conftest import onnx_relu_add
from graphpass._runtime import _callables

TEXT = "def @main(%x: Tensor[(64), float32], %w: Tensor[(64), float32]) { nn.relu(add(%x, %w)) }"
ONNX = onnx_relu_add()


def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    pytest.skip("no /proc/self/status")


def _round(x, w):
    m = gp.parse(TEXT)
    with gp.PassContext(opt_level=3, config={"FoldConstant.max_bytes": 1 << 20}, explain=True,
                        instruments=[gp.Instrument("py.leak")]) as ctx:
        o = ctx.run(m, "PyLeakPass,FoldConstant")
        assert [r.name for r in ctx.trace] == ["PyLeakPass", "FoldConstant"]
    (y,) = gp.evaluate(o, x, w)
    b = m.bind_params({"w": w})
    (y2,) = gp.evaluate(b, x)
    assert y[0] == y2[0]
    t = gp.Tensor.from_numpy(x)
    v = np.from_dlpack(t)
    del v, t
    gp.from_onnx(ONNX, shapes={"x": (1, 4)}).text()
    for bad in ("def @main(", "NoSuchPass"):
        try:
            gp.optimize(m, bad) if bad == "NoSuchPass" else gp.parse(bad)
        except gp.GraphpassError:
            pass
    try:
        gp.optimize(m, "PyLeakBoom")
    except gp.PassError:
        pass
    gp.list_passes()
    gp.opt_sets()
    gp.get_func("py.leak.f")(x)


def test_repeated_use_is_leak_free():
    gp.register_pass("PyLeakPass", lambda m, c: gp.parse(m.text()))
    gp.register_pass("PyLeakBoom", lambda m, c: [][0])
    gp.register_func("py.leak.f", lambda t: t)
    try:
        x = np.linspace(-1, 1, 64).astype(np.float32)
        w = np.ones(64, np.float32)
        for _ in range(20):  # warm up pools and caches
            _round(x, w)
        gc.collect()
        live, rx, rw, rss = gp.live_objects(), sys.getrefcount(x), sys.getrefcount(w), _rss_kb()
        callables = len(_callables)
        for _ in range(300):
            _round(x, w)
        gc.collect()
        assert gp.live_objects() == live
        assert len(_callables) == callables  # every packed function and instrument was deleted once
        assert sys.getrefcount(x) == rx and sys.getrefcount(w) == rw
        grown = _rss_kb() - rss
        if not os.environ.get("GRAPHPASS_TEST_SANITIZED"):  # ASan's quarantine holds freed memory
            assert grown < 4096, "resident memory grew by %d KiB over 300 rounds" % grown
    finally:
        gp.unregister_pass("PyLeakPass")
        gp.unregister_pass("PyLeakBoom")
        gp.unregister_func("py.leak.f")
