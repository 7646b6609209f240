"""Passes and global functions written in Python (packed functions)."""
import pytest

import graphpass as gp

TWO_RELU = "def @main(%x: Tensor[(2), float32]) { add(nn.relu(%x), nn.relu(%x)) }"


def _swap_add(mod, ctx):
    """Rewrites add into multiply."""
    return gp.parse(mod.text(types=False).replace("add(", "multiply("))


def test_python_pass_in_a_pipeline():
    gp.register_pass("PySwapAdd", _swap_add, required=["InferType"], config={"factor": (2, "a factor")})
    try:
        m = gp.parse("def @main(%x: Tensor[(2), float32]) { add(%x, add(1f, 2f)) }")
        out = gp.optimize(m, "PySwapAdd,FoldConstant")
        assert out == gp.parse("def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] "
                               "{ multiply(%x, 2f) }")
        info = next(p for p in gp.list_passes() if p.name == "PySwapAdd")
        assert info.required == ("InferType",) and info.origin == "host"
        assert info.config_keys == {"PySwapAdd.factor": "int"} and info.help == "Rewrites add into multiply."
    finally:
        gp.unregister_pass("PySwapAdd")
    assert "PySwapAdd" not in [p.name for p in gp.list_passes()]


def test_python_pass_reads_config_and_opt_level():
    seen = {}

    @gp.register_pass("PyConfig", opt_level=1, config={"factor": 2, "label": "x", "on": True, "w": 0.5})
    def py_config(mod, ctx):
        seen.update(factor=ctx.config("PyConfig.factor"), label=ctx.config("PyConfig.label"),
                    on=ctx.config("PyConfig.on"), w=ctx.config("PyConfig.w"), level=ctx.opt_level)
        return mod

    try:
        m = gp.parse(TWO_RELU)
        assert gp.optimize(m, 'PyConfig{factor=7,label="y",on=false}') == m
        assert seen == {"factor": 7, "label": "y", "on": False, "w": 0.5, "level": 2}
        seen.clear()
        gp.optimize(m, opt_level=0, opt_set=None, pipeline=None)  # the default set: PyConfig not in it
        assert seen == {}
    finally:
        gp.unregister_pass("PyConfig")


def test_python_pass_in_an_optimization_set():
    calls = []
    gp.register_pass("PyCount", lambda mod, ctx: calls.append(1) or mod)
    try:
        gp.register_opt_set("pyset", "default", "InferType,PyCount")
        gp.optimize(gp.parse(TWO_RELU), target="pyset")
        assert calls == [1]
    finally:
        gp.unregister_pass("PyCount")


def test_exception_in_a_pass_becomes_its_error():
    @gp.register_pass("PyBoom")
    def boom(mod, ctx):
        return 1 / 0

    try:
        m = gp.parse(TWO_RELU)
        with pytest.raises(gp.PassError) as ei:
            gp.optimize(m, "InferType,PyBoom")
        msg = ei.value.message
        assert ei.value.kind == 5
        assert "pass PyBoom" in msg and "ZeroDivisionError" in msg and "Traceback" in msg and "in boom" in msg
        # the host is fine afterwards
        assert gp.optimize(m, "InferType") == m.infer_types()
    finally:
        gp.unregister_pass("PyBoom")


def test_pass_returning_a_non_module_and_graphpass_errors():
    kept = []

    def bad(mod, ctx):
        kept.append(ctx)
        return "not a module"

    def parse_fails(mod, ctx):
        return gp.parse("def @main(")

    gp.register_pass("PyBad", bad)
    gp.register_pass("PyParseFails", parse_fails)
    try:
        m = gp.parse(TWO_RELU)
        with pytest.raises(gp.PassError) as ei:
            gp.optimize(m, "PyBad")
        assert "pass PyBad" in ei.value.message
        assert "graphpass.Module" in ei.value.message
        # a context kept past its pass is invalid, not a dangling pointer
        with pytest.raises(ValueError):
            kept[0].opt_level
        with pytest.raises(gp.GraphpassError) as ei:
            gp.optimize(m, "PyParseFails")
        assert "PyParseFails" in ei.value.message and "ParseError" in ei.value.message
    finally:
        gp.unregister_pass("PyBad")
        gp.unregister_pass("PyParseFails")


def test_register_twice_and_override():
    gp.register_pass("PyTwice", lambda m, c: m)
    try:
        with pytest.raises(gp.GPValueError):
            gp.register_pass("PyTwice", lambda m, c: m)
        gp.register_pass("PyTwice", lambda m, c: gp.parse(m.text().replace("add(", "subtract(")), override=True)
        out = gp.optimize(gp.parse(TWO_RELU), "PyTwice")
        assert "subtract(" in out.text()
    finally:
        gp.unregister_pass("PyTwice")
    with pytest.raises(gp.NotFoundError):
        gp.unregister_pass("PyTwice")


def test_global_function_round_trip():
    gp.register_func("py.test.add", lambda a, b: a + b)
    try:
        f = gp.get_func("py.test.add")
        assert f(2, 3) == 5 and f("a", "b") == "ab" and f(1.5, 2.0) == 3.5
        with pytest.raises(gp.GPValueError):
            gp.register_func("py.test.add", lambda: 0)
    finally:
        gp.unregister_func("py.test.add")
    assert gp.get_func("py.test.add") is None


def test_global_function_exception():
    def fails():
        raise KeyError("missing")

    gp.register_func("py.test.fails", fails)
    try:
        with pytest.raises(gp.GPValueError) as ei:
            gp.get_func("py.test.fails")()
        assert "KeyError" in ei.value.message and "Traceback" in ei.value.message
    finally:
        gp.unregister_func("py.test.fails")


def test_python_skip_predicate_used_by_a_pass():
    """EliminateCommonSubexpr calls a global function by name: a Python one here."""
    seen = []

    def skip_relu(node):
        seen.append((node.kind, node.op_name))
        return node.op_name == "nn.relu"

    gp.register_func("py.test.skip_relu", skip_relu)
    try:
        m = gp.parse(TWO_RELU)
        merged = gp.optimize(m, "EliminateCommonSubexpr", opt_level=3)
        kept = gp.optimize(m, "EliminateCommonSubexpr{skip=py.test.skip_relu}", opt_level=3)
        assert merged.text().count("nn.relu(") == 1 and kept.text().count("nn.relu(") == 2
        assert ("call", "nn.relu") in seen
    finally:
        gp.unregister_func("py.test.skip_relu")
