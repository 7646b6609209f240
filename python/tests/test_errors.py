"""Every failure is a GraphpassError subclass carrying the ABI's kind and the host's message."""
import numpy as np
import pytest

import graphpass as gp
from conftest import ADD2


def test_bad_text_has_kind_and_location():
    with pytest.raises(gp.ParseError) as ei:
        gp.parse("def @main(%x: Tensor[(2), float32]) {\n  add(%x, %y)\n}", "bad.relay")
    e = ei.value
    assert e.kind == 3 and e.kind_name == "parse"
    assert e.location == ("bad.relay", 2, 11)
    assert "bad.relay:2:11" in str(e) and "%y" in e.message
    assert isinstance(e, gp.GraphpassError)


def test_syntax_error_location():
    with pytest.raises(gp.ParseError) as ei:
        gp.parse("def @main(%x: Tensor[(2), float32]) {\n  add(%x, %x\n}")
    assert ei.value.location is not None and ei.value.location[1] >= 2


def test_unknown_pass(add2):
    with pytest.raises(gp.NotFoundError) as ei:
        gp.optimize(add2, "FoldConstant,NoSuchPass")
    assert ei.value.kind == 4 and "NoSuchPass" in ei.value.message
    assert isinstance(ei.value, LookupError)


def test_context_values():
    with pytest.raises(gp.GPValueError) as ei:
        gp.PassContext(opt_level=99)
    assert ei.value.kind == 1 and "99" in ei.value.message
    with pytest.raises(gp.NotFoundError):
        gp.PassContext(disabled=["NoSuchPass"])
    with pytest.raises(gp.NotFoundError):
        gp.PassContext(opt_set="nosuchset")
    with pytest.raises(gp.NotFoundError):
        gp.PassContext(config={"FoldConstant.nokey": 1}).run(gp.parse(ADD2), "FoldConstant")


def test_bad_config_value(add2):
    with pytest.raises(gp.GraphpassError) as ei:
        gp.optimize(add2, "FoldConstant", config={"FoldConstant.max_bytes": "many"})
    assert "max_bytes" in ei.value.message


def test_eval_input_mismatch(add2):
    with pytest.raises(gp.GPValueError) as ei:
        gp.evaluate(add2, np.zeros((3, 2), np.float32))
    assert "%x" in ei.value.message
    with pytest.raises(gp.GPValueError):
        gp.evaluate(add2, {"y": np.zeros((2, 3), np.float32)})


def test_error_slot_is_cleared(add2):
    with pytest.raises(gp.ParseError):
        gp.parse("def @main(")
    # the next successful calls see no stale error
    assert gp.optimize(add2, "InferType") == add2.infer_types()


def test_unsupported_dtype_without_copy():
    with pytest.raises(gp.UnsupportedError):
        gp.Tensor.from_numpy(np.zeros(3, np.complex64), copy=False)
