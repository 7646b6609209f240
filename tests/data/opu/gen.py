#!/usr/bin/env python3
"""Writes the golden files of tests/test_opu_passes.c: NAME.before.relay (the input, constants in
the metadata section) and NAME.after.relay (the expected output, written by hand from the rewrite
rules in opu/*.c; new constants are written as the constant expressions the rules compute -- the
test folds them with FoldConstant, the host's kernels, before comparing -- so the expectation
states the arithmetic rather than its bits).  Both files of a case share one metadata section.
Run: python3 tests/data/opu/gen.py"""
import base64, os, struct, random

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(15)


def shp(s):
    return "(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def t(s, dt="float32"):
    return "Tensor[%s, %s]" % (shp(s), dt)


class Case:
    def __init__(self, name):
        self.name = name
        self.consts = []

    def const(self, shape, lo=-1.0, hi=1.0, vals=None):
        n = 1
        for d in shape:
            n *= d
        if vals is None:
            vals = [round(rng.uniform(lo, hi), 3) for _ in range(n)]
        data = base64.b64encode(struct.pack("<%df" % n, *vals)).decode()
        self.consts.append("relay.Constant[%d] = float32 %s base64:%s" % (len(self.consts), shp(shape), data))
        return "meta[relay.Constant][%d]" % (len(self.consts) - 1)

    def _text(self, params, body):
        text = '#[version = "0.0.5"]\ndef @main(%s) {\n%s\n}\n' % (params, body)
        if self.consts:
            text += "#[metadata]\n" + "\n".join(self.consts) + "\n"
        return text

    def write(self, params, before, after=None):
        for kind, body in (("before", before), ("after", after)):
            if body is None:
                continue
            with open(os.path.join(HERE, "%s.%s.relay" % (self.name, kind)), "w") as f:
                f.write(self._text(params, body))


CONV3 = "padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]"

# ---- ToNCHWLayout
c = Case("nchw_conv_pool")
w = c.const((3, 3, 3, 4))
c.write("%x: " + t((1, 6, 6, 3)),
        '  %%0 = nn.conv2d(%%x, %s, %s, data_layout="NHWC", kernel_layout="HWIO");\n'
        '  %%1 = nn.relu(%%0);\n'
        '  nn.max_pool2d(%%1, pool_size=[2, 2], strides=[2, 2], layout="NHWC")' % (w, CONV3),
        '  %%0 = layout_transform(%%x, src_layout="NHWC", dst_layout="NCHW");\n'
        '  %%1 = nn.conv2d(%%0, layout_transform(%s, src_layout="HWIO", dst_layout="OIHW"), %s);\n'
        '  %%2 = nn.relu(%%1);\n'
        '  %%3 = nn.max_pool2d(%%2, pool_size=[2, 2], strides=[2, 2], layout="NCHW", out_layout="NCHW");\n'
        '  layout_transform(%%3, src_layout="NCHW", dst_layout="NHWC")' % (w, CONV3))

c = Case("nchw_depthwise")
w = c.const((3, 3, 4, 1))
b = c.const((4,))
c.write("%x: " + t((1, 6, 6, 4)),
        '  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3], data_layout="NHWC", kernel_layout="HWOI");\n'
        '  %%1 = nn.bias_add(%%0, %s, axis=3);\n'
        '  nn.global_avg_pool2d(%%1, layout="NHWC")' % (w, b),
        None)

c = Case("nchw_unchanged")
w = c.const((4, 3, 3, 3))
b = c.const((4,))
body = ('  %%0 = nn.conv2d(%%x, %s, %s);\n'
        '  nn.bias_add(%%0, %s)' % (w, CONV3, b))
c.write("%x: " + t((1, 3, 6, 6)), body, body)

# ---- Peephole: PatternTransformer1
c = Case("pt1_conv_add_mul")
w = c.const((4, 3, 3, 3)); c1 = c.const((4, 1, 1)); c2 = c.const((4, 1, 1), vals=[0.5, -1.5, 2.0, 0.25])
c.write("%x: " + t((1, 3, 6, 6)),
        '  %%0 = nn.conv2d(%%x, %s, %s);\n  %%1 = add(%%0, %s);\n  multiply(%%1, %s)' % (w, CONV3, c1, c2),
        '  %%0 = nn.conv2d(%%x, multiply(%s, reshape(%s, newshape=[-1, 1, 1, 1])), %s);\n'
        '  add(%%0, multiply(%s, %s))' % (w, c2, CONV3, c1, c2))

c = Case("pt1_depthwise_scalar")
w = c.const((4, 1, 3, 3)); c1 = c.const((1, 4, 1, 1)); c2 = c.const((1,), vals=[-0.75])
c.write("%x: " + t((1, 4, 6, 6)),
        '  %%0 = nn.conv2d(%%x, %s, padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3]);\n'
        '  %%1 = add(%%0, %s);\n  multiply(%%1, %s)' % (w, c1, c2),
        '  %%0 = nn.conv2d(%%x, multiply(%s, reshape(%s, newshape=[-1, 1, 1, 1])), padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3]);\n'
        '  add(%%0, multiply(%s, %s))' % (w, c2, c1, c2))

c = Case("pt1_refused_spatial")
w = c.const((4, 3, 3, 3)); c1 = c.const((4, 1, 1)); c2 = c.const((1, 1, 6, 6))
body = '  %%0 = nn.conv2d(%%x, %s, %s);\n  %%1 = add(%%0, %s);\n  multiply(%%1, %s)' % (w, CONV3, c1, c2)
c.write("%x: " + t((1, 3, 6, 6)), body, body)

c = Case("pt1_refused_shared")
w = c.const((4, 3, 3, 3)); c1 = c.const((4, 1, 1)); c2 = c.const((4, 1, 1))
body = ('  %%0 = nn.conv2d(%%x, %s, %s);\n  %%1 = add(%%0, %s);\n  %%2 = multiply(%%1, %s);\n'
        '  (%%2, %%1)' % (w, CONV3, c1, c2))
c.write("%x: " + t((1, 3, 6, 6)), body, body)

# ---- PatternTransformer2
c = Case("pt2_add_chain")
a = c.const((4, 1, 1)); b = c.const((4, 1, 1)); s = c.const((), vals=[0.5])
c.write("%x: " + t((1, 4, 4, 4)),
        '  %%0 = nn.relu(%%x);\n  %%1 = add(%%0, %s);\n  %%2 = add(%%1, %s);\n  add(%%2, %s)' % (a, b, s),
        '  %%0 = nn.relu(%%x);\n  add(%%0, add(%s, add(%s, %s)))' % (a, b, s))

# ---- PatternTransformer3
c = Case("pt3_concat_add")
c.write("%a: " + t((1, 2, 4, 4)) + ", %b: " + t((1, 3, 4, 4)) + ", %y: " + t((1, 5, 4, 4)),
        '  %0 = nn.relu(%a);\n  %1 = nn.relu(%b);\n  %2 = (%0, %1);\n  %3 = concatenate(%2, axis=1);\n  add(%3, %y)',
        '  %0 = nn.relu(%a);\n  %1 = nn.pad(%0, 0f, pad_width=[0, 0, 0, 3, 0, 0, 0, 0]);\n'
        '  %2 = nn.relu(%b);\n  %3 = nn.pad(%2, 0f, pad_width=[0, 0, 2, 0, 0, 0, 0, 0]);\n'
        '  %4 = add(%3, %y);\n  add(%1, %4)')

c = Case("pt3_bias_first")
bias = c.const((5, 1, 1))
c.write("%a: " + t((1, 2, 4, 4)) + ", %b: " + t((1, 3, 4, 4)),
        '  %%0 = (%%a, %%b);\n  %%1 = concatenate(%%0, axis=-3);\n  add(%s, %%1)' % bias,
        '  %%0 = nn.pad(%%a, 0f, pad_width=[0, 0, 0, 3, 0, 0, 0, 0]);\n'
        '  %%1 = nn.pad(%%b, 0f, pad_width=[0, 0, 2, 0, 0, 0, 0, 0]);\n'
        '  %%2 = add(%%1, %s);\n  add(%%0, %%2)' % bias)

c = Case("pt3_refused_axis2")
body = '  %0 = (%a, %b);\n  %1 = concatenate(%0, axis=2);\n  add(%1, %y)'
c.write("%a: " + t((1, 2, 4, 4)) + ", %b: " + t((1, 2, 3, 4)) + ", %y: " + t((1, 2, 7, 4)), body, body)

# ---- PatternTransformer5
c = Case("pt5_dense")
w = c.const((8, 16)); b = c.const((8,))
c.write("%x: " + t((2, 16)),
        '  %%0 = nn.dense(%%x, %s, units=8);\n  add(%%0, %s)' % (w, b),
        '  %%0 = reshape(%%x, newshape=[2, 16, 1, 1]);\n'
        '  %%1 = nn.conv2d(%%0, reshape(%s, newshape=[8, 16, 1, 1]), channels=8, kernel_size=[1, 1]);\n'
        '  %%2 = reshape(%%1, newshape=[2, 8]);\n  add(%%2, %s)' % (w, b))

c = Case("pt5_refused_wide")
w = c.const((2, 2049))
body = '  nn.dense(%%x, %s, units=2)' % w
c.write("%x: " + t((1, 2049)), body, body)

# ---- CanonicalizeConcatPos
AB = "%a: " + t((1, 2, 4, 4)) + ", %b: " + t((1, 3, 4, 4))
c = Case("ccp_relu")
c.write(AB, '  %0 = (%a, %b);\n  %1 = concatenate(%0, axis=1);\n  nn.relu(%1)',
        '  %0 = nn.relu(%a);\n  %1 = nn.relu(%b);\n  %2 = (%0, %1);\n  concatenate(%2, axis=1)')

c = Case("ccp_clip_relu")
c.write(AB, '  %0 = (%a, %b);\n  %1 = concatenate(%0, axis=1);\n  %2 = clip(%1, a_min=0f, a_max=6f);\n  nn.relu(%2)',
        '  %0 = clip(%a, a_min=0f, a_max=6f);\n  %1 = nn.relu(%0);\n  %2 = clip(%b, a_min=0f, a_max=6f);\n'
        '  %3 = nn.relu(%2);\n  %4 = (%1, %3);\n  concatenate(%4, axis=1)')

c = Case("ccp_scale")
s = c.const((1, 5, 1, 1))
c.write(AB, '  %%0 = (%%a, %%b);\n  %%1 = concatenate(%%0, axis=1);\n  multiply(%%1, %s)' % s,
        '  %%0 = multiply(%%a, strided_slice(%s, begin=[0], end=[2], axes=[1]));\n'
        '  %%1 = multiply(%%b, strided_slice(%s, begin=[2], end=[5], axes=[1]));\n'
        '  %%2 = (%%0, %%1);\n  concatenate(%%2, axis=1)' % (s, s))

c = Case("ccp_shift_first")
s = c.const((5, 1, 1)); r = c.const((4,))
c.write(AB, '  %%0 = (%%a, %%b);\n  %%1 = concatenate(%%0, axis=1);\n  %%2 = add(%s, %%1);\n  add(%%2, %s)' % (s, r),
        '  %%0 = add(strided_slice(%s, begin=[0], end=[2], axes=[0]), %%a);\n  %%1 = add(%%0, %s);\n'
        '  %%2 = add(strided_slice(%s, begin=[2], end=[5], axes=[0]), %%b);\n  %%3 = add(%%2, %s);\n'
        '  %%4 = (%%1, %%3);\n  concatenate(%%4, axis=1)' % (s, r, s, r))

c = Case("ccp_refused")
body = ('  %0 = (%a, %b);\n  %1 = concatenate(%0, axis=1);\n  %2 = nn.relu(%1);\n'
        '  %3 = (%a, %b);\n  %4 = concatenate(%3, axis=1);\n  %5 = nn.softmax(%4, axis=1);\n  (%2, %1, %5)')
c.write(AB, body, body)

# ---- partitioning (inputs only): a supported chain around a softmax; ops that stay on the host
c = Case("part_mixed")
w = c.const((4, 3, 3, 3)); b = c.const((4, 1, 1))
c.write("%x: " + t((1, 3, 8, 8)),
        '  %%0 = nn.conv2d(%%x, %s, %s);\n  %%1 = add(%%0, %s);\n  %%2 = nn.relu(%%1);\n'
        '  %%3 = nn.max_pool2d(%%2, pool_size=[2, 2], strides=[2, 2]);\n  %%4 = nn.softmax(%%3, axis=1);\n'
        '  nn.relu(%%4)' % (w, CONV3, b))

c = Case("part_host")
wh = c.const((3, 3, 3, 4))
c.write("%x: " + t((1, 3, 8, 8)) + ", %w: " + t((4, 3, 3, 3)) + ", %h: " + t((1, 8, 8, 3)) + ", %i: " + t((4, 4), "int32")
        + ", %a: " + t((1, 2, 4, 4)) + ", %b: " + t((1, 2, 4, 4)),
        '  %%0 = nn.conv2d(%%x, %%w, %s);\n'
        '  %%1 = nn.conv2d(%%h, %s, %s, data_layout="NHWC", kernel_layout="HWIO");\n'
        '  %%2 = add(%%i, %%i);\n  %%3 = multiply(%%a, %%b);\n  %%4 = (%%a, %%b);\n  %%5 = concatenate(%%4, axis=2);\n'
        '  (%%0, %%1, %%2, %%3, %%5)' % (CONV3, wh, CONV3))

# ---- errors inside the rewrites: constants of known type without values (meta[...] without a
# metadata entry), which the rules cannot compute with
with open(os.path.join(HERE, "pt1_no_values.relay"), "w") as f:
    f.write('#[version = "0.0.5"]\ndef @main(%x: ' + t((1, 3, 6, 6)) + ') {\n'
            '  %0 = nn.conv2d(%x, meta[relay.Constant][0] /* ty=Tensor[(4, 3, 3, 3), float32] */, ' + CONV3 + ');\n'
            '  %1 = add(%0, meta[relay.Constant][1] /* ty=Tensor[(4, 1, 1), float32] */);\n'
            '  multiply(%1, meta[relay.Constant][2] /* ty=Tensor[(4, 1, 1), float32] */)\n}\n')
with open(os.path.join(HERE, "ccp_no_values.relay"), "w") as f:
    f.write('#[version = "0.0.5"]\ndef @main(' + AB + ') {\n'
            '  %0 = (%a, %b);\n  %1 = concatenate(%0, axis=1);\n'
            '  multiply(%1, meta[relay.Constant][0] /* ty=Tensor[(1, 5, 1, 1), float32] */)\n}\n')
