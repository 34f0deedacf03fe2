"""The binding reads its declarations from amber.h and reaches every function."""
import amber
from amber import _ffi


def test_every_declared_function_is_reachable():
    declared = _ffi.declared_functions(_ffi.HEADER_TEXT)
    assert len(declared) > 50
    missing = [name for name in declared if not callable(getattr(_ffi.lib, name, None))]
    assert missing == []


def test_the_declarations_come_from_the_header():
    source = _ffi.cdef_source(_ffi.HEADER_TEXT)
    assert "amber_status amber_context_save(amber_context *context);" in source
    assert "/*" not in source and "#ifdef" not in source
    assert _ffi.lib.AMBER_ABI_VERSION == _ffi.lib.amber_abi_version()


def test_version():
    assert amber.__version__.count(".") == 2
