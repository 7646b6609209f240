"""Tensors: host GPTensor objects, to and from NumPy through DLPack without copies.

    t = graphpass.Tensor.from_numpy(arr)   # the host tensor views arr's memory (arr stays alive)
    a = np.from_dlpack(t)                   # a NumPy view of the host tensor's memory
    a = t.numpy()                           # the same, read-only (host data is shared)
"""
import ctypes

from . import _ffi
from . import errors
from ._runtime import Object, WRAPPERS, api, check_ptr, raise_error

kDLCPU, kDLCUDAHost = 1, 3
_CODES = {"i": 0, "u": 1, "f": 2}  # kDLInt, kDLUInt, kDLFloat


def _dl_dtype(np_dtype):
    """The host's DLDataType of a NumPy dtype (bool is TVM's uint1, one byte per element)."""
    if np_dtype.kind == "b":
        return _ffi.DLDataType(1, 1, 1)
    if np_dtype.kind not in _CODES or np_dtype.byteorder == ">":
        raise errors.UnsupportedError("dtype %s has no DLPack code" % np_dtype, 11)
    return _ffi.DLDataType(_CODES[np_dtype.kind], np_dtype.itemsize * 8, 1)
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}

_py = ctypes.pythonapi
_py.PyCapsule_New.restype = ctypes.py_object
_py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_py.PyCapsule_IsValid.restype = ctypes.c_int
_py.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_py.PyCapsule_GetPointer.restype = ctypes.c_void_p
_py.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_py.PyCapsule_SetName.restype = ctypes.c_int
_py.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# The same function with a Python-object argument (for live capsules; raises ValueError).
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _py))

# Capsule names must outlive the capsules: module-level buffers.
_DLTENSOR = ctypes.create_string_buffer(b"dltensor")
_USED = ctypes.create_string_buffer(b"used_dltensor")


def _capsule_destructor(cap):
    """A capsule nobody consumed still owns its DLManagedTensor: run its deleter (once)."""
    try:
        if _py.PyCapsule_IsValid(cap, _DLTENSOR):
            p = _py.PyCapsule_GetPointer(cap, _DLTENSOR)
            m = ctypes.cast(p, ctypes.POINTER(_ffi.DLManagedTensor))
            if m and m.contents.deleter:
                m.contents.deleter(m)
    except BaseException:
        pass


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_capsule_destructor)


def dtype_str(dt):
    name = _CODE_NAMES.get(dt.code, "code%d" % dt.code)
    if dt.code == 6 or (dt.code == 1 and dt.bits == 1):
        return "bool"
    s = "%s%d" % (name, dt.bits)
    return s if dt.lanes == 1 else "%sx%d" % (s, dt.lanes)


class Tensor(Object):
    """A host tensor (GPTensor).  Implements __dlpack__ / __dlpack_device__, so np.from_dlpack
    (and any DLPack consumer) views its memory without a copy."""
    __slots__ = ()

    @classmethod
    def from_numpy(cls, arr, copy=None):
        """A host tensor over `arr`'s memory through DLPack (no copy; the tensor keeps arr
        alive).  copy=None copies only what NumPy cannot export (read-only or bool arrays);
        copy=True always copies; copy=False raises instead of copying."""
        import numpy as np
        arr = np.asarray(arr)
        if not copy:
            try:
                cap = arr.__dlpack__()
            except (BufferError, TypeError, AttributeError) as e:
                if copy is False:
                    raise errors.UnsupportedError("NumPy cannot export this array through DLPack "
                                                  "(%s); pass copy=None or copy=True" % e, 11)
                cap = None
            if cap is not None:
                return cls._from_capsule(cap)
        return cls._copy_of(arr)

    @classmethod
    def _from_capsule(cls, cap):
        try:
            p = _capsule_pointer(cap, _DLTENSOR)
        except ValueError:
            raise errors.GPValueError("not an unconsumed DLPack capsule", 1) from None
        # From here the host owns the DLManagedTensor (tensor_from_dlpack takes it even on error).
        if _py.PyCapsule_SetName(cap, _USED) != 0:
            raise errors.InternalError("PyCapsule_SetName failed", 10)
        return cls(check_ptr(api().tensor_from_dlpack(p), "tensor_from_dlpack"))

    @classmethod
    def _copy_of(cls, arr):
        import numpy as np
        arr = np.ascontiguousarray(arr)
        dt = _dl_dtype(arr.dtype)
        shape = (ctypes.c_int64 * max(1, arr.ndim))(*arr.shape)
        t = cls(check_ptr(api().tensor_alloc(dt, arr.ndim, shape, 1), "tensor_alloc"))
        if arr.nbytes:
            ctypes.memmove(t.data_ptr, arr.ctypes.data, arr.nbytes)
        return t

    @classmethod
    def empty(cls, shape, dtype="float32"):
        """A new zero-filled host tensor."""
        import numpy as np
        dt = _dl_dtype(np.dtype(dtype))
        sh = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        return cls(check_ptr(api().tensor_alloc(dt, len(shape), sh, 1), "tensor_alloc"))

    @property
    def _st(self):
        return ctypes.cast(self.handle, ctypes.POINTER(_ffi.GPTensor)).contents

    @property
    def shape(self):
        dl = self._st.dl
        return tuple(dl.shape[i] for i in range(dl.ndim))

    @property
    def dtype(self):
        """The dtype as Relay writes it ("float32", "int64", "bool")."""
        return dtype_str(self._st.dl.dtype)

    @property
    def data_ptr(self):
        """The address of the first element (data + byte_offset), or None without data."""
        dl = self._st.dl
        return dl.data + dl.byte_offset if dl.data else None

    @property
    def has_data(self):
        return bool(self._st.dl.data)

    def __dlpack_device__(self):
        return (self._st.dl.device.device_type, self._st.dl.device.device_id)

    def __dlpack__(self, stream=None, **_kw):
        """A "dltensor" capsule of a DLManagedTensor viewing this tensor (it holds a reference
        to the tensor until its consumer runs the deleter; an unconsumed capsule runs it).  Bool
        tensors (uint1, TVM's bool) have no DLPack consumer in NumPy: use numpy()."""
        if self.dtype == "bool":
            raise BufferError("a bool (uint1) tensor cannot be exported through DLPack; use Tensor.numpy()")
        m = api().tensor_to_dlpack(self.handle)
        if not m:
            raise_error("tensor_to_dlpack")
        return _py.PyCapsule_New(ctypes.cast(m, ctypes.c_void_p), _DLTENSOR, _CAPSULE_DESTRUCTOR)

    def numpy(self, writable=False):
        """A NumPy array viewing the tensor's memory (no copy).  Read-only unless writable: the
        host treats a shared tensor's data as immutable."""
        import numpy as np
        if self.dtype == "bool":  # uint1 has no NumPy DLPack import: a view through the buffer
            a = self._bool_view(np)
        else:
            a = np.from_dlpack(self)
        if not writable:
            a.flags.writeable = False
        return a

    def _bool_view(self, np):
        dl = self._st.dl
        if not dl.data:
            raise errors.GPValueError("tensor has no data (a constant of known type without values)", 1)
        shape = self.shape
        if dl.strides:
            strides = tuple(dl.strides[i] for i in range(dl.ndim))  # in elements of one byte
            span = 1 + sum((n - 1) * st for n, st in zip(shape, strides)) if all(shape) else 0
        else:
            strides = None
            span = int(np.prod(shape)) if shape else 1
        buf = (ctypes.c_uint8 * max(1, span)).from_address(self.data_ptr)
        buf.owner = Tensor(api().object_retain(self.handle))  # keeps the host tensor alive
        a = np.frombuffer(buf, dtype=np.bool_, count=span)
        return np.lib.stride_tricks.as_strided(a, shape, strides) if strides else a.reshape(shape)

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        if self._handle is None:
            return "<graphpass.Tensor closed>"
        return "<graphpass.Tensor %s %s%s>" % (self.dtype, self.shape, "" if self.has_data else " (no data)")


WRAPPERS[_ffi.TI_TENSOR] = Tensor


def as_tensor(x):
    """A Tensor from a Tensor (itself), a NumPy array or anything np.asarray takes (no copy when
    NumPy can export it through DLPack)."""
    if isinstance(x, Tensor):
        return x
    return Tensor.from_numpy(x)
