"""Pattern tables and op attributes registered from Python: a MergeComposite check and an
AnnotateTarget predicate written in Python, accepting, declining, and (ABI 1.6) saying why."""
import pytest

import graphpass as gp

# relus of 4 channels after a conv, then of 3
MIXED = """def @main(%x: Tensor[(1, 4, 8, 8), float32], %w4: Tensor[(4, 4, 1, 1), float32],
              %w3: Tensor[(3, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w4);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%1, %w3);
  nn.relu(%2)
}"""


def _notes(records, name):
    return [n for r in records if r.name == name for n in r.notes]


def test_pattern_table_with_a_python_check_that_says_why():
    seen = []

    def check(root):
        seen.append(root)
        c = root.shape[1]
        return True if c == 4 else "%d channels, not 4" % c

    gp.register_pattern_table("py.conv_relu", [("py.conv_relu", "nn.relu(nn.conv2d(_, _))", check)])
    try:
        records = []
        out = gp.optimize(gp.parse(MIXED), "MergeComposite{table=py.conv_relu}", explain=records)
        text = out.text(types=False)
        assert text.count('Composite="py.conv_relu"') == 1, text
        notes = _notes(records, "MergeComposite")
        assert any("merged 1 composites (py.conv_relu 1)" in n for n in notes), notes
        assert any("pattern 'py.conv_relu': 1 match declined by its check (at " in n and
                   ":6:3: 3 channels, not 4)" in n for n in notes), notes
        assert len(seen) >= 2
        with pytest.raises(gp.GPValueError):
            gp.register_pattern_table("py.conv_relu", [("again", "nn.relu(_)", None)])
    finally:
        gp.unregister_pattern_table("py.conv_relu")


def test_pattern_table_errors_name_the_entry():
    with pytest.raises(gp.ParseError) as e:
        gp.register_pattern_table("py.bad", [("py.bad", "nn.relu(", None)])
    assert "entry 'py.bad'" in str(e.value)

    def boom(root):
        raise RuntimeError("no luck")

    gp.register_pattern_table("py.boom", [("py.boom", "nn.relu(nn.conv2d(_, _))", boom)])
    try:
        with pytest.raises(gp.GraphpassError) as e:
            gp.optimize(gp.parse(MIXED), "MergeComposite{table=py.boom}")
        assert "the check of pattern 'py.boom' at" in str(e.value) and "no luck" in str(e.value)
    finally:
        gp.unregister_pattern_table("py.boom")


def test_target_predicate_in_python_says_why():
    def conv_ok(call):
        c = call.shape[1]
        return True if c == 4 else "%d output channels; py runs 4" % c

    gp.set_op_attr("nn.conv2d", "target.py", conv_ok)
    gp.set_op_attr("nn.relu", "target.py", True)
    try:
        records = []
        gp.optimize(gp.parse(MIXED), "AnnotateTarget", config={"AnnotateTarget.targets": "py"}, explain=records)
        notes = _notes(records, "AnnotateTarget")
        assert any("nn.conv2d: 1 (target py; the first at " in n and ":5:8: 3 output channels; py runs 4)" in n
                   for n in notes), notes
    finally:
        gp.set_op_attr("nn.conv2d", "target.py", None, level=100)
        gp.set_op_attr("nn.relu", "target.py", None, level=100)
