"""Pipelines, optimization sets, contexts and config values; listing passes, targets and sets."""
import graphpass as gp

FOLD_BEFORE = "def @main(%x: Tensor[(2), float32]) { add(%x, add(1f, 2f)) }"
FOLD_AFTER = "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { add(%x, 3f) }"


def test_pipeline_string():
    m = gp.parse(FOLD_BEFORE)
    out = gp.optimize(m, "FoldConstant")
    assert out == gp.parse(FOLD_AFTER)
    assert m == gp.parse(FOLD_BEFORE)  # the input is unchanged


def test_config_values_change_the_result():
    m = gp.parse(FOLD_BEFORE)
    # a zero-byte cap keeps the call FoldConstant would have materialized
    kept = gp.optimize(m, "FoldConstant{max_bytes=0}")
    assert kept != gp.parse(FOLD_AFTER)
    with gp.PassContext(config={"FoldConstant.max_bytes": 0}) as ctx:
        assert ctx.config("FoldConstant.max_bytes") == 0
        assert ctx.run(m, "FoldConstant") == kept
    assert gp.PassContext().config("FoldConstant.max_bytes") > 0


def test_default_set_and_opt_level():
    text = "def @main(%x: Tensor[(2), float32]) { add(nn.relu(%x), nn.relu(%x)) }"
    m = gp.parse(text)
    at2 = gp.optimize(m)  # llvm's default set at opt-level 2: no CSE (level 3)
    at3 = gp.optimize(m, opt_level=3)
    assert "nn.relu" in at2.text() and at2.text().count("nn.relu(") == 2
    assert at3.text().count("nn.relu(") == 1
    assert gp.optimize(m, opt_level=3, opt_set="default") == at3
    assert gp.optimize(m, opt_level=3, disabled=["EliminateCommonSubexpr"]).text().count("nn.relu(") == 2


def test_context_properties():
    with gp.PassContext(opt_level=3, target="llvm") as ctx:
        assert ctx.opt_level == 3 and ctx.target == "llvm"
        ctx.opt_level = 1
        assert ctx.opt_level == 1


def test_list_passes_targets_sets():
    names = [p.name for p in gp.list_passes()]
    assert names == sorted(names) and "FoldConstant" in names and "InferType" in names
    fc = next(p for p in gp.list_passes() if p.name == "FoldConstant")
    assert fc.origin == "std" and fc.kind == "transform" and "FoldConstant.max_bytes" in fc.config_keys
    assert fc.config_keys["FoldConstant.max_bytes"] == "int"
    assert "llvm" in gp.list_targets()
    sets = gp.opt_sets()
    assert "default" in sets["llvm"]
    assert gp.opt_set("llvm") == sets["llvm"]["default"] == gp.opt_set("llvm", "default")
    assert "FoldConstant" in gp.opt_set("llvm").split(",")
    llvm = {p.name for p in gp.list_passes("llvm")}
    assert llvm <= set(names)
    other = {p.name for p in gp.list_passes("xpu")}
    assert "FcFuse" in llvm and "FcFuse" not in other  # FcFuse excludes xpu
    assert gp.has_kernel("llvm", "nn.conv2d") and not gp.has_kernel("llvm", "no_such_kernel")


def test_register_opt_set():
    gp.register_opt_set("pytarget", "fast", "InferType,FoldConstant")
    assert gp.opt_sets()["pytarget"]["fast"] == "InferType,FoldConstant"
    out = gp.optimize(gp.parse(FOLD_BEFORE), target="pytarget", opt_set="fast")
    assert out == gp.parse(FOLD_AFTER)
    try:
        gp.register_opt_set("pytarget", "bad", "InferType,NoSuchPass")
    except gp.NotFoundError as e:
        assert "NoSuchPass" in e.message
    else:
        raise AssertionError("an unknown pass was accepted in a set")
