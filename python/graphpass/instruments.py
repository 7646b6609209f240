"""Instruments on a pass context (ABI 1.3, GPInstrument): the --explain notes as data, and
instruments written in Python (TVM's PassInstrument).

    notes = []
    gp.optimize(mod, opt_level=3, explain=notes)     # one PassRecord per planned item
    for r in notes: print(r)                         # "explain: FoldConstant: ran" + its notes

    class Skip(gp.Instrument):
        def before_pass(self, ev):                   # return True to skip a pass that would run
            return ev.name == "FoldConstant"
    with gp.PassContext(instruments=[Skip()]) as ctx: ctx.run(mod)

Callbacks run on the thread that runs the pipeline.  An exception in run_begin, before_pass or
after_pass stops the run (PassError-like GraphpassError "instrument NAME: ..." with the
traceback); one in note or run_end cannot stop anything and is kept in instrument.errors."""
import collections
import ctypes
import traceback

from . import _ffi
from ._runtime import cstr, check, keep_callable, _callables, _callables_lock, set_error, retain

_KIND_NAMES = {0: "transform", 1: "analysis", 2: "debug"}

PassRecord = collections.namedtuple(
    "PassRecord", "index name kind opt_level dependency ran failed changed reason elapsed_ns notes checks depth")
PassRecord.__doc__ = """One planned item of a run, as the host's instruments see it after the pass:
ran (the pass function was called), reason (why it ran or was skipped: "required by X",
"disabled", "opt-level 3 > context opt-level 2", "target ... not in [...]", or None), notes (what
the pass left with ctx_note), elapsed_ns, changed (a new module), depth (0: the run you started;
1: a run a pass started, e.g. FoldScaleAxis's FoldConstant)."""


def _record_str(self):
    lines = ["explain: %s: %s%s" % (self.name, "ran" if self.ran else "skipped",
                                    " (%s)" % self.reason if self.reason else "")]
    lines += ["explain: %s: note: %s" % (self.name, n) for n in self.notes]
    if self.checks:
        lines.append("explain: %s: %s" % (self.name, self.checks))
    return "\n".join(lines)


PassRecord.__str__ = _record_str

RunRecord = collections.namedtuple("RunRecord", "pipeline target opt_level num_items failed elapsed_ns depth")


def _s(b):
    return b.decode("utf-8", "replace") if b else None


def _pass_record(ev):
    return PassRecord(ev.index, _s(ev.pass_name), _KIND_NAMES.get(ev.kind, "transform"), ev.opt_level,
                      bool(ev.dependency), bool(ev.ran), bool(ev.failed), bool(ev.changed), _s(ev.reason),
                      int(ev.elapsed_ns), tuple(_s(ev.notes[i]) for i in range(ev.num_notes)), _s(ev.checks),
                      ev.depth)


def _run_record(ev):
    return RunRecord(_s(ev.pipeline), _s(ev.target), ev.opt_level, ev.num_items, bool(ev.failed),
                     int(ev.elapsed_ns), ev.depth)


class PassEvent:
    """What an instrument callback sees of one item: the PassRecord fields (.name, .ran, .reason,
    .notes, ...) and .module / .result (Modules, retained: safe to keep)."""
    __slots__ = ("record", "_ev")

    def __init__(self, ev):
        self.record = _pass_record(ev)
        self._ev = ev

    def __getattr__(self, k):
        return getattr(self.record, k)

    def _live(self):
        if self._ev is None:
            raise ValueError("a PassEvent's modules are readable only during its callback (keep the Module)")
        return self._ev

    @property
    def module(self):
        """The module the pass is (or would have been) given."""
        from .module import Module
        p = self._live().module
        return Module(retain(p)) if p else None

    @property
    def result(self):
        """after_pass: the module the pass returned (None when skipped or failed)."""
        from .module import Module
        p = self._live().result
        return Module(retain(p)) if p else None

    def __repr__(self):
        return "<PassEvent %s>" % (self.record,)


class Instrument:
    """Base class of instruments written in Python: override any of run_begin(run: RunRecord),
    before_pass(ev: PassEvent) -> bool (True skips a pass that would run), note(ev, text),
    after_pass(ev), run_end(run).  `name` (class attribute or constructor argument) must be unique
    per context ([A-Za-z0-9_.-]+)."""
    name = None

    def __init__(self, name=None):
        if name is not None:
            self.name = name
        if self.name is None:
            self.name = "py." + type(self).__name__
        self.errors = []

    def run_begin(self, run):
        pass

    def before_pass(self, ev):
        return False

    def note(self, ev, text):
        pass

    def after_pass(self, ev):
        pass

    def run_end(self, run):
        pass


class Recorder(Instrument):
    """Records every planned item (PassRecord, notes included) and every run (RunRecord): the
    --explain output as data."""

    def __init__(self, name="py.explain", into=None):
        super().__init__(name)
        self.records = into if into is not None else []
        self.runs = []

    def after_pass(self, ev):
        self.records.append(ev.record)

    def run_end(self, run):
        self.runs.append(run)

    def text(self):
        """The records as `graphpass opt --explain` prints them."""
        return "\n".join(str(r) for r in self.records)


def _fail(inst, what):
    set_error(5, "%s raised:\n%s" % (what, traceback.format_exc().rstrip()))
    return -1


def _run_begin(user, ev):
    inst = _callables.get(user)
    try:
        inst.run_begin(_run_record(ev.contents))
        return 0
    except BaseException:
        return _fail(inst, "run_begin")


def _before_pass(user, ev):
    inst, pe = _callables.get(user), None
    try:
        pe = PassEvent(ev.contents)
        return 1 if inst.before_pass(pe) else 0
    except BaseException:
        return _fail(inst, "before_pass")
    finally:
        if pe is not None:
            pe._ev = None  # the host's event is gone after the callback


def _note(user, ev, text):
    inst, pe = _callables.get(user), None
    try:
        pe = PassEvent(ev.contents)
        inst.note(pe, _s(text))
    except BaseException as e:
        try:
            inst.errors.append(e)
        except BaseException:
            pass
    finally:
        if pe is not None:
            pe._ev = None


def _after_pass(user, ev):
    inst, pe = _callables.get(user), None
    try:
        pe = PassEvent(ev.contents)
        inst.after_pass(pe)
        return 0
    except BaseException:
        return _fail(inst, "after_pass")
    finally:
        if pe is not None:
            pe._ev = None


def _run_end(user, ev):
    inst = _callables.get(user)
    try:
        inst.run_end(_run_record(ev.contents))
    except BaseException as e:
        try:
            inst.errors.append(e)
        except BaseException:
            pass


def _user_deleter(user):
    try:
        with _callables_lock:
            _callables.pop(user, None)
    except BaseException:
        pass


_CB = dict(run_begin=_ffi.RunCallback(_run_begin), before_pass=_ffi.PassCallback(_before_pass),
           note=_ffi.NoteCallback(_note), after_pass=_ffi.PassCallback(_after_pass),
           run_end=_ffi.RunEndCallback(_run_end), user_deleter=_ffi.SelfDeleter(_user_deleter))


def register(ctx_handle, inst):
    """Register `inst` on the host context (which then owns the reference to it)."""
    from ._runtime import require
    reg = require("ctx_instrument_register", "instruments")
    uid = keep_callable(inst)
    # Only the callbacks the instrument overrides are set, so the host skips the others.
    cls = type(inst)

    def over(n):
        return getattr(cls, n) is not getattr(Instrument, n)

    gi = _ffi.GPInstrument(struct_size=ctypes.sizeof(_ffi.GPInstrument), abi_version=_ffi.ABI_VERSION,
                           name=cstr(inst.name), user=uid, user_deleter=_CB["user_deleter"])
    for n in ("run_begin", "before_pass", "note", "after_pass", "run_end"):
        if over(n):
            setattr(gi, n, _CB[n])
    if reg(ctx_handle, ctypes.byref(gi)) != 0:
        _user_deleter(uid)  # a failed registration leaves user with us
        from ._runtime import raise_error
        raise_error("ctx_instrument_register")
    return inst


def unregister(ctx_handle, name):
    from ._runtime import require
    check(require("ctx_instrument_unregister", "instruments")(ctx_handle, cstr(name)), "ctx_instrument_unregister")
