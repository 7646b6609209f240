#!/usr/bin/env python3
"""Writes the *.before.relay inputs of tests/test_fold_scale_axis.c (constants in the metadata
section).  The *.after.relay files are the passes' outputs, checked against TVM v0.12's
test_pass_fold_scale_axis.py expectations by hand and numerically by th_golden."""
import base64, os, struct, random

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(14)


def shp(s):
    return "(" + ", ".join(str(d) for d in s) + ")"


class Mod:
    def __init__(self):
        self.consts = []

    def const(self, shape, lo=-1.0, hi=1.0, dtype="float32", vals=None):
        n = 1
        for d in shape:
            n *= d
        if vals is None:
            vals = [round(rng.uniform(lo, hi), 3) for _ in range(n)]
        fmt = "<%d%s" % (n, "f" if dtype == "float32" else "d")
        data = base64.b64encode(struct.pack(fmt, *vals)).decode()
        self.consts.append("relay.Constant[%d] = %s %s base64:%s" % (len(self.consts), dtype, shp(shape), data))
        return "meta[relay.Constant][%d]" % (len(self.consts) - 1)

    def write(self, name, params, body):
        text = '#[version = "0.0.5"]\ndef @main(%s) {\n%s\n}\n' % (params, body)
        if self.consts:
            text += "#[metadata]\n" + "\n".join(self.consts) + "\n"
        with open(os.path.join(HERE, name + ".before.relay"), "w") as f:
            f.write(text)


def t(s, dt="float32"):
    return "Tensor[%s, %s]" % (shp(s), dt)


# ---- backward
m = Mod()
w = m.const((4, 3, 3, 3)); s = m.const((4, 1, 1), 0.5, 2.0)
m.write("bwd_conv", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n  multiply(%%0, %s)" % (w, s))

m = Mod()
w = m.const((4, 3, 3, 3)); b = m.const((4,)); s = m.const((4, 1, 1), 0.5, 2.0)
m.write("bwd_bias_relu", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %%1 = nn.bias_add(%%0, %s);\n  %%2 = nn.relu(%%1);\n  multiply(%%2, %s)" % (w, b, s))

m = Mod()
w = m.const((4, 3, 3, 3)); b = m.const((4, 1, 1)); s = m.const((4, 1, 1), vals=[0.5, -1.5, 2.0, 1.0])
m.write("bwd_neg_relu", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %%1 = add(%%0, %s);\n  %%2 = nn.relu(%%1);\n  multiply(%%2, %s)" % (w, b, s))

m = Mod()
w = m.const((4, 3, 3, 3)); b = m.const((4, 1, 1)); s = m.const((4, 1, 1), vals=[0.5, -1.5, 2.0, 1.0])
m.write("bwd_add_neg", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %%1 = add(%%0, %s);\n  multiply(%%1, %s)" % (w, b, s))

m = Mod()
w = m.const((5, 8)); s = m.const((5,), 0.5, 2.0)
m.write("bwd_dense", "%x: " + t((2, 8)),
        "  %%0 = nn.dense(%%x, %s, units=5);\n  multiply(%%0, %s)" % (w, s))

m = Mod()
w1 = m.const((4, 3, 3, 3)); w2 = m.const((4, 3, 1, 1)); s = m.const((4, 1, 1), 0.5, 2.0)
m.write("bwd_dual_path", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %%1 = nn.conv2d(%%x, %s, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);\n"
        "  %%2 = add(%%0, %%1);\n  multiply(%%2, %s)" % (w1, w2, s))

m = Mod()
w = m.const((4, 3, 3, 3)); s = m.const((4, 1, 1), 0.5, 2.0)
m.write("bwd_other_consumer", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %%1 = multiply(%%0, %s);\n  add(%%1, %%0)" % (w, s))

m = Mod()
w = m.const((3, 3, 3, 4)); s = m.const((4,), 0.5, 2.0)
m.write("bwd_nhwc", "%x: " + t((1, 6, 6, 3)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3], data_layout=\"NHWC\", kernel_layout=\"HWIO\");\n"
        "  multiply(%%0, %s)" % (w, s))

m = Mod()
m.write("bwd_var_scale", "%x: " + t((1, 3, 6, 6)) + ", %w: " + t((4, 3, 3, 3)) + ", %s: " + t((4, 1, 1)),
        "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n  multiply(%0, %s)")

# ---- forward
m = Mod()
s = m.const((3, 1, 1), 0.5, 2.0); w = m.const((4, 3, 3, 3))
m.write("fwd_relu_conv", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n  %%1 = nn.relu(%%0);\n"
        "  nn.conv2d(%%1, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])" % (s, w))

m = Mod()
s = m.const((3, 1, 1), vals=[0.5, -2.0, 1.5]); w = m.const((4, 3, 3, 3))
m.write("fwd_neg_relu", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n  %%1 = nn.relu(%%0);\n"
        "  nn.conv2d(%%1, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])" % (s, w))

m = Mod()
s = m.const((3, 1, 1), 0.5, 2.0); b = m.const((3, 1, 1)); w = m.const((4, 3, 3, 3))
m.write("fwd_add_conv", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n  %%1 = add(%%0, %s);\n"
        "  nn.conv2d(%%1, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])" % (s, b, w))

m = Mod()
s = m.const((8,), 0.5, 2.0); w = m.const((5, 8))
m.write("fwd_dense", "%x: " + t((2, 8)),
        "  %%0 = multiply(%%x, %s);\n  nn.dense(%%0, %s, units=5)" % (s, w))

m = Mod()
w = m.const((4, 3, 3, 3))
m.write("fwd_scalar", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = multiply(%%x, 2f);\n  nn.conv2d(%%0, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])" % w)

m = Mod()
s = m.const((3, 1, 1), 0.5, 2.0); w = m.const((4, 3, 3, 3))
m.write("fwd_not_reaching", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n  %%1 = exp(%%0);\n"
        "  nn.conv2d(%%1, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])" % (s, w))

m = Mod()
s = m.const((3, 1, 1), 0.5, 2.0); w = m.const((4, 3, 3, 3))
m.write("fwd_other_consumer", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n"
        "  %%1 = nn.conv2d(%%0, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n  (%%1, %%0)" % (s, w))

m = Mod()
s = m.const((4, 1, 1), 0.5, 2.0); w = m.const((4, 1, 3, 3))
m.write("fwd_depthwise", "%x: " + t((1, 4, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n"
        "  nn.conv2d(%%0, %s, padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3])" % (s, w))

m = Mod()
s = m.const((4, 1, 1), 0.5, 2.0); w = m.const((6, 2, 3, 3))
m.write("fwd_grouped", "%x: " + t((1, 4, 6, 6)),
        "  %%0 = multiply(%%x, %s);\n"
        "  nn.conv2d(%%0, %s, padding=[1, 1, 1, 1], groups=2, channels=6, kernel_size=[3, 3])" % (s, w))

# ---- both, then FoldConstant: a batch_norm-like scale after one conv, before the next
m = Mod()
w1 = m.const((4, 3, 3, 3)); s1 = m.const((4, 1, 1), 0.5, 2.0); b1 = m.const((4, 1, 1))
s2 = m.const((4, 1, 1), 0.5, 2.0); w2 = m.const((2, 4, 1, 1))
m.write("fsa_chain", "%x: " + t((1, 3, 6, 6)),
        "  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        "  %%1 = multiply(%%0, %s);\n  %%2 = add(%%1, %s);\n  %%3 = nn.relu(%%2);\n"
        "  %%4 = multiply(%%3, %s);\n  nn.conv2d(%%4, %s, padding=[0, 0, 0, 0], channels=2, kernel_size=[1, 1])"
        % (w1, s1, b1, s2, w2))

# ---- error: the weight's dtype differs from the scale's
m = Mod()
s = m.const((8,), 0.5, 2.0); w = m.const((5, 8), dtype="float64")
m.write("err_dtype", "%x: " + t((2, 8)),
        "  %%0 = multiply(%%x, %s);\n  nn.dense(%%0, %s, units=5, out_dtype=\"float32\")" % (s, w))
