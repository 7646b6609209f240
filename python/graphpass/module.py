"""Modules (parse, print, ONNX import, type inference, evaluation), pass contexts and pipelines."""
import ctypes
import os

from . import _ffi
from . import errors
from ._runtime import (Object, WRAPPERS, api, check, check_ptr, cstr, host, raise_error, release, retain,
                       set_error, any_to_py, _live, _live_lock)
from .tensor import Tensor, as_tensor, dtype_str


class _GPTypeTensor(ctypes.Structure):
    _fields_ = [("obj", _ffi.GPObject), ("kind", ctypes.c_int32), ("n", ctypes.c_int32),
                ("dtype", _ffi.DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64))]


def _type_of(ptr):
    """A tensor type as (shape, dtype) (-1 for an unknown dim); None for other or no types."""
    if not ptr:
        return None
    t = ctypes.cast(ptr, ctypes.POINTER(_GPTypeTensor)).contents
    if t.kind != 0:
        return None
    return tuple(t.shape[i] for i in range(t.n)), dtype_str(t.dtype)


class Module(Object):
    """An IR module (GPModule): global functions.  Immutable: every transformation returns a
    new Module.  == is structural equality, hash() the structural hash."""
    __slots__ = ()

    @property
    def _st(self):
        return ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPModule)).contents

    @property
    def functions(self):
        """The global function names, in definition order."""
        m = self._st
        return [m.gvars[i].contents.name.decode() for i in range(m.num_functions)]

    @property
    def source_name(self):
        s = self._st.source_name
        return s.decode() if s else None

    def _func(self, name):
        f = api().module_lookup(self.handle, cstr(name))
        if not f:
            raise_error("module_lookup")
        return ctypes.cast(f, ctypes.POINTER(_ffi.GPFunctionExpr)).contents

    def params(self, func="main"):
        """@func's parameters as [(name, (shape, dtype) or None)] (the annotation, or the
        inferred type once types are inferred)."""
        f = self._func(func)
        out = []
        for i in range(f.nparams):
            v = ctypes.cast(f.params[i], ctypes.POINTER(_ffi.GPVar)).contents
            ty = v.type_annotation or v.base.checked_type
            out.append((v.name.decode() if v.name else "", _type_of(ty)))
        return out

    def text(self, types=True, metadata=False):
        """Relay text (TVM's print(mod) format); types: the `ty=` comments; metadata: the
        constants' values."""
        flags = (_ffi.PRINT_TYPES if types else 0) | (_ffi.PRINT_METADATA if metadata else 0)
        p = api().print(self.handle, flags)
        if not p:
            raise_error("print")
        return host().take_string(p)

    def __str__(self):
        return self.text()

    def __repr__(self):
        if self._handle is None:
            return "<graphpass.Module closed>"
        return "<graphpass.Module %s>" % ", ".join("@" + n for n in self.functions)

    def __eq__(self, other):
        if not isinstance(other, Module):
            return NotImplemented
        return api().structural_equal(self.handle, other.handle) == 1

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return int(api().structural_hash(self.handle))

    def infer_types(self):
        return Module(check_ptr(api().infer_types(self.handle), "infer_types"))

    def verify(self):
        """Raise VerifyError (naming the node) unless the module is well formed."""
        check(api().verify(self.handle), "verify")
        return self

    def optimize(self, pipeline=None, **kw):
        """graphpass.optimize(self, pipeline, **kw)."""
        return optimize(self, pipeline, **kw)

    def evaluate(self, *inputs, **kw):
        return evaluate(self, *inputs, **kw)

    def bind_params(self, params, func="main"):
        """A module whose @func has the named parameters replaced by constants (TVM's
        bind_params_by_name).  params: {name: array or Tensor}; arrays go in through DLPack
        without a copy (the constant views the array's memory and keeps it alive)."""
        f = self._func(func)
        by_ptr = {}
        rest = []
        names = set()
        tensors = []
        for i in range(f.nparams):
            p = f.params[i]
            nm = ctypes.cast(p, ctypes.POINTER(_ffi.GPVar)).contents.name.decode()
            if nm in params:
                t = as_tensor(params[nm])
                tensors.append(t)
                by_ptr[p] = t
                names.add(nm)
            else:
                rest.append(p)
        unknown = set(params) - names
        if unknown:
            raise errors.NotFoundError("@%s has no parameter %s (its parameters: %s)" % (
                func, ", ".join(sorted(unknown)), ", ".join(n for n, _ in self.params(func))), 4)
        a = api()

        def fn(_user, orig, rebuilt):
            try:
                t = by_ptr.get(orig)
                if t is None:
                    return retain(rebuilt)
                c = a.constant_new(t.handle)
                return c or None
            except BaseException as e:  # nothing may unwind into C
                set_error(10, "bind_params: %r" % (e,))
                return None

        cb = _ffi.RewriteFn(fn)
        body = check_ptr(a.rewrite(f.body, cb, None), "rewrite")
        new_fn = None
        try:
            arr = (ctypes.c_void_p * max(1, len(rest)))(*rest)
            new_fn = check_ptr(a.function_new(len(rest), arr, body, f.ret_type, f.attrs), "function_new")
        finally:
            release(body)
        try:
            m = Module(check_ptr(a.module_copy(self.handle), "module_copy"))
            check(a.module_add(m.handle, cstr(func), new_fn, 1), "module_add")
        finally:
            release(new_fn)
        return m


WRAPPERS[_ffi.TI_MODULE] = Module


def parse(text, source_name="<string>"):
    """A Module from Relay text; errors raise ParseError (or TypeError_ ...) with
    source:line:col in the message and in .location."""
    b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return Module(check_ptr(api().parse(b, len(b), cstr(source_name)), "parse"))


def load(path, shapes=None):
    """A Module from a file: Relay text, or an ONNX model when the name ends in .onnx."""
    path = os.fspath(path)
    if path.endswith(".onnx"):
        return from_onnx(path, shapes=shapes)
    with open(path, "rb") as f:
        data = f.read()
    return parse(data, path)


def from_onnx(model, shapes=None, source_name=None):
    """A Module from an ONNX model: bytes (a serialized ModelProto), a path, or an object with
    SerializeToString() (onnx.ModelProto).  shapes: {graph input name: dims} fixing the shapes
    of those inputs (e.g. a dynamic batch)."""
    a = api()
    data, path = None, None
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        path = source_name
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
    elif hasattr(model, "SerializeToString"):
        data = model.SerializeToString()
        path = source_name
    else:
        raise TypeError("from_onnx: bytes, a path or an onnx.ModelProto, not %s" % type(model).__name__)
    opts = None
    keep = []
    if shapes:
        n = len(shapes)
        names = (ctypes.c_char_p * n)()
        ndims = (ctypes.c_int32 * n)()
        dims = (ctypes.POINTER(ctypes.c_int64) * n)()
        for i, (k, v) in enumerate(shapes.items()):
            v = [int(d) for d in v]
            arr = (ctypes.c_int64 * max(1, len(v)))(*v)
            keep.append(arr)
            names[i], ndims[i], dims[i] = cstr(k), len(v), ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        opts = _ffi.GPOnnxImportOptions(ctypes.sizeof(_ffi.GPOnnxImportOptions), _ffi.ABI_VERSION, n, names,
                                        ndims, dims)
    h = a.onnx_import(data, len(data) if data is not None else 0, cstr(path),
                      ctypes.byref(opts) if opts is not None else None)
    return Module(check_ptr(h, "onnx_import"))


# ---- pass contexts


class PassContext:
    """A pass context (TVM's PassContext): opt level, target, config values, disabled and
    required passes, the chosen optimization set.  Owns the host context (close() or the
    context manager frees it; so does garbage collection)."""
    __slots__ = ("_ctx", "_owned", "_recorder", "__weakref__")

    def __init__(self, opt_level=None, target=None, config=None, disabled=(), required=(), opt_set=None,
                 explain=False, instruments=()):
        """explain: True (or a list to fill) records every planned item of every run as a
        PassRecord (ctx.trace, ctx.explain_text()); instruments: Instrument objects to add."""
        a = api()
        self._owned = True
        self._recorder = None
        self._ctx = check_ptr(a.ctx_new(), "ctx_new")
        with _live_lock:
            _live["count"] += 1
        try:
            if target is not None:
                check(a.ctx_set_target(self._ctx, cstr(target)), "ctx_set_target")
            if opt_level is not None:
                check(a.ctx_set_opt_level(self._ctx, int(opt_level)), "ctx_set_opt_level")
            for k, v in (config or {}).items():
                self.set_config(k, v)
            for p in disabled:
                check(a.ctx_disable(self._ctx, cstr(p)), "ctx_disable")
            for p in required:
                check(a.ctx_require(self._ctx, cstr(p)), "ctx_require")
            if opt_set is not None:
                check(a.ctx_set_opt_set(self._ctx, cstr(opt_set)), "ctx_set_opt_set")
            if explain is not False and explain is not None:
                from .instruments import Recorder
                self._recorder = self.add_instrument(Recorder(into=explain if isinstance(explain, list) else None))
            for inst in instruments:
                self.add_instrument(inst)
        except BaseException:
            self.close()
            raise

    @classmethod
    def _borrow(cls, ptr):
        """A view of a context the host owns (a pass's argument), valid during the call."""
        c = cls.__new__(cls)
        c._ctx, c._owned, c._recorder = ptr, False, None
        return c

    def _invalidate(self):
        self._ctx = None

    @property
    def handle(self):
        if self._ctx is None:
            raise ValueError("PassContext is closed (a pass's context is valid only during the pass)")
        return self._ctx

    def close(self):
        c, self._ctx = getattr(self, "_ctx", None), None
        if c is not None and self._owned:
            with _live_lock:
                _live["count"] -= 1
            api().ctx_free(c)

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
    def opt_level(self):
        return int(api().ctx_opt_level(self.handle))

    @opt_level.setter
    def opt_level(self, level):
        check(api().ctx_set_opt_level(self.handle, int(level)), "ctx_set_opt_level")

    @property
    def target(self):
        t = api().ctx_target(self.handle)
        return t.decode() if t else None

    @target.setter
    def target(self, t):
        check(api().ctx_set_target(self.handle, cstr(t)), "ctx_set_target")

    def set_config(self, key, value):
        """Set a config value ("Pass.key"); the value is written as text and parsed by the key's
        declared type (bool: True/False, numbers, strings)."""
        if isinstance(value, bool):
            value = "true" if value else "false"
        check(api().ctx_set_config(self.handle, cstr(key), cstr(str(value))), "ctx_set_config")

    def config(self, key):
        """The value of a config key (the context's, else the declared default)."""
        out = _ffi.GPAny()
        check(api().ctx_get_config(self.handle, cstr(key), ctypes.byref(out)), "ctx_get_config")
        return any_to_py(out, True)

    def disable(self, name):
        check(api().ctx_disable(self.handle, cstr(name)), "ctx_disable")

    def require(self, name):
        check(api().ctx_require(self.handle, cstr(name)), "ctx_require")

    def set_opt_set(self, name):
        check(api().ctx_set_opt_set(self.handle, cstr(name)), "ctx_set_opt_set")

    def add_instrument(self, inst):
        """Add an Instrument (graphpass.Instrument subclass) to every later run of this context;
        the context keeps it until remove_instrument(name) or its end."""
        from . import instruments
        return instruments.register(self.handle, inst)

    def remove_instrument(self, name):
        from . import instruments
        instruments.unregister(self.handle, name)

    @property
    def trace(self):
        """The PassRecords of the runs so far (with explain=...); [] without."""
        return self._recorder.records if self._recorder else []

    def explain_text(self):
        """The trace as `graphpass opt --explain` prints it."""
        return self._recorder.text() if self._recorder else ""

    def note(self, text):
        """Leave an explain note from the running pass (printed/recorded when the context
        explains)."""
        host().ctx_note(self.handle, b"%s", cstr(text))

    def run(self, mod, pipeline=None):
        """Run a pipeline string ("A,B{key=value},C") or, with None, the target's optimization set,
        on `mod`; a new Module (mod is never changed).  A failing pass raises PassError naming it."""
        h = api().run_pipeline(mod.handle, cstr(pipeline), self.handle)
        return Module(check_ptr(h, "run_pipeline"))


def optimize(mod, pipeline=None, target=None, opt_level=None, config=None, disabled=(), required=(),
             opt_set=None, explain=None, instruments=()):
    """Run `pipeline` (None: the target's optimization set, `opt_set` or its default) on mod in a
    fresh PassContext with these settings; a new Module.  explain: a list that receives one
    PassRecord per planned item (the --explain notes as data)."""
    with PassContext(opt_level=opt_level, target=target, config=config, disabled=disabled, required=required,
                     opt_set=opt_set, explain=explain if explain is not None else False,
                     instruments=instruments) as ctx:
        return ctx.run(mod, pipeline)


def evaluate(mod, *inputs, func="main", threads=0, tensors=False, stats=None):
    """Evaluate @func on inputs (one per parameter, in order, or one dict by parameter name):
    NumPy arrays (or Tensors) go in through DLPack without copies.  Returns the outputs (the
    result, or the fields of a tuple result) as NumPy arrays viewing the host's tensors (no copy;
    read-only), or as Tensors with tensors=True.  stats: a dict that receives peak_bytes and
    ops_run."""
    if len(inputs) == 1 and isinstance(inputs[0], dict):
        by_name = inputs[0]
        names = [n for n, _ in mod.params(func)]
        missing = [n for n in names if n not in by_name]
        extra = [n for n in by_name if n not in names]
        if missing or extra:
            raise errors.GPValueError("evaluate: @%s takes %s; %s%s" % (
                func, ", ".join(names) or "no parameters",
                ("missing " + ", ".join(missing)) if missing else "",
                ("; unknown " + ", ".join(extra)) if extra else ""), 1)
        inputs = [by_name[n] for n in names]
    ts = [as_tensor(x) for x in inputs]
    arr = (ctypes.c_void_p * max(1, len(ts)))(*[t.handle for t in ts])
    outs = ctypes.POINTER(ctypes.c_void_p)()
    nout = ctypes.c_int32(0)
    opts = _ffi.GPEvalOptions(ctypes.sizeof(_ffi.GPEvalOptions), _ffi.ABI_VERSION, int(threads), 0, 0)
    a = api()
    check(a.eval_function(mod.handle, cstr(func), len(ts), arr, ctypes.byref(outs), ctypes.byref(nout),
                          ctypes.byref(opts)), "eval_function")
    try:
        result = [Tensor(outs[i]) for i in range(nout.value)]
    finally:
        a.free(ctypes.cast(outs, ctypes.c_void_p))
    if stats is not None:
        stats["peak_bytes"], stats["ops_run"] = int(opts.peak_bytes), int(opts.ops_run)
    if tensors:
        return result
    arrays = []
    for t in result:
        arrays.append(t.numpy())
        t.close()  # the array holds its own reference through DLPack
    return arrays
