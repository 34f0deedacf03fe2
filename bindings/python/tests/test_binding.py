"""The binding reads its declarations from amber.h and reaches every function."""
import os

import pytest

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


def test_the_suite_runs_against_the_installed_package():
    # scripts/test.sh runs it so, from outside the source tree: what it (and coverage) measures is what pip installs.
    installed = os.path.dirname(amber.__file__)
    assert not os.path.samefile(installed, os.path.join(os.path.dirname(__file__), "..", "amber"))
    assert _ffi.header_path() == os.path.join(installed, "include", "amber.h")


def test_a_missing_header_is_reported(monkeypatch):
    monkeypatch.setattr(_ffi.os.path, "exists", lambda path: False)
    with pytest.raises(ImportError, match="include/amber.h is missing from the package"):
        _ffi.header_path()


def test_a_library_that_does_not_load_is_named(monkeypatch):
    monkeypatch.setenv("AMBER_LIBRARY", "/nonexistent/libAmberC.so")
    with pytest.raises(ImportError, match="AMBER_LIBRARY=/nonexistent/libAmberC.so cannot be loaded"):
        _ffi._load()


def test_without_amber_library_the_loader_searches_and_says_where(monkeypatch):
    monkeypatch.delenv("AMBER_LIBRARY", raising=False)
    tried = []

    def refuse(name):
        tried.append(name)
        raise OSError("not here")

    monkeypatch.setattr(_ffi.ffi, "dlopen", refuse)
    with pytest.raises(ImportError, match=r"cannot find the Amber C library .* Tried: .*libamber\.so\.0: not here"):
        _ffi._load()
    assert "libamber.so.0" in tried
    monkeypatch.setattr(_ffi.ffi, "dlopen", lambda name: name)
    assert _ffi._load() == tried[0]
