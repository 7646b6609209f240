"""The --explain notes as data and instruments written in Python (ABI 1.3 instruments)."""
import pytest

import graphpass as gp

FOLD = "def @main(%x: Tensor[(2), float32]) { add(%x, add(1f, 2f)) }"
TWO_RELU = "def @main(%x: Tensor[(2), float32]) { add(nn.relu(%x), nn.relu(%x)) }"


def test_explain_records():
    notes = []
    gp.optimize(gp.parse(FOLD), opt_level=2, explain=notes)
    top = [r for r in notes if r.depth == 0]
    assert [r.index for r in top] == list(range(len(top)))
    by_name = {}
    for r in top:
        by_name.setdefault(r.name, r)  # the first of each name
    fc = by_name["FoldConstant"]
    assert fc.ran and fc.changed and fc.elapsed_ns >= 0 and fc.kind == "transform"
    assert any("folded" in n for n in fc.notes)
    cse = by_name["EliminateCommonSubexpr"]
    assert not cse.ran and cse.reason == "opt-level 3 > context opt-level 2"
    assert str(cse) == "explain: EliminateCommonSubexpr: skipped (opt-level 3 > context opt-level 2)"
    assert "explain: FoldConstant: note: folded" in str(fc)


def test_context_trace_and_text():
    with gp.PassContext(opt_level=3, explain=True, disabled=["SimplifyExpr"]) as ctx:
        ctx.run(gp.parse(TWO_RELU), "InferType,SimplifyExpr,EliminateCommonSubexpr")
        names = [(r.name, r.ran, r.reason) for r in ctx.trace]
        assert ("SimplifyExpr", False, "disabled") in names and ("EliminateCommonSubexpr", True, None) in names
        assert "explain: SimplifyExpr: skipped (disabled)" in ctx.explain_text()


def test_notes_from_a_python_pass():
    @gp.register_pass("PyNotes")
    def py_notes(mod, ctx):
        ctx.note("looked at %d functions" % len(mod.functions))
        return mod

    try:
        rec = []
        gp.optimize(gp.parse(FOLD), "PyNotes", explain=rec)
        assert rec[0].name == "PyNotes" and rec[0].notes == ("looked at 1 functions",)
        assert not rec[0].changed
    finally:
        gp.unregister_pass("PyNotes")


class Veto(gp.Instrument):
    name = "py.veto"

    def __init__(self):
        super().__init__()
        self.seen, self.runs, self.notes = [], [], []

    def run_begin(self, run):
        self.runs.append(("begin", run.pipeline, run.num_items))

    def before_pass(self, ev):
        self.seen.append(ev.name)
        return ev.name == "FoldConstant"

    def note(self, ev, text):
        self.notes.append((ev.name, text))

    def after_pass(self, ev):
        if ev.name == "InferType":
            assert ev.result is not None and ev.module is not None
            self.kept = ev

    def run_end(self, run):
        self.runs.append(("end", run.failed))


def test_python_instrument_can_veto():
    v = Veto()
    rec = []
    with gp.PassContext(instruments=[v], explain=rec) as ctx:
        out = ctx.run(gp.parse(FOLD), "InferType,FoldConstant")
    assert "add(1f, 2f)" in out.text(types=False)  # FoldConstant was skipped
    assert v.seen == ["InferType", "FoldConstant"]
    assert v.runs == [("begin", "InferType,FoldConstant", 2), ("end", False)]
    fc = [r for r in rec if r.name == "FoldConstant"][0]
    assert not fc.ran and fc.reason == "skipped by instrument 'py.veto'"
    assert v.kept.name == "InferType" and v.kept.ran  # the record outlives the callback
    with pytest.raises(ValueError):
        v.kept.module  # the host's event does not


def test_instrument_exception_stops_the_run():
    class Boom(gp.Instrument):
        def before_pass(self, ev):
            raise RuntimeError("no passes today")

    with gp.PassContext(instruments=[Boom("py.boom")]) as ctx:
        with pytest.raises(gp.GraphpassError) as ei:
            ctx.run(gp.parse(FOLD), "FoldConstant")
        assert "py.boom" in ei.value.message and "no passes today" in ei.value.message
        ctx.remove_instrument("py.boom")
        assert "3f" in ctx.run(gp.parse(FOLD), "FoldConstant").text()
        with pytest.raises(gp.NotFoundError):
            ctx.remove_instrument("py.boom")


def test_duplicate_instrument_name():
    with gp.PassContext(instruments=[Veto()]) as ctx:
        with pytest.raises(gp.GPValueError):
            ctx.add_instrument(Veto())
