"""graphpass from Python: a ctypes binding of the C ABI (abi/graphpass.h), no compiled extension.

    import graphpass as gp
    mod = gp.parse(text)                         # or gp.from_onnx(bytes_or_path), gp.load(path)
    opt = gp.optimize(mod, opt_level=3)          # the target's optimization set, or a pipeline
    outs = gp.evaluate(opt, x)                   # NumPy in and out through DLPack, no copies

See python/README.md.  The library is found through $GRAPHPASS_LIBRARY, the source tree this
package sits in (build/lib), pkg-config (graphpass) or the system's search path; plugins through
$GRAPHPASS_PLUGIN_PATH or the plugin directory beside the library."""
from ._runtime import init, load_plugin, unload_plugin, live_objects, register_func, unregister_func, \
    get_func, PackedFunc, Object, OpaqueObject, Expr
from .errors import (GraphpassError, GPValueError, GPTypeError, ParseError, NotFoundError, PassError,
                     VersionError, GPIOError, VerifyError, GPMemoryError, InternalError, UnsupportedError)
from .tensor import Tensor, as_tensor
from .module import Module, PassContext, parse, load, from_onnx, optimize, evaluate
from .instruments import Instrument, Recorder, PassRecord, RunRecord, PassEvent
from .passes import PassInfo, list_passes, list_targets, opt_sets, opt_set, register_opt_set, has_kernel, \
    register_pass, unregister_pass
from .patterns import register_pattern_table, unregister_pattern_table, set_op_attr

__version__ = "0.1.0"


def abi_version():
    """The loaded library's ABI version (major, minor)."""
    from ._runtime import host
    return host().abi


def library_path():
    from ._runtime import host
    return host().path
