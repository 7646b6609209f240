"""Parse, print, structural equality, types, verify, files."""
import graphpass as gp
from conftest import ADD2


def test_parse_print_round_trip(add2):
    assert add2.functions == ["main"]
    text = add2.text()
    assert "add(%x, %x)" in text and "ty=Tensor[(2, 3), float32]" in text
    assert "ty=" not in add2.text(types=False)
    again = gp.parse(text)
    assert again == add2 and hash(again) == hash(add2)
    assert gp.parse(ADD2.replace("add", "multiply")) != add2


def test_params_and_types(add2):
    assert add2.params() == [("x", ((2, 3), "float32"))]
    typed = add2.infer_types()
    assert typed.verify() is typed
    assert typed == gp.optimize(add2, "InferType") and typed.params() == add2.params()


def test_load_relay_file(tmp_path):
    p = tmp_path / "m.relay"
    p.write_text(ADD2)
    m = gp.load(p)
    assert m.source_name == str(p) and m == gp.parse(ADD2)


def test_close_and_context_manager():
    with gp.parse(ADD2) as m:
        assert m.functions == ["main"]
    try:
        m.functions
    except ValueError as e:
        assert "closed" in str(e)
    else:
        raise AssertionError("a closed module is still usable")
    m.close()  # a second close is a no-op


def test_abi_and_library():
    major, minor = gp.abi_version()
    assert major == 1 and minor >= 3
    assert gp.library_path().endswith(".so") or ".so." in gp.library_path()
