"""The loaded host, error checking, owned object handles, GPAny conversion and packed functions.

Ownership: an Object wrapper owns exactly one reference to its host object and releases it once
(close(), the context manager's exit, or garbage collection, whichever comes first).  Borrowed
pointers (packed-function arguments, a pass's input) are retained before they are wrapped."""
import ctypes
import os
import threading
import traceback

from . import _ffi
from . import errors

_init_lock = threading.RLock()
_state = {"host": None, "plugins": []}


def init(library=None, plugins=None, default_plugins=True):
    """Load libgraphpass (library: a path, else the package's lookup: $GRAPHPASS_LIBRARY, the
    source tree, pkg-config, the system) and its plugins: the default ones
    ($GRAPHPASS_PLUGIN_PATH, else the plugin directory beside the library) unless
    default_plugins is false, then each path of `plugins`.  Called implicitly by the first use;
    calling it again loads further plugins only.  Returns the host's ABI version (major, minor)."""
    with _init_lock:
        first = _state["host"] is None
        h = _ffi.load(library)
        _state["host"] = h
        todo = []
        if first and default_plugins and os.environ.get("GRAPHPASS_NO_DEFAULT_PLUGINS", "") in ("", "0"):
            # the library's own search: $GRAPHPASS_PLUGIN_PATH, else the plugin directory beside it
            if h.api.plugins_load_default(None) != 0:
                raise_error("plugins_load_default")
        todo += list(plugins or [])
        for p in todo:
            load_plugin(p)
        return h.abi


def host():
    h = _state["host"]
    if h is None:
        init()
        h = _state["host"]
    return h


def api():
    return host().api


def require(field, what):
    h = host()
    if not h.has(field):
        raise errors.UnsupportedError("%s needs GPHostAPI.%s (ABI 1.3); the library at %s is ABI %d.%d"
                                      % (what, field, h.path, h.abi[0], h.abi[1]), 11)
    return getattr(h.api, field)


def raise_error(what=None):
    """Raise the pending host error (and clear the slot)."""
    a = api()
    kind = a.error_kind()
    msg = a.error_message()
    msg = msg.decode("utf-8", "replace") if msg else ""
    a.error_clear()
    if kind == 0:
        kind, msg = 10, (what or "graphpass call") + " failed without an error message"
    raise errors.from_kind(kind, msg)


def check(rc, what=None):
    if rc != 0:
        raise_error(what)
    return rc



def check_ptr(p, what=None):
    if not p:
        raise_error(what)
    return p


def cstr(s):
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode("utf-8")


def load_plugin(path):
    """Load a plugin shared object (a path already loaded is a no-op)."""
    check(api().plugin_load(cstr(os.fspath(path))), "plugin_load")
    p = os.path.realpath(os.fspath(path))
    if p not in _state["plugins"]:
        _state["plugins"].append(p)


def unload_plugin(name):
    """Unload the loaded plugin named `name` (its GPPluginAPI.name): everything it registered goes."""
    check(require("plugin_unload", "unload_plugin")(cstr(name)), "plugin_unload")


# ---- owned objects

_live = {"count": 0}
_live_lock = threading.Lock()


def live_objects():
    """How many host objects Python wrappers own right now (for leak tests)."""
    return _live["count"]


class Object:
    """One owned reference to a host object."""
    __slots__ = ("_handle", "__weakref__")
    _type_index = None

    def __init__(self, handle):
        if not handle:
            raise ValueError("NULL handle")
        self._handle = handle
        with _live_lock:
            _live["count"] += 1

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._handle

    def close(self):
        """Release the reference now (idempotent)."""
        h = getattr(self, "_handle", None)
        if h is None:
            return
        self._handle = None
        with _live_lock:
            _live["count"] -= 1
        release(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def type_index(self):
        return ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPObject)).contents.type_index


def release(handle):
    api().object_release(handle)


def retain(handle):
    api().object_retain(handle)
    return handle


class OpaqueObject(Object):
    """A host object this package has no class for (an IR node, a type, attrs, a pattern, ...)."""
    __slots__ = ()

    def __repr__(self):
        ti = self.type_index
        name = ""
        if ti in (_ffi.TI_VAR, _ffi.TI_GLOBAL_VAR, _ffi.TI_OP):
            n = ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPNamedExpr)).contents.name
            name = " " + (n.decode() if n else "?")
        return "<graphpass object type_index=%d%s>" % (ti, name)

    @property
    def name(self):
        """The name of a var, global var or op (None for other objects)."""
        if self.type_index in (_ffi.TI_VAR, _ffi.TI_GLOBAL_VAR, _ffi.TI_OP):
            n = ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPNamedExpr)).contents.name
            return n.decode() if n else None
        return None


_EXPR_KINDS = {_ffi.TI_VAR: "var", _ffi.TI_GLOBAL_VAR: "global_var", _ffi.TI_CONSTANT: "constant",
               _ffi.TI_CALL: "call", _ffi.TI_TUPLE: "tuple", _ffi.TI_TUPLE_GET_ITEM: "tuple_get_item",
               _ffi.TI_FUNCTION_EXPR: "function", _ffi.TI_LET: "let", _ffi.TI_IF: "if", _ffi.TI_OP: "op"}


class _GPCallHead(ctypes.Structure):
    _fields_ = [("base", _ffi.GPExpr), ("op", ctypes.c_void_p)]


class Expr(OpaqueObject):
    """An IR expression node (read-only view): .kind ("call", "var", ...), .name (vars, global
    vars, ops), .op_name (calls of ops), .location ((line, col) or None), .shape (its tensor
    type's)."""
    __slots__ = ()

    @property
    def kind(self):
        return _EXPR_KINDS[self.type_index]

    @property
    def op_name(self):
        if self.type_index != _ffi.TI_CALL:
            return None
        op = ctypes.cast(self.handle, ctypes.POINTER(_GPCallHead)).contents.op
        if not op or ctypes.cast(op, ctypes.POINTER(_ffi.GPObject)).contents.type_index != _ffi.TI_OP:
            return None
        n = ctypes.cast(op, ctypes.POINTER(_ffi.GPNamedExpr)).contents.name
        return n.decode() if n else None

    @property
    def location(self):
        e = ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPExpr)).contents
        return (e.line, e.col) if e.line else None

    @property
    def shape(self):
        """The checked type's shape when it is a tensor type (a tuple; None for a `?` dim), else
        None (untyped, or not a tensor)."""
        t = ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPExpr)).contents.checked_type
        if not t:
            return None
        tt = ctypes.cast(t, ctypes.POINTER(_ffi.GPTensorTypeHead)).contents
        if tt.kind != _ffi.TYPE_TENSOR:
            return None
        return tuple(None if tt.shape[i] < 0 else int(tt.shape[i]) for i in range(tt.n))

    def __repr__(self):
        if self._handle is None:
            return "<graphpass.Expr closed>"
        extra = self.op_name or self.name
        return "<graphpass.Expr %s%s>" % (self.kind, " " + extra if extra else "")


# type_index -> wrapper class (filled by the modules that define them)
WRAPPERS = {ti: Expr for ti in _EXPR_KINDS}


def wrap_owned(handle):
    """Wrap a new reference in the class of its type index."""
    ti = ctypes.cast(handle, ctypes.POINTER(_ffi.GPObject)).contents.type_index
    return WRAPPERS.get(ti, OpaqueObject)(handle)


# ---- GPAny <-> Python

def any_to_py(a, borrowed):
    """A Python value from a GPAny.  borrowed: the object payload is not ours (retain it)."""
    ti = a.type_index
    if ti == _ffi.TI_NONE:
        return None
    if ti == _ffi.TI_INT:
        return int(a.v_int64)
    if ti == _ffi.TI_BOOL:
        return bool(a.v_int64)
    if ti == _ffi.TI_FLOAT:
        return float(a.v_float64)
    if ti == _ffi.TI_RAW_STR:
        return ctypes.cast(a.v_ptr, ctypes.c_char_p).value.decode("utf-8", "replace") if a.v_ptr else None
    if ti == _ffi.TI_OPAQUE_PTR or ti == _ffi.TI_DLTENSOR_PTR:
        return a.v_ptr
    if ti == _ffi.TI_DTYPE:
        return (a.v_dtype.code, a.v_dtype.bits, a.v_dtype.lanes)
    if ti == _ffi.TI_DEVICE:
        return (a.v_device.device_type, a.v_device.device_id)
    if ti >= _ffi.TI_OBJECT:
        ptr = a.v_ptr
        if not ptr:
            return None
        if ti == _ffi.TI_STR:
            s = ctypes.cast(ptr, ctypes.POINTER(_ffi.GPString)).contents
            val = ctypes.string_at(s.data, s.size).decode("utf-8", "replace")
            if not borrowed:
                release(ptr)
            return val
        if ti == _ffi.TI_ARRAY:
            arr = ctypes.cast(ptr, ctypes.POINTER(_ffi.GPArray)).contents
            vals = [any_to_py(arr.items[i], True) for i in range(arr.size)]
            if not borrowed:
                release(ptr)
            return vals
        if borrowed:
            retain(ptr)
        return wrap_owned(ptr)
    raise errors.UnsupportedError("a GPAny of type index %d" % ti, 11)


def py_to_any(v, out, keep):
    """Fill GPAny `out` from a Python value.  Objects are borrowed from their wrappers; a str
    becomes a GPString owned by `keep` (a list of handles the caller releases after the call)."""
    ctypes.memset(ctypes.byref(out), 0, ctypes.sizeof(out))
    if v is None:
        out.type_index = _ffi.TI_NONE
    elif isinstance(v, bool):
        out.type_index, out.v_int64 = _ffi.TI_BOOL, int(v)
    elif isinstance(v, int):
        out.type_index, out.v_int64 = _ffi.TI_INT, v
    elif isinstance(v, float):
        out.type_index, out.v_float64 = _ffi.TI_FLOAT, v
    elif isinstance(v, str):
        b = v.encode("utf-8")
        h = check_ptr(api().string_new(b, len(b)), "string_new")
        keep.append(h)
        out.type_index, out.v_ptr = _ffi.TI_STR, h
    elif isinstance(v, Object):
        out.type_index, out.v_ptr = v.type_index, v.handle
    elif callable(v):
        f = PackedFunc.from_callable(v)
        keep.append(f)
        out.type_index, out.v_ptr = _ffi.TI_FUNCTION, f.handle
    else:
        import numpy as np  # tensors: anything numpy can hand over through DLPack
        from .tensor import Tensor
        t = Tensor.from_numpy(np.asarray(v))
        keep.append(t)
        out.type_index, out.v_ptr = _ffi.TI_TENSOR, t.handle
    return out


def _drop(keep):
    for k in keep:
        if isinstance(k, Object):
            k.close()
        else:
            release(k)


# ---- packed functions

_callables = {}  # id -> Python callable, for packed functions made from Python
_callables_lock = threading.Lock()
_next_id = [1]


def _format_exception(what):
    return "%s raised:\n%s" % (what, traceback.format_exc().rstrip())


def set_error(kind, message):
    """Leave an error in the thread's slot (the host's error_set, called as ("%s", message))."""
    h = host()
    h.error_set(kind, b"%s", message.encode("utf-8", "replace"))


def _trampoline(self_id, args, nargs, result):
    """GPPackedCFunc of every packed function made from Python.  Never lets an exception out:
    it becomes the call's error (GP_ERR_VALUE, or the kind of a GraphpassError) with the
    traceback."""
    fn = None
    try:
        fn = _callables.get(self_id)
        if fn is None:
            set_error(10, "Python packed function %d is gone" % (self_id or 0))
            return -1
        r = fn(*[any_to_py(args[i], True) for i in range(nargs)])
        keep = []
        tmp = _ffi.GPAny()
        py_to_any(r, tmp, keep)
        if tmp.type_index >= _ffi.TI_OBJECT and tmp.v_ptr:
            retain(tmp.v_ptr)  # the result owns a reference
        _drop(keep)
        ctypes.memmove(result, ctypes.byref(tmp), ctypes.sizeof(tmp))
        return 0
    except BaseException as e:  # noqa: B902 -- nothing may unwind into C
        try:
            kind = e.kind if isinstance(e, errors.GraphpassError) else 1
            set_error(kind, _format_exception(getattr(fn, "__qualname__", "Python function")))
        except BaseException:
            pass
        return -1


def _deleter(self_id):
    try:
        with _callables_lock:
            _callables.pop(self_id, None)
    except BaseException:
        pass


TRAMPOLINE = _ffi.GPPackedCFunc(_trampoline)
DELETER = _ffi.SelfDeleter(_deleter)


def keep_callable(fn):
    with _callables_lock:
        i = _next_id[0]
        _next_id[0] += 1
        _callables[i] = fn
    return i


class PackedFunc(Object):
    """A host packed function (GPPackedFunc).  Calling it converts the arguments to GPAny (None,
    bool, int, float, str, Module, Tensor, numpy arrays, other objects, Python callables) and the
    result back."""
    __slots__ = ()

    @classmethod
    def from_callable(cls, fn):
        """A packed function (new host object) that calls the Python callable `fn`; exceptions
        in fn become the call's error (with the traceback text)."""
        i = keep_callable(fn)
        h = api().func_new(i, TRAMPOLINE, DELETER)
        if not h:
            _deleter(i)
            raise_error("func_new")
        return cls(h)

    def __call__(self, *args):
        keep = []
        argv = (_ffi.GPAny * max(1, len(args)))()
        try:
            for i, v in enumerate(args):
                py_to_any(v, argv[i], keep)
            result = _ffi.GPAny()
            pf = ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPPackedFunc)).contents
            call = _ffi.GPPackedCFunc(pf.call)
            if call(pf.self, argv, len(args), ctypes.byref(result)) != 0:
                raise_error("packed function")
            return any_to_py(result, False)
        finally:
            _drop(keep)


WRAPPERS[_ffi.TI_FUNCTION] = PackedFunc


def register_func(name, fn, override=False):
    """Register a global function (TVM's register_func): `fn` a Python callable or PackedFunc.
    Usable as a decorator: @register_func("name")."""
    if fn is None:
        raise TypeError("register_func needs a callable")
    f = fn if isinstance(fn, PackedFunc) else PackedFunc.from_callable(fn)
    try:
        check(api().func_register(cstr(name), f.handle, 1 if override else 0), "func_register")
        _registered_funcs.add(name)
    finally:
        if f is not fn:
            f.close()
    return fn


def unregister_func(name):
    check(api().func_register(cstr(name), None, 1), "func_register")
    _registered_funcs.discard(name)


def get_func(name):
    """The global function `name` as a PackedFunc, or None when the name is free."""
    h = api().func_get(cstr(name))
    return PackedFunc(h) if h else None


_registered_funcs = set()
