"""What every module of the binding shares: out-parameters, names as C strings,
handles freed exactly once, userdata kept for the library, and the value
packers. The package is a thin Pythonic layer over the C API: everything
forwards to amber.h, and nothing is decided in Python that the C API does not
decide."""
from __future__ import annotations

from typing import Any, Callable, Optional, TYPE_CHECKING

from ._ffi import ffi, lib
from ._columns import ColumnFiller
from ._values import BatchReader, RowPacker
from .errors import Error, argument_error, check

if TYPE_CHECKING:
    from .context import Context


_packer = RowPacker()


_reader = BatchReader()


_columns = ColumnFiller(_packer)


def _out(ctype: str) -> Any:
    return ffi.new(ctype)


def _text(value: Optional[str]) -> Any:
    return ffi.NULL if value is None else value.encode("utf-8")


def _name(value: Any, what: str) -> bytes:
    """`value`, a name (entity, attribute, class, predicate, URI), as UTF-8;
    an ArgumentError saying what it should be if it is not a str."""
    if not isinstance(value, str):
        raise _not_text(value, what)
    return value.encode("utf-8")


def _not_text(value: Any, what: str) -> Error:
    return argument_error(f"{what} must be a str, not {type(value).__name__} ({value!r})")


def _str(pointer: Any) -> str:
    """A NUL-terminated UTF-8 string from C."""
    return ffi.string(pointer).decode("utf-8")


class _Owner:
    """A Python object owning one C handle, which is freed exactly once: by
    _release() (close), or else when the Python object goes away. The handle
    stays in _handle afterwards, stale, so the C API reports later use as
    misuse (a Context says so itself: its _handle raises once it is closed)."""

    _handle: Any = None
    _owns = False  # a class default, so an __init__ that failed before owning anything frees nothing
    _free: Callable[[Any], int]  # the C API's free function for the handle, a staticmethod of each subclass

    def _own(self, handle: Any) -> None:
        self._handle = handle
        self._owns = True

    def _release(self) -> None:
        if self._owns:
            check(self._free(self._handle))  # if refused, the handle stays ours: a later close or the finalizer frees it
            self._owns = False

    def __del__(self) -> None:
        # A finalizer must not raise: a refusal (a context collected on a thread other
        # than its own) leaves the handle with the library.
        if self._owns:
            handle = self._handle
            self._owns = False
            self._free(handle)


# ---------------------------------------------------------------------------
# Python transformers: one static trampoline per role, the transformer object
# reached through ffi.new_handle userdata. No libffi closure per call.
# ---------------------------------------------------------------------------

# Userdata of Python callbacks (transformers, observers, live queries):
# address -> ffi handle, kept until the library calls userdata_free.
_kept_for_library: dict[int, Any] = {}


def _keep_until_freed(target: Any) -> Any:
    """An ffi handle for `target`, kept alive until _free_trampoline runs for it."""
    handle = ffi.new_handle(target)
    _kept_for_library[int(ffi.cast("uintptr_t", handle))] = handle
    return handle


@ffi.callback("void(void *)")
def _free_trampoline(userdata: Any) -> None:
    _kept_for_library.pop(int(ffi.cast("uintptr_t", userdata)), None)


def _lines(call: Callable[[Any, Any], int]) -> list[str]:
    """The lines of the text a C call returns with their count (migration plans, check reports)."""
    out, count = _out("char **"), _out("size_t *")
    check(call(out, count))
    try:
        text = ffi.string(out[0]).decode()
    finally:
        lib.amber_free(out[0])
    return text.split("\n") if count[0] else []
