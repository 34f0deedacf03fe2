"""The cffi layer: declarations read from amber.h itself, and the library.

Nothing here is hand-copied from the header, so the two cannot drift: the
header is stripped of what cffi's cdef does not understand (comments,
preprocessor lines other than integer #defines, the C++ guard) and fed to
cdef whole.
"""
from __future__ import annotations

import ctypes.util
import os
import re

from cffi import FFI

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def header_path() -> str:
    """The amber.h this package reads: the copy installed with it, else the
    repository's (when used from a source checkout)."""
    for candidate in (
        os.path.join(_PACKAGE, "include", "amber.h"),
        os.path.join(_PACKAGE, "..", "..", "..", "include", "amber.h"),
    ):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    raise ImportError("amber: include/amber.h is missing from the package; reinstall with pip install ./bindings/python")


def cdef_source(text: str) -> str:
    """amber.h as cffi's cdef accepts it."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'#ifdef __cplusplus.*?#endif', "", text, flags=re.S)
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if re.match(r"#define\s+\w+\s+-?\d+\s*$", stripped):
                kept.append(stripped)
            continue
        kept.append(line)
    return "\n".join(kept)


def declared_functions(text: str) -> list[str]:
    """Every function amber.h declares (for the test that all are reachable)."""
    source = cdef_source(text)
    return sorted(set(re.findall(r"\b(amber_[a-z0-9_]+)\s*\(", source)) - set(re.findall(r"\(\s*\*\s*(amber_[a-z0-9_]+)\)", source)))


ffi = FFI()
with open(header_path(), encoding="utf-8") as _header:
    HEADER_TEXT = _header.read()
ffi.cdef(cdef_source(HEADER_TEXT))


def _load():
    tried = []
    explicit = os.environ.get("AMBER_LIBRARY")
    if explicit:
        try:
            return ffi.dlopen(explicit)
        except OSError as error:
            raise ImportError(f"amber: AMBER_LIBRARY={explicit} cannot be loaded: {error}") from error
    bundled = os.path.join(_PACKAGE, "lib", "libamber.so.0")
    candidates = [bundled] if os.path.exists(bundled) else []
    candidates += ["libamber.so.0"] + ([ctypes.util.find_library("amber")] if ctypes.util.find_library("amber") else [])
    for candidate in candidates:
        try:
            return ffi.dlopen(candidate)
        except OSError as error:
            tried.append(f"{candidate}: {error}")
    raise ImportError(
        "amber: cannot find the Amber C library (libamber.so.0). Either set AMBER_LIBRARY to its path, "
        "for example AMBER_LIBRARY=$(swift build --show-bin-path)/libAmberC.so, or install it with "
        "scripts/install.sh PREFIX and make PREFIX/lib visible to the loader (ldconfig or LD_LIBRARY_PATH). "
        "Tried: " + "; ".join(tried)
    )


lib = _load()
# What this package declares and registers is named as Python's in the library's messages, not the "C API"'s.
if lib.amber_set_source_name(b"Python") != 0:
    raise ImportError("amber: the library refused to name its caller Python")
