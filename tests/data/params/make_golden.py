#!/usr/bin/env python3
"""Writes golden.params from the byte layout of TVM v0.12's save_param_dict (SaveParams in
src/runtime/file_utils.cc, SaveDLTensor in include/tvm/runtime/ndarray.h), independently of
graphpass's writer: little-endian u64 list magic, u64 reserved, names (u64 count, per name u64
length + bytes), arrays (u64 count, per array: u64 magic, u64 reserved, i32 device type 1,
i32 device id 0, i32 ndim, u8 code, u8 bits, u16 lanes, i64 shape[ndim], i64 byte count, data)."""
import struct

def array(code, bits, shape, data):
    out = struct.pack('<QQiii', 0xDD5E40F096B4A13F, 0, 1, 0, len(shape))
    out += struct.pack('<BBH', code, bits, 1)
    out += b''.join(struct.pack('<q', d) for d in shape)
    out += struct.pack('<q', len(data)) + data
    return out

params = [
    # float32 (2, 3): 1.5, -2, 0, 3.25, 1e-3, -0
    ('relay.Constant[0]', array(2, 32, [2, 3], struct.pack('<6f', 1.5, -2.0, 0.0, 3.25, 1e-3, -0.0))),
    # int64 (2): 7, -1
    ('relay.Constant[1]', array(0, 64, [2], struct.pack('<2q', 7, -1))),
    # bool (3) (TVM: uint1, one byte each): true, false, true
    ('relay.Constant[2]', array(1, 1, [3], bytes([1, 0, 1]))),
]
blob = struct.pack('<QQQ', 0xF7E58D4F05049CB7, 0, len(params))
blob += b''.join(struct.pack('<Q', len(n)) + n.encode() for n, _ in params)
blob += struct.pack('<Q', len(params)) + b''.join(a for _, a in params)
open('golden.params', 'wb').write(blob)
