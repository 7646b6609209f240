#!/usr/bin/env python3
"""Writes the *.before.relay inputs of tests/test_fusion.c (deterministic values; no numpy).

Run from the repository root: python3 tests/data/fusion/make_before.py.  The *.after.relay files
are the passes' outputs, reviewed by hand; th_golden checks the numbers of every pair."""
import base64
import os
import struct

OUT = os.path.dirname(os.path.abspath(__file__))


class Mod:
    def __init__(self, seed):
        self.state = seed
        self.consts = []

    def rand(self):  # an LCG in [-1, 1)
        self.state = (self.state * 1103515245 + 12345) % (1 << 31)
        return self.state / float(1 << 30) - 1.0

    def c(self, *shape, lo=None, hi=None, dtype="float32"):
        n = 1
        for d in shape:
            n *= d
        vals = []
        for _ in range(n):
            v = self.rand()
            if lo is not None:
                v = lo + (v + 1.0) / 2.0 * (hi - lo)
            vals.append(round(v, 3))
        fmt = "<%d%s" % (n, "f" if dtype == "float32" else "d")
        data = base64.b64encode(struct.pack(fmt, *vals)).decode()
        self.consts.append("%s (%s) base64:%s" % (dtype, ", ".join(str(d) for d in shape), data))
        return "meta[relay.Constant][%d]" % (len(self.consts) - 1)

    def bn(self, ch, dtype="float32"):
        """gamma, beta, mean, var (var > 0)."""
        return ", ".join([self.c(ch, lo=0.5, hi=1.5, dtype=dtype), self.c(ch, dtype=dtype),
                          self.c(ch, dtype=dtype), self.c(ch, lo=0.2, hi=2.0, dtype=dtype)])

    def write(self, name, body):
        text = '#[version = "0.0.5"]\n' + body.strip("\n") + "\n"
        if self.consts:
            text += "#[metadata]\n" + "".join("relay.Constant[%d] = %s\n" % (i, c) for i, c in enumerate(self.consts))
        with open(os.path.join(OUT, name + ".before.relay"), "w") as f:
            f.write(text)


def fc():
    m = Mod(1)
    w1, b1, w2, b2 = m.c(4, 8), m.c(4), m.c(3, 4), m.c(1, 3)
    m.write("fc_chain", f"""
def @main(%x: Tensor[(2, 8), float32]) {{
  %0 = nn.dense(%x, {w1}, units=4);
  %1 = add(%0, {b1});
  %2 = nn.relu(%1);
  %3 = nn.dense(%2, {w2}, units=3);
  add(%3, {b2})
}}""")
    m = Mod(2)
    w1, b1, w2, b2, b3 = m.c(8, 4), m.c(4), m.c(4, 8), m.c(4), m.c(4)
    m.write("fc_matmul", f"""
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32]) {{
  %0 = nn.matmul(%x, {w1});
  %1 = add(%0, {b1});
  %2 = nn.matmul(%x, {w2}, transpose_b=True);
  %3 = add(%2, {b2});
  %4 = nn.dense(%x, %w, units=4);
  %5 = add(%4, {b3});
  %6 = nn.relu(%5);
  (%1, %3, %6)
}}""")
    m = Mod(3)
    w1, b1, w2, w3, b3, w4, b4 = m.c(4, 8), m.c(2, 4), m.c(4, 8), m.c(4, 8), m.c(4), m.c(4, 8), m.c(4)
    m.write("fc_left_alone", f"""
def @main(%x: Tensor[(2, 8), float32], %y: Tensor[(2, 4), float32]) {{
  %0 = nn.dense(%x, {w1}, units=4);
  %1 = add(%0, {b1});
  %2 = nn.dense(%x, {w2}, units=4);
  %3 = add(%2, %y);
  %4 = nn.dense(%x, {w3}, units=4);
  %5 = add(%4, {b3});
  %6 = sigmoid(%4);
  %7 = nn.dense(%x, {w4}, units=4);
  %8 = add(%7, {b4});
  %9 = nn.relu(%8);
  (%1, %3, %5, %6, %8, %9)
}}""")


def conv_bn():
    m = Mod(11)
    w1, bn1 = m.c(4, 3, 3, 3), m.bn(4)
    w2, cb2, bn2 = m.c(4, 4, 1, 1), m.c(4), m.bn(4)
    w3, bn3 = m.c(4, 4, 1, 1), m.bn(4)
    m.write("bn_nchw", f"""
def @main(%x: Tensor[(1, 3, 6, 6), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, {bn1}, epsilon=0.001f);
  %2 = %1.0;
  %3 = nn.relu(%2);
  %4 = nn.conv2d(%3, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %5 = nn.bias_add(%4, {cb2});
  %6 = nn.batch_norm(%5, {bn2});
  %7 = %6.0;
  %8 = nn.conv2d(%7, {w3}, strides=[2, 2], padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %9 = nn.batch_norm(%8, {bn3}, center=False, scale=False);
  %9.0
}}""")
    m = Mod(12)
    w1, bn1 = m.c(4, 1, 3, 3), m.bn(4)
    w2, bn2 = m.c(6, 2, 3, 3), m.bn(6)
    m.write("bn_groups", f"""
def @main(%x: Tensor[(1, 4, 5, 5), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, {bn1});
  %2 = %1.0;
  %3 = nn.conv2d(%2, {w2}, padding=[1, 1, 1, 1], groups=2, channels=6, kernel_size=[3, 3]);
  %4 = nn.batch_norm(%3, {bn2});
  %4.0
}}""")
    m = Mod(13)
    w1, bn1 = m.c(3, 3, 2, 4), m.bn(4)
    w2, bn2 = m.c(1, 1, 4, 4), m.bn(4)
    m.write("bn_nhwc", f"""
def @main(%x: Tensor[(1, 5, 5, 2), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3], data_layout="NHWC", kernel_layout="HWIO");
  %1 = nn.batch_norm(%0, {bn1}, axis=3);
  %2 = %1.0;
  %3 = nn.conv2d(%2, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1], data_layout="NHWC", kernel_layout="HWIO");
  %4 = nn.batch_norm(%3, {bn2}, axis=-1);
  %4.0
}}""")
    m = Mod(14)
    bn1 = m.bn(4)
    w2, g2, b2, mu2, v2 = m.c(4, 4, 1, 1), m.c(4, lo=0.5, hi=1.5), m.c(4), m.c(4), m.c(4, lo=0.2, hi=2.0)
    w3, bn3 = m.c(4, 4, 1, 1), m.bn(4)
    w4, bn4 = m.c(4, 4, 1, 1), m.bn(4)
    w5, bn5 = m.c(4, 4, 1, 1), m.bn(4)
    m.write("bn_left_alone", f"""
def @main(%x: Tensor[(1, 4, 4, 4), float32], %w: Tensor[(4, 4, 1, 1), float32], %gamma: Tensor[(4), float32]) {{
  %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %1 = nn.batch_norm(%0, {bn1});
  %2 = %1.0;
  %3 = nn.conv2d(%2, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %4 = nn.batch_norm(%3, %gamma, {b2}, {mu2}, {v2});
  %5 = %4.0;
  %6 = nn.conv2d(%5, {w3}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %7 = nn.batch_norm(%6, {bn3});
  %8 = %7.0;
  %9 = sigmoid(%6);
  %10 = nn.conv2d(%8, {w4}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %11 = nn.batch_norm(%10, {bn4}, axis=2);
  %12 = %11.0;
  %13 = nn.conv2d(%12, {w5}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %14 = nn.batch_norm(%13, {bn5});
  %15 = %14.0;
  %16 = %14.1;
  (%9, %15, %16)
}}""")


def conv_elementwise():
    m = Mod(21)
    w1, b1 = m.c(4, 3, 3, 3), m.c(4, 1, 1)
    w2, b2 = m.c(4, 4, 1, 1), m.c(1, 4, 1, 1)
    w3, cb3, b3 = m.c(4, 4, 1, 1), m.c(4), m.c(4, 1, 1)
    w4, cb4, b4 = m.c(4, 4, 1, 1), m.c(4), m.c(1, 1, 1)
    m.write("ew_nchw", f"""
def @main(%x: Tensor[(1, 3, 5, 5), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = add(%0, {b1});
  %2 = nn.conv2d(%1, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %3 = add(%2, {b2});
  %4 = nn.conv2d(%3, {w3}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %5 = nn.bias_add(%4, {cb3});
  %6 = add(%5, {b3});
  %7 = nn.conv2d(%6, {w4}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %8 = nn.bias_add(%7, {cb4});
  add(%8, {b4})
}}""")
    m = Mod(22)
    w1, b1 = m.c(3, 3, 2, 4), m.c(4)
    w2, b2 = m.c(1, 1, 4, 4), m.c(1, 1, 1, 4)
    m.write("ew_nhwc", f"""
def @main(%x: Tensor[(1, 5, 5, 2), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3], data_layout="NHWC", kernel_layout="HWIO");
  %1 = add(%0, {b1});
  %2 = nn.conv2d(%1, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1], data_layout="NHWC", kernel_layout="HWIO");
  add(%2, {b2})
}}""")
    m = Mod(23)
    w1, b1 = m.c(4, 3, 1, 1), m.c(1, 1, 5)
    w2, b2 = m.c(4, 4, 1, 1), m.c(4, 1, 1)
    w3 = m.c(4, 4, 1, 1)
    w4, b4 = m.c(4, 4, 1, 1), m.c(2, 4, 1, 1)
    w5, b5 = m.c(4, 4, 1, 1), m.c(1, 1, 1)
    m.write("ew_left_alone", f"""
def @main(%x: Tensor[(1, 3, 5, 5), float32], %y: Tensor[(4, 1, 1), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %1 = add(%0, {b1});
  %2 = nn.conv2d(%1, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %3 = add(%2, {b2});
  %4 = sigmoid(%2);
  %5 = nn.conv2d(%3, {w3}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %6 = add(%5, %y);
  %7 = nn.conv2d(%6, {w4}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %8 = add(%7, {b4});
  %9 = nn.conv2d(%6, {w5}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %10 = add(%9, {b5});
  (%4, %8, %10)
}}""")


def conv_activation():
    m = Mod(31)
    w1, b1, w2, w3, b3, w4, w5 = m.c(4, 3, 3, 3), m.c(4), m.c(4, 4, 1, 1), m.c(4, 4, 1, 1), m.c(4), m.c(4, 4, 1, 1), m.c(4, 4, 1, 1)
    m.write("act", f"""
def @main(%x: Tensor[(1, 3, 5, 5), float32], %w: Tensor[(4, 4, 1, 1), float32], %b: Tensor[(4), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, {b1});
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, {w2}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %4 = clip(%3, a_min=0f, a_max=6f);
  %5 = nn.conv2d(%4, {w3}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %6 = nn.bias_add(%5, {b3});
  %7 = nn.leaky_relu(%6, alpha=0.1f);
  %8 = nn.conv2d(%7, %w, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %9 = nn.bias_add(%8, %b);
  %10 = nn.relu(%9);
  %11 = nn.conv2d(%10, {w4}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %12 = clip(%11, a_min=0f, a_max=5f);
  %13 = nn.conv2d(%12, {w5}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %14 = nn.relu(%13);
  %15 = sigmoid(%13);
  (%14, %15)
}}""")
    m = Mod(32)
    w1, b1 = m.c(4, 3, 1, 1), m.c(5)
    m.write("act_bias_axis", f"""
def @main(%x: Tensor[(1, 3, 5, 5), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %1 = nn.bias_add(%0, {b1}, axis=3);
  nn.relu(%1)
}}""")


def pipeline():
    m = Mod(41)
    w1, bn1 = m.c(4, 3, 3, 3), m.bn(4)
    w2, bn2 = m.c(4, 4, 3, 3), m.bn(4)
    w3, b3 = m.c(4, 4, 1, 1), m.c(4, 1, 1)
    wf, bf = m.c(5, 4), m.c(5)
    m.write("pipeline", f"""
def @main(%x: Tensor[(1, 3, 6, 6), float32]) {{
  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, {bn1});
  %2 = %1.0;
  %3 = nn.relu(%2);
  %4 = nn.conv2d(%3, {w2}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %5 = nn.batch_norm(%4, {bn2});
  %6 = %5.0;
  %7 = add(%6, %3);
  %8 = nn.relu(%7);
  %9 = nn.conv2d(%8, {w3}, padding=[0, 0, 0, 0], channels=4, kernel_size=[1, 1]);
  %10 = add(%9, {b3});
  %11 = clip(%10, a_min=0f, a_max=6f);
  %12 = nn.global_avg_pool2d(%11);
  %13 = nn.batch_flatten(%12);
  %14 = nn.dense(%13, {wf}, units=5);
  %15 = add(%14, {bf});
  nn.relu(%15)
}}""")


if __name__ == "__main__":
    fc()
    conv_bn()
    conv_elementwise()
    conv_activation()
    pipeline()
