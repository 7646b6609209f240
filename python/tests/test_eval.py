"""Evaluating @main."""
import numpy as np

import graphpass as gp

CONV = """def @main(%data: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 3, 3), float32],
          %b: Tensor[(3), float32]) {
  nn.relu(nn.bias_add(nn.conv2d(%data, %w, padding=[1, 1, 1, 1], channels=3, kernel_size=[3, 3]), %b))
}"""


def _reference(d, w, b):
    p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 3, 4, 4), np.float64)
    for o in range(3):
        for i in range(4):
            for j in range(4):
                out[0, o, i, j] = (p[0, :, i:i + 3, j:j + 3] * w[o]).sum() + b[o]
    return np.maximum(out, 0)


def test_evaluate_before_and_after_optimization():
    rng = np.random.default_rng(0)
    d = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    m = gp.parse(CONV)
    stats = {}
    (y,) = gp.evaluate(m, d, w, b, stats=stats)
    np.testing.assert_allclose(y, _reference(d, w, b), rtol=1e-5, atol=1e-5)
    assert stats["ops_run"] >= 3 and stats["peak_bytes"] > 0
    opt = gp.optimize(m, opt_level=3)
    (y3,) = gp.evaluate(opt, {"data": d, "w": w, "b": b})
    np.testing.assert_allclose(y3, y, rtol=1e-5, atol=1e-6)


def test_tuple_outputs():
    m = gp.parse("def @main(%x: Tensor[(3), float32]) { (negative(%x), add(%x, 1f)) }")
    a, b = gp.evaluate(m, np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(a, [-1, -2, -3])
    np.testing.assert_array_equal(b, [2, 3, 4])
