"""The C ABI of abi/graphpass.h as ctypes declarations, and finding and loading the library.

Only what the package uses is declared in full; every GPHostAPI field is listed (in order) so the
table's layout matches the header.  Nothing here owns host objects: see _objects.py."""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import threading

c_void_p, c_char_p, c_int, c_int32, c_uint32, c_int64, c_uint64, c_size_t, c_double = (
    ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int32, ctypes.c_uint32, ctypes.c_int64,
    ctypes.c_uint64, ctypes.c_size_t, ctypes.c_double)
CFUNC = ctypes.CFUNCTYPE

ABI_MAJOR = 1
ABI_MIN_MINOR = 3  # the oldest host this package runs on


def abi_version(major, minor):
    return (major << 16) | minor


ABI_VERSION = abi_version(1, 3)

# ---- type indices (abi/graphpass.h)
TI_NONE, TI_INT, TI_BOOL, TI_FLOAT, TI_OPAQUE_PTR, TI_DTYPE, TI_DEVICE, TI_DLTENSOR_PTR, TI_RAW_STR = range(9)
TI_OBJECT, TI_STR, TI_ERROR, TI_FUNCTION, TI_TENSOR, TI_ARRAY = 64, 65, 67, 68, 70, 71
TI_IR_BEGIN, TI_IR_END = 128, 138
TI_VAR, TI_GLOBAL_VAR, TI_CONSTANT, TI_CALL, TI_TUPLE, TI_TUPLE_GET_ITEM, TI_FUNCTION_EXPR, TI_LET, TI_IF, \
    TI_OP = range(128, 138)
TI_TYPE, TI_ATTRS, TI_MODULE, TI_PASS_CONTEXT, TI_PATTERN, TI_PATTERN_TABLE = 144, 145, 146, 147, 148, 149

PRINT_TYPES, PRINT_METADATA = 1, 2
PASS_TRANSFORM, PASS_ANALYSIS, PASS_DEBUG = 0, 1, 2

# ---- DLPack


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(c_int64)), ("strides", ctypes.POINTER(c_int64)),
                ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensorDeleter = CFUNC(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", DLManagedTensorDeleter)]

# ---- objects and values


class GPObject(ctypes.Structure):
    _fields_ = [("ref_count", c_uint32), ("type_index", c_int32), ("deleter", c_void_p)]


class _AnyValue(ctypes.Union):
    _fields_ = [("v_int64", c_int64), ("v_float64", c_double), ("v_ptr", c_void_p),
                ("v_dtype", DLDataType), ("v_device", DLDevice)]


class GPAny(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = [("type_index", c_int32), ("zero_padding", c_uint32), ("u", _AnyValue)]


assert ctypes.sizeof(GPAny) == 16 and ctypes.sizeof(GPObject) == 16


class GPString(ctypes.Structure):
    _fields_ = [("obj", GPObject), ("size", c_size_t), ("data", c_char_p)]


class GPArray(ctypes.Structure):
    _fields_ = [("obj", GPObject), ("size", c_int64), ("items", ctypes.POINTER(GPAny))]


class GPTensor(ctypes.Structure):
    _fields_ = [("obj", GPObject), ("dl", DLTensor), ("managed", ctypes.POINTER(DLManagedTensor))]


class GPExpr(ctypes.Structure):
    _fields_ = [("obj", GPObject), ("checked_type", c_void_p), ("line", c_uint32), ("col", c_uint32)]


class GPTensorTypeHead(ctypes.Structure):
    """A GPType's header and, for a tensor type (kind TYPE_TENSOR), its dtype and shape."""
    _fields_ = [("obj", GPObject), ("kind", c_int32), ("n", c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


TYPE_TENSOR = 0  # GP_TYPE_TENSOR


class GPNamedExpr(ctypes.Structure):
    """GPVar and GPGlobalVar (and GPOp) all have their name right after the GPExpr header."""
    _fields_ = [("base", GPExpr), ("name", c_char_p)]


class GPFunctionExpr(ctypes.Structure):
    _fields_ = [("base", GPExpr), ("nparams", c_int32), ("reserved", c_int32),
                ("params", ctypes.POINTER(c_void_p)), ("body", c_void_p), ("ret_type", c_void_p),
                ("attrs", c_void_p)]


class GPModule(ctypes.Structure):
    _fields_ = [("obj", GPObject), ("num_functions", c_int32), ("capacity", c_int32),
                ("gvars", ctypes.POINTER(ctypes.POINTER(GPNamedExpr))),
                ("funcs", ctypes.POINTER(ctypes.POINTER(GPFunctionExpr))), ("source_name", c_char_p)]


class GPVar(ctypes.Structure):
    _fields_ = [("base", GPExpr), ("name", c_char_p), ("type_annotation", c_void_p)]


# The packed calling convention: (self, args, nargs, result) -> 0 / -1.
GPPackedCFunc = CFUNC(c_int, c_void_p, ctypes.POINTER(GPAny), c_int32, ctypes.POINTER(GPAny))
SelfDeleter = CFUNC(None, c_void_p)


class GPPackedFunc(ctypes.Structure):
    _fields_ = [("obj", GPObject), ("self", c_void_p), ("call", c_void_p), ("self_deleter", c_void_p)]


class GPConfigKey(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("type_index", c_int32), ("default_value", GPAny), ("help", c_char_p)]


class GPPassInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32), ("name", c_char_p),
                ("opt_level", c_int32), ("kind", c_int32),
                ("required", ctypes.POINTER(c_char_p)), ("num_required", c_int32),
                ("targets", ctypes.POINTER(c_char_p)), ("num_targets", c_int32),
                ("excluded_targets", ctypes.POINTER(c_char_p)), ("num_excluded_targets", c_int32),
                ("config_keys", ctypes.POINTER(GPConfigKey)), ("num_config_keys", c_int32),
                ("func", GPPackedCFunc), ("self", c_void_p), ("self_deleter", SelfDeleter),
                ("help", c_char_p),
                ("kernels", ctypes.POINTER(c_char_p)), ("num_kernels", c_int32)]


class GPEvalOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32), ("num_threads", c_int32),
                ("peak_bytes", c_size_t), ("ops_run", c_int64)]


class GPOnnxImportOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32), ("num_shapes", c_int32),
                ("shape_names", ctypes.POINTER(c_char_p)), ("shape_ndims", ctypes.POINTER(c_int32)),
                ("shape_dims", ctypes.POINTER(ctypes.POINTER(c_int64)))]


class GPPassEvent(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32), ("index", c_int32), ("kind", c_int32),
                ("opt_level", c_int32), ("pass_name", c_char_p), ("dependency", c_int32), ("ran", c_int32),
                ("failed", c_int32), ("changed", c_int32), ("reason", c_char_p), ("module", c_void_p),
                ("result", c_void_p), ("elapsed_ns", c_uint64), ("num_notes", c_int32), ("depth", c_int32),
                ("notes", ctypes.POINTER(c_char_p)), ("checks", c_char_p)]


class GPRunEvent(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32), ("pipeline", c_char_p),
                ("target", c_char_p), ("opt_level", c_int32), ("num_items", c_int32), ("module", c_void_p),
                ("failed", c_int32), ("depth", c_int32), ("elapsed_ns", c_uint64)]


RunCallback = CFUNC(c_int, c_void_p, ctypes.POINTER(GPRunEvent))
RunEndCallback = CFUNC(None, c_void_p, ctypes.POINTER(GPRunEvent))
PassCallback = CFUNC(c_int, c_void_p, ctypes.POINTER(GPPassEvent))
NoteCallback = CFUNC(None, c_void_p, ctypes.POINTER(GPPassEvent), c_char_p)


class GPInstrument(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32), ("name", c_char_p), ("user", c_void_p),
                ("user_deleter", SelfDeleter), ("run_begin", RunCallback), ("before_pass", PassCallback),
                ("note", NoteCallback), ("after_pass", PassCallback), ("run_end", RunEndCallback)]


P = c_void_p
_ANYP = ctypes.POINTER(GPAny)

# Every field of GPHostAPI in the header's order: (name, ctypes function type or None for a field
# the package never calls, declared as a plain pointer so the layout stays right).
_HOST_FIELDS = [
    ("error_set", None),  # variadic: not called through ctypes
    ("error_kind", CFUNC(c_int32)),
    ("error_message", CFUNC(c_char_p)),
    ("error_clear", CFUNC(None)),
    ("alloc", CFUNC(P, c_size_t)),
    ("free", CFUNC(None, P)),
    ("string_new", CFUNC(P, c_char_p, c_size_t)),
    ("func_new", CFUNC(P, P, GPPackedCFunc, SelfDeleter)),
    ("any_clear", CFUNC(None, _ANYP)),
    ("type_tensor", None), ("type_tuple", None), ("type_func", None),
    ("tensor_from_dlpack", CFUNC(P, P)),
    ("tensor_alloc", CFUNC(P, DLDataType, c_int32, ctypes.POINTER(c_int64), c_int)),
    ("attrs_new", None), ("op_attrs_new", None), ("attrs_get", None),
    ("op_get", None), ("op_register", None),
    ("var_new", None), ("global_var_new", None),
    ("constant_new", CFUNC(P, P)),
    ("call_new", None), ("tuple_new", None), ("tuple_get_item_new", None),
    ("function_new", CFUNC(P, c_int32, ctypes.POINTER(P), P, P, P)),
    ("let_new", None), ("if_new", None), ("expr_annotate", None),
    ("post_order", None),
    ("rewrite", CFUNC(P, P, P, P)),
    ("module_new", CFUNC(P, c_char_p)),
    ("module_add", CFUNC(c_int, P, c_char_p, P, c_int)),
    ("module_lookup", CFUNC(P, P, c_char_p)),
    ("module_copy", CFUNC(P, P)),
    ("infer_types", CFUNC(P, P)),
    ("verify", CFUNC(c_int, P)),
    ("parse", CFUNC(P, c_char_p, c_size_t, c_char_p)),
    ("print", CFUNC(P, P, c_int32)),
    ("structural_equal", CFUNC(c_int, P, P)),
    ("structural_hash", CFUNC(c_uint64, P)),
    ("pass_register", CFUNC(c_int, ctypes.POINTER(GPPassInfo), c_int)),
    ("pass_unregister", CFUNC(c_int, c_char_p)),
    ("opt_set_register", CFUNC(c_int, c_char_p, c_char_p, c_char_p)),
    ("ctx_new", CFUNC(P)),
    ("ctx_free", CFUNC(None, P)),
    ("ctx_opt_level", CFUNC(c_int32, P)),
    ("ctx_target", CFUNC(c_char_p, P)),
    ("ctx_set_opt_level", CFUNC(c_int, P, c_int32)),
    ("ctx_set_target", CFUNC(c_int, P, c_char_p)),
    ("ctx_set_config", CFUNC(c_int, P, c_char_p, c_char_p)),
    ("ctx_get_config", CFUNC(c_int, P, c_char_p, _ANYP)),
    ("ctx_disable", CFUNC(c_int, P, c_char_p)),
    ("ctx_require", CFUNC(c_int, P, c_char_p)),
    ("run_pipeline", CFUNC(P, P, c_char_p, P)),
    ("plugin_load", CFUNC(c_int, c_char_p)),
    ("ffi_wrap", None), ("ffi_closure", None), ("ffi_closure_free", None),
    # 1.1
    ("op_set_kernel", None), ("eval_call", None),
    ("eval_function", CFUNC(c_int, P, c_char_p, c_int32, ctypes.POINTER(P), ctypes.POINTER(ctypes.POINTER(P)),
                            ctypes.POINTER(c_int32), ctypes.POINTER(GPEvalOptions))),
    ("tensor_to_dlpack", CFUNC(ctypes.POINTER(DLManagedTensor), P)),
    ("ctx_note", None),  # variadic: called through a fixed "(ctx, "%s", text)" prototype below
    ("op_set_attr", None), ("op_get_attr", None),
    ("func_register", CFUNC(c_int, c_char_p, P, c_int)),
    ("func_get", CFUNC(P, c_char_p)),
    # 1.2
    ("pattern_compile", None), ("pattern_match", None), ("pattern_rewrite", None),
    ("pattern_table_new", None), ("pattern_table_read", None), ("pattern_table_register", None),
    ("pattern_table_get", None),
    ("target_register", None), ("target_unregister", None),
    ("target_has_kernel", CFUNC(c_int, c_char_p, c_char_p)),
    ("target_list", CFUNC(c_int, ctypes.POINTER(ctypes.POINTER(c_char_p)), ctypes.POINTER(c_int32))),
    ("plugin_unload", CFUNC(c_int, c_char_p)),
    ("opt_set_get", CFUNC(P, c_char_p, c_char_p)),
    ("opt_set_list", CFUNC(P)),
    ("ctx_set_opt_set", CFUNC(c_int, P, c_char_p)),
    # 1.3: instruments, default plugins, packed passes
    ("ctx_instrument_register", CFUNC(c_int, P, ctypes.POINTER(GPInstrument))),
    ("ctx_instrument_unregister", CFUNC(c_int, P, c_char_p)),
    ("plugins_load_default", CFUNC(c_int, ctypes.POINTER(c_int32))),
    ("pass_register_packed", CFUNC(c_int, ctypes.POINTER(GPPassInfo), P, c_int)),
    # 1.3: queries, ONNX import, retain / release
    ("pass_list", CFUNC(P, c_char_p)),
    ("onnx_import", CFUNC(P, c_char_p, c_size_t, c_char_p, ctypes.POINTER(GPOnnxImportOptions))),
    ("object_retain", CFUNC(P, P)),
    ("object_release", CFUNC(None, P)),
]


class GPHostAPI(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", c_uint32)] + [
        (name, ft if ft is not None else c_void_p) for name, ft in _HOST_FIELDS]


CtxNoteFn = CFUNC(None, P, c_char_p, c_char_p)
ErrorSetFn = CFUNC(None, c_int32, c_char_p, c_char_p)
# GPRewriteFn: (user, orig, rebuilt) -> new reference or NULL
RewriteFn = CFUNC(P, P, P, P)


class Host:
    """The loaded library and its table."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        self.lib = ctypes.CDLL(self.path, mode=getattr(os, "RTLD_NOW", 2) | ctypes.RTLD_LOCAL)
        entry = self.lib.graphpass_host_api
        entry.restype = ctypes.POINTER(GPHostAPI)
        entry.argtypes = []
        tp = entry()
        if not tp:
            raise OSError("%s: graphpass_host_api() returned NULL" % self.path)
        t = tp.contents
        major, minor = t.abi_version >> 16, t.abi_version & 0xffff
        if major != ABI_MAJOR or minor < ABI_MIN_MINOR:
            raise OSError("%s: host ABI %d.%d; this package needs %d.%d or a later 1.x"
                          % (self.path, major, minor, ABI_MAJOR, ABI_MIN_MINOR))
        self.api = t
        self.abi = (major, minor)
        if not self.has("object_release"):
            raise OSError("%s: host table of ABI %d.%d lacks object_release" % (self.path, major, minor))
        # The two variadic entries, called with a fixed ("%s", text) prototype.
        self.ctx_note = CtxNoteFn(t.ctx_note)
        self.error_set = ErrorSetFn(t.error_set)

    def has(self, field):
        """True when the loaded host's table has `field` (GP_HAS_FIELD)."""
        off = getattr(GPHostAPI, field).offset + getattr(GPHostAPI, field).size
        return self.api.struct_size >= off and bool(getattr(self.api, field))

    def take_string(self, ptr):
        """A host-allocated C string as str, freeing it."""
        if not ptr:
            return None
        try:
            return ctypes.string_at(ptr).decode("utf-8", "replace")
        finally:
            self.api.free(ptr)


# ---- finding the library

_LIB_NAMES = ("libgraphpass.so", "libgraphpass.so.1")


def _pkg_config_var(var):
    exe = shutil.which("pkg-config")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--variable=" + var, "graphpass"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    v = out.stdout.strip()
    return v if out.returncode == 0 and v else None


def candidate_libraries():
    """Where the package looks for libgraphpass, in order (see README): $GRAPHPASS_LIBRARY, the
    source tree the package sits in (python/graphpass -> build/lib), pkg-config's libdir, the
    system's search path."""
    out = []
    env = os.environ.get("GRAPHPASS_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.dirname(os.path.dirname(here))
    out += [os.path.join(tree, "build", "lib", n) for n in _LIB_NAMES]
    libdir = _pkg_config_var("libdir")
    if libdir:
        out += [os.path.join(libdir, n) for n in _LIB_NAMES]
    found = ctypes.util.find_library("graphpass")
    if found:
        out.append(found)
    return out


_lock = threading.Lock()
_host = None


def load(path=None):
    """Load the library once (later calls return the same Host; a different path then is an
    error)."""
    global _host
    with _lock:
        if _host is not None:
            if path and os.path.realpath(path) != _host.path:
                raise RuntimeError("graphpass is already loaded from %s" % _host.path)
            return _host
        tried = []
        for cand in ([path] if path else candidate_libraries()):
            if os.path.sep in cand and not os.path.exists(cand):
                tried.append(cand + " (missing)")
                continue
            try:
                _host = Host(cand)
                return _host
            except OSError as e:
                tried.append("%s (%s)" % (cand, e))
        raise OSError("libgraphpass not found; set GRAPHPASS_LIBRARY to its path, build it (ninja) "
                      "or install it (pkg-config graphpass).  Tried: " + "; ".join(tried))


def loaded():
    return _host
