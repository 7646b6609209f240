"""Pattern tables and op attributes from Python: what a BYOC integration registers (TVM's
register_pattern_table for MergeComposite, and the target.<T> predicates AnnotateTarget asks).

    gp.register_pattern_table("mytarget", [
        ("mytarget.conv2d_relu", "nn.relu(nn.conv2d(_, _))", check),   # check may be None
    ])
    gp.set_op_attr("nn.conv2d", "target.mytarget", lambda call: True)

A check (or predicate) gets the matched root (or the call), an Expr, and returns True to accept,
False to decline, or a str: a decline and its reason, which --explain shows (ABI 1.6 hosts).
Exceptions become the pass's error, with the traceback."""
import ctypes
from ctypes import c_char_p, c_int, c_int32, c_uint32, c_void_p

from . import _ffi
from ._runtime import check, check_ptr, cstr, release, require, PackedFunc, py_to_any, _drop

P = c_void_p


def _entry(field, restype, *argtypes):
    """The host table's entry `field` (typed here: _ffi keeps these as plain pointers)."""
    return _ffi.CFUNC(restype, *argtypes)(require(field, field))


def _as_func(check_fn):
    if check_fn is None or isinstance(check_fn, PackedFunc):
        return check_fn, False
    if not callable(check_fn):
        raise TypeError("a check must be callable, a PackedFunc or None, not %s" % type(check_fn).__name__)
    return PackedFunc.from_callable(check_fn), True


def register_pattern_table(name, entries, override=False):
    """Register (or, with override, replace) the pattern table `name`: entries is a list of
    (entry_name, pattern_text, check or None), first entry first.  MergeComposite{table=name}
    then makes Composite="<entry_name>" functions of their matches."""
    entries = list(entries)
    compile_ = _entry("pattern_compile", P, c_char_p, c_char_p, c_uint32, c_uint32)
    new = _entry("pattern_table_new", P, c_int32, ctypes.POINTER(c_char_p), ctypes.POINTER(P), ctypes.POINTER(P))
    register = _entry("pattern_table_register", c_int, c_char_p, P, c_int)
    pats, funcs, owned = [], [], []
    try:
        for i, e in enumerate(entries):
            if len(e) != 3:
                raise ValueError("entry %d: expected (name, pattern, check), got %r" % (i, e))
            ename, text, fn = e
            pats.append(check_ptr(compile_(cstr(text), cstr("pattern table '%s' entry '%s'" % (name, ename)), 1, 1),
                                  "pattern_compile"))
            f, made = _as_func(fn)
            funcs.append(f)
            if made:
                owned.append(f)
        n = len(entries)
        names = (c_char_p * max(1, n))(*[cstr(e[0]) for e in entries])
        parr = (P * max(1, n))(*pats)
        farr = (P * max(1, n))(*[f.handle if f is not None else None for f in funcs])
        table = check_ptr(new(n, names, parr, farr), "pattern_table_new")
        try:
            check(register(cstr(name), table, 1 if override else 0), "pattern_table_register")
        finally:
            release(table)
    finally:
        for p in pats:
            release(p)
        for f in owned:
            f.close()


def unregister_pattern_table(name):
    register = _entry("pattern_table_register", c_int, c_char_p, P, c_int)
    check(register(cstr(name), None, 1), "pattern_table_register")


def set_op_attr(op, key, value, level=10):
    """Set op attribute `key` of the op named `op` (TVM's register_op_attr): a bool, an int, a
    str or a callable (a packed function, e.g. a target.<T> predicate).  A higher level
    overrides a lower one; None removes the attribute."""
    op_get = _entry("op_get", P, c_char_p)
    set_attr = _entry("op_set_attr", c_int, P, c_char_p, ctypes.POINTER(_ffi.GPAny), c_int32)
    h = check_ptr(op_get(cstr(op)), "op_get")
    keep = []
    try:
        v = _ffi.GPAny()
        py_to_any(value, v, keep)
        check(set_attr(h, cstr(key), ctypes.byref(v), level), "op_set_attr")
    finally:
        _drop(keep)
