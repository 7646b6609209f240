#!/usr/bin/env python3
"""Generator of the OPU accuracy test on real data (tests/test_opu_genir.c, digits test).

Trains a small dense network (64 -> 64 -> relu -> 10) on scikit-learn's bundled digits data
set (8x8 images, 1,797 samples), seeded, in numpy (full-batch Adam on softmax cross-entropy),
and writes into OUTDIR:
  digits.relay      the network in Relay text with its weights as metadata constants; the dense
                    layers are 1x1 convolutions between reshapes (what Peephole's
                    PatternTransformer5 makes of a dense), so the whole network is one OPU region
  digits_cal.npy    300 training images (float32, (300, 64), values in [0, 1]): calibration
  digits_test.npy   the 300 held-out images, never used for training or calibration
  digits_labels.npy their labels (int64, (300,))
  digits_float.txt  the float accuracy numpy measured on them
Exit status 77 when numpy or scikit-learn is missing (the test skips, naming them).

  usage: opu_digits.py OUTDIR
"""
import base64
import os
import sys

try:
    import numpy as np
    from sklearn.datasets import load_digits
except ImportError as e:  # pragma: no cover
    print("opu_digits.py: %s (install python3-numpy python3-sklearn)" % e, file=sys.stderr)
    sys.exit(77)

N = 300  # test and calibration batch


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    rng = np.random.default_rng(20240515)
    perm = rng.permutation(len(x))
    test, train = perm[:N], perm[N:]
    xt, yt = x[train], y[train]
    h = 64
    w1 = (rng.standard_normal((h, 64)) * np.sqrt(2.0 / 64)).astype(np.float32)
    b1 = np.zeros(h, np.float32)
    w2 = (rng.standard_normal((10, h)) * np.sqrt(2.0 / h)).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    params = [w1, b1, w2, b2]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    lr, beta1, beta2 = 0.01, 0.9, 0.999
    onehot = np.eye(10, dtype=np.float32)[yt]
    for step in range(1, 401):
        a1 = xt @ w1.T + b1
        r1 = np.maximum(a1, 0)
        z = r1 @ w2.T + b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) / len(xt)
        gw2 = g.T @ r1
        gb2 = g.sum(axis=0)
        g1 = (g @ w2) * (a1 > 0)
        gw1 = g1.T @ xt
        gb1 = g1.sum(axis=0)
        grads = [gw1 + 1e-4 * w1, gb1, gw2 + 1e-4 * w2, gb2]
        for i, (pp, gg) in enumerate(zip(params, grads)):
            m[i] = beta1 * m[i] + (1 - beta1) * gg
            v[i] = beta2 * v[i] + (1 - beta2) * gg * gg
            mh = m[i] / (1 - beta1 ** step)
            vh = v[i] / (1 - beta2 ** step)
            pp -= (lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
    logits = np.maximum(x[test] @ w1.T + b1, 0) @ w2.T + b2
    acc = float((logits.argmax(axis=1) == y[test]).mean())

    consts = [w1.reshape(h, 64, 1, 1), b1.reshape(h, 1, 1), w2.reshape(10, h, 1, 1), b2.reshape(10, 1, 1)]

    def ty(a):
        return "Tensor[(%s), float32]" % ", ".join(str(s) for s in a.shape)

    def meta(i):
        return "meta[relay.Constant][%d] /* ty=%s */" % (i, ty(consts[i]))

    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({N}, 64), float32]) -> Tensor[({N}, 10), float32] {{
  %0 = reshape(%x, newshape=[{N}, 64, 1, 1]);
  %1 = nn.conv2d(%0, {meta(0)}, padding=[0, 0, 0, 0], channels={h}, kernel_size=[1, 1]);
  %2 = add(%1, {meta(1)});
  %3 = nn.relu(%2);
  %4 = nn.conv2d(%3, {meta(2)}, padding=[0, 0, 0, 0], channels=10, kernel_size=[1, 1]);
  %5 = add(%4, {meta(3)});
  reshape(%5, newshape=[{N}, 10])
}}
#[metadata]
"""
    for i, c in enumerate(consts):
        data = base64.b64encode(np.ascontiguousarray(c, dtype="<f4").tobytes()).decode()
        text += "relay.Constant[%d] = float32 (%s) base64:%s\n" % (i, ", ".join(str(s) for s in c.shape), data)
    with open(os.path.join(out, "digits.relay"), "w") as f:
        f.write(text)
    np.save(os.path.join(out, "digits_cal.npy"), x[train[:N]])
    np.save(os.path.join(out, "digits_test.npy"), x[test])
    np.save(os.path.join(out, "digits_labels.npy"), y[test])
    with open(os.path.join(out, "digits_float.txt"), "w") as f:
        f.write("%.6f\n" % acc)


if __name__ == "__main__":
    main()
