"""The registry: passes, targets and their optimization sets, and passes written in Python."""
import atexit
import collections
import ctypes
import threading

from . import _ffi
from . import errors
from ._runtime import api, check, cstr, host, require, PackedFunc
from .module import Module, PassContext

PassInfo = collections.namedtuple(
    "PassInfo", "name opt_level kind required targets excluded_targets kernels origin config_keys help")
PassInfo.__doc__ = """A registered pass (GPHostAPI.pass_list): lists are tuples of names;
config_keys maps each full key ("Pass.key") to its type name (int, bool, float, string)."""


def _split(s):
    return tuple(x for x in s.split(",") if x)


def list_passes(target=None):
    """The registered passes sorted by name, or only those that run for `target` (bound to it,
    not excluding it, with every kernel they need), as PassInfo."""
    text = host().take_string(require("pass_list", "list_passes")(cstr(target)))
    out = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) < 10:
            raise errors.InternalError("pass_list: malformed line %r" % line, 10)
        keys = dict(k.rsplit(":", 1) for k in _split(f[8]))
        out.append(PassInfo(f[0], int(f[1]), f[2], _split(f[3]), _split(f[4]), _split(f[5]), _split(f[6]), f[7],
                            keys, f[9]))
    return out


def list_targets():
    """The registered targets' names, sorted."""
    names = ctypes.POINTER(ctypes.c_char_p)()
    n = ctypes.c_int32(0)
    a = api()
    check(a.target_list(ctypes.byref(names), ctypes.byref(n)), "target_list")
    try:
        return [names[i].decode() for i in range(n.value)]
    finally:
        if names:
            a.free(ctypes.cast(names, ctypes.c_void_p))


def opt_sets():
    """Every optimization set: {target: {set name: pipeline string}} (targets with sets only)."""
    text = host().take_string(api().opt_set_list()) or ""
    out = {}
    for line in text.splitlines():
        t, s, p = line.split(" ", 2)
        out.setdefault(t, {})[s] = p
    return out


def opt_set(target="llvm", name=None):
    """The pipeline string of `target`'s set `name` (None: the target's default set)."""
    p = api().opt_set_get(cstr(target), cstr(name))
    if not p:
        from ._runtime import raise_error
        raise_error("opt_set_get")
    return host().take_string(p)


def register_opt_set(target, name, pipeline):
    """Register (or replace) `target`'s optimization set `name` (checked now)."""
    check(api().opt_set_register(cstr(target), cstr(name), cstr(pipeline)), "opt_set_register")


def has_kernel(target, kernel):
    r = api().target_has_kernel(cstr(target), cstr(kernel))
    if r < 0:
        from ._runtime import raise_error
        raise_error("target_has_kernel")
    return r == 1


# ---- passes written in Python

_KINDS = {"transform": _ffi.PASS_TRANSFORM, "analysis": _ffi.PASS_ANALYSIS, "debug": _ffi.PASS_DEBUG}
_CONFIG_TYPES = {int: _ffi.TI_INT, bool: _ffi.TI_BOOL, float: _ffi.TI_FLOAT, str: _ffi.TI_RAW_STR}
_python_passes = set()
_py_lock = threading.Lock()


class _PythonPass:
    """The packed function of a Python pass: [module (borrowed), context (opaque pointer)] ->
    a module.  Exceptions propagate to the packed-function trampoline, which makes them the
    pass's error (with the traceback)."""
    __slots__ = ("fn", "__qualname__")

    def __init__(self, fn):
        self.fn = fn
        self.__qualname__ = "Python pass " + getattr(fn, "__qualname__", repr(fn))

    def __call__(self, mod, ctx_ptr):
        if not isinstance(mod, Module) or not isinstance(ctx_ptr, int):
            raise errors.InternalError("a pass is called with [module, context]", 10)
        ctx = PassContext._borrow(ctx_ptr)
        try:
            out = self.fn(mod, ctx)
        finally:
            ctx._invalidate()
        if not isinstance(out, Module):
            raise TypeError("a pass returns a graphpass.Module, not %s" % type(out).__name__)
        return out


def _names(seq):
    seq = list(seq or ())
    arr = (ctypes.c_char_p * max(1, len(seq)))(*[cstr(s) for s in seq])
    return arr, len(seq)


def register_pass(name, fn=None, opt_level=0, kind="transform", required=(), targets=(), excluded_targets=(),
                  kernels=(), config=None, help=None, override=False):
    """Register a pass written in Python: fn(module, ctx) -> Module, where ctx is the running
    PassContext (ctx.config("Name.key"), ctx.note("...")), valid during the call.  The pass runs
    in pipelines and optimization sets like any other; an exception in it fails the pipeline with
    PassError naming the pass and carrying the traceback.  config: {key: default} or
    {key: (default, help)} (type from the default: int, bool, float or str).  Works as a
    decorator: @register_pass("MyPass", opt_level=1)."""
    if fn is None:
        return lambda f: register_pass(name, f, opt_level, kind, required, targets, excluded_targets, kernels,
                                       config, help, override) and f
    if kind not in _KINDS:
        raise ValueError("kind is one of %s" % ", ".join(_KINDS))
    keep = []
    req, nreq = _names(required)
    tg, ntg = _names(targets)
    ex, nex = _names(excluded_targets)
    kn, nkn = _names(kernels)
    keys = (_ffi.GPConfigKey * max(1, len(config or {})))()
    for i, (k, v) in enumerate((config or {}).items()):
        default, khelp = v if isinstance(v, tuple) else (v, None)
        ti = _CONFIG_TYPES.get(type(default))
        if ti is None:
            raise TypeError("config %s: the default must be int, bool, float or str" % k)
        d = _ffi.GPAny(type_index=ti)
        if ti == _ffi.TI_RAW_STR:
            b = ctypes.c_char_p(cstr(default))
            keep.append(b)
            d.v_ptr = ctypes.cast(b, ctypes.c_void_p).value
        elif ti == _ffi.TI_FLOAT:
            d.v_float64 = default
        else:
            d.v_int64 = int(default)
        keys[i] = _ffi.GPConfigKey(cstr(k), ti, d, cstr(khelp))
    info = _ffi.GPPassInfo(
        struct_size=ctypes.sizeof(_ffi.GPPassInfo), abi_version=_ffi.ABI_VERSION, name=cstr(name),
        opt_level=int(opt_level), kind=_KINDS[kind], required=req, num_required=nreq, targets=tg,
        num_targets=ntg, excluded_targets=ex, num_excluded_targets=nex, config_keys=keys,
        num_config_keys=len(config or {}),
        help=cstr(help if help is not None else (fn.__doc__ or "").strip().split("\n")[0]),
        kernels=kn, num_kernels=nkn)
    from ._runtime import raise_error
    # The pass is a packed function (pass_register_packed): the registry holds its own reference
    # until the pass is unregistered and no run holds it.
    with PackedFunc.from_callable(_PythonPass(fn)) as f:
        if api().pass_register_packed(ctypes.byref(info), f.handle, 1 if override else 0) != 0:
            raise_error("pass_register_packed")
    with _py_lock:
        _python_passes.add(name)
    return fn


def unregister_pass(name):
    """Unregister a pass (a Python one's function is dropped)."""
    check(api().pass_unregister(cstr(name)), "pass_unregister")
    with _py_lock:
        _python_passes.discard(name)


@atexit.register
def _unregister_python_passes():
    """Python passes and functions go before the interpreter does, so that the host never calls
    into a finalized interpreter."""
    from . import _runtime
    if _runtime._state["host"] is None:
        return
    a = api()
    for n in list(_python_passes):
        if a.pass_unregister(cstr(n)) != 0:
            a.error_clear()
    _python_passes.clear()
    for n in list(_runtime._registered_funcs):
        if a.func_register(cstr(n), None, 1) != 0:
            a.error_clear()
    _runtime._registered_funcs.clear()
