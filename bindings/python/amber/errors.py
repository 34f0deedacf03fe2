"""Amber's errors as Python exceptions, each carrying the C API's code,
message and origin (the entity.attribute, transformer, file or position
the error concerns)."""
from __future__ import annotations

import functools
import gc
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

from ._ffi import ffi, lib


@dataclass(frozen=True)
class Problem:
    """One problem of a failed save (a broken rule) or of a model that did
    not bind."""

    place: str
    """Where: "Book.title", a constraint "Book(title, author)", "Book.indexes[0]"."""
    message: str
    """A sentence naming what was expected and what was found."""
    rule: str = ""
    """For a save: "required", "minValue", "maxValue", "minLength",
    "maxLength", "pattern", "uniqueness", "count", "deny", "relationship",
    "conflict", "transformer" or "store"; "" for a model problem."""
    object_uri: str = ""
    """The object concerned ("" for none): `context.object(uri)` on the
    saving context finds it, a new object's temporary URI included."""

    def __str__(self) -> str:
        where = f"{self.object_uri}: {self.place}" if self.object_uri else self.place
        return f"{where}: {self.message}"


class Error(Exception):
    """An error reported by Amber."""

    def __init__(self, code: int, message: str, origin: str = "", problems: "list[Problem] | None" = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.origin = origin
        self._problems = problems or []


class MisuseError(Error):
    """A call Amber refused as misuse: a closed (stale) context, store or
    object, a handle of the wrong kind, a context used from another thread,
    a deleted object."""


class ArgumentError(MisuseError, TypeError, ValueError):
    """An argument of the wrong type or shape: an entity name that is not a
    str, a row with too few values, columns of different lengths. The call
    did nothing. A TypeError and a ValueError too, as Python's own checks
    raise either."""


class IndexOutOfRangeError(MisuseError, IndexError):
    """An index past the end of a live query."""


class ReservedNameError(MisuseError, AttributeError):
    """An assignment to a name of an object's own API (`book.uri = …`): an
    attribute with that name is set as an item (`book["uri"] = …`)."""


class NotFoundError(Error, LookupError):
    """No entity, attribute, class, transformer or object of that name or ID;
    the message suggests the nearest name."""


class UnknownNameError(NotFoundError, AttributeError, KeyError):
    """An object has no attribute or relationship of that name (the message
    suggests the nearest). An AttributeError and a KeyError too, so
    `getattr(obj, name, default)`, `hasattr` and `try: obj[name]` work as in Python."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class ValueClassError(Error, TypeError, ValueError):
    """A value that cannot be stored as given: of the wrong type, class or
    struct size for its attribute, out of range (an integer beyond 64 bits, a
    date outside the years 1 to 9999, NaN), not held exactly (a datetime
    whose microseconds a date cannot keep), or any value for a derived
    attribute. Nothing was changed. A TypeError and a ValueError too, as
    Python's own conversions raise either."""


def value_error(message: str) -> ValueClassError:
    """A ValueClassError for a Python value the binding cannot hand to Amber."""
    return ValueClassError(lib.AMBER_E_INVALID_VALUE, message)


def argument_error(message: str) -> ArgumentError:
    """An ArgumentError saying `message`."""
    return ArgumentError(lib.AMBER_E_INVALID_VALUE, message)


def checked_arguments(function: Callable) -> Callable:
    """`function`, with the TypeError, ValueError, OverflowError or
    struct.error Python's own conversions raise on a bad argument (a str
    where a number goes) coming out as an ArgumentError that names the call.
    Errors of Amber, what callbacks raised (reported through their C call)
    and text that is not UTF-8 pass unchanged."""
    @functools.wraps(function)
    def checked(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (Error, UnicodeError):
            raise
        except (TypeError, ValueError, OverflowError, struct.error) as error:
            if getattr(error, "_amber_hook", False):  # a hook's, raised after its call was done
                raise
            raise ArgumentError(lib.AMBER_E_INVALID_VALUE, f"{function.__qualname__}(): {error}") from error
    return checked


def checks_arguments(cls: type) -> type:
    """Applies checked_arguments to every public method of `cls`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, (classmethod, staticmethod)):  # callable since 3.10: look at these first
            setattr(cls, name, type(member)(checked_arguments(member.__func__)))
        elif callable(member) and not isinstance(member, type):
            setattr(cls, name, checked_arguments(member))
    return cls


def placed(error: BaseException, place: str) -> Error:
    """`error`, raised while converting a value, as an amber.Error naming
    `place` (`Book.title`); one that already names its place is kept."""
    if isinstance(error, Error):
        if error.origin:
            return error
        return type(error)(error.code, f"{place}: {error.message}", place)
    return ValueClassError(lib.AMBER_E_INVALID_VALUE, f"{place}: {error}", place)


class ModelError(Error):
    """A model that does not bind, a malformed model file, or a store made
    with another model. For a model that does not bind, `problems` lists
    each problem (a `Problem` with place and message)."""

    @property
    def problems(self) -> list[Problem]:
        return list(self._problems)


class PredicateError(Error, ValueError):
    """Predicate text that does not parse or compile; the message has the position."""


class UnknownKeyPathError(NotFoundError, PredicateError):
    """A predicate names an attribute or relationship its entity does not
    have: a NotFoundError (the message has the nearest name) and a
    PredicateError (the origin is the position, "position 7")."""


class ValidationError(Error):
    """A save that failed: nothing was written and every pending change is kept.

    `problems` lists every problem, each a `Problem` with the object's URI,
    the place (attribute or constraint), the rule and a message: validation
    rules, uniqueness constraints and links, all found by the one save."""

    @property
    def problems(self) -> list[Problem]:
        return list(self._problems)


class TransformerError(Error):
    """A transformer failed or returned a value other than it declared."""


class PluginError(Error):
    """A plugin was refused; nothing of it was registered."""


class StoreError(Error):
    """The file is not an Amber store, SQLite failed, or the store refused
    what was asked (the subclasses say which)."""


class BusyError(StoreError):
    """Another connection held the store's lock past the busy timeout.

    Nothing was written and every pending change is kept: retrying may succeed.
    """


class DestinationExistsError(StoreError, FileExistsError):
    """A file is already where only a new one is written (a backup's
    destination); nothing was written."""


class MigrationError(StoreError):
    """Migrating a store to another model was refused, cancelled or failed;
    the store is unchanged. `problems` lists each change that cannot be
    inferred or each object that stopped it."""

    @property
    def problems(self) -> list[str]:
        return [line.strip() for line in self.message.splitlines()[1:] if line.strip()]


class StoreURLError(StoreError, ValueError):
    """Text that names no store (`amber.open`): an unknown scheme
    ("mysql://…"), a file: URL with a host, a query or bad
    percent-encoding, text after "memory:", a PostgreSQL schema name that is
    not a plain lower-case identifier, an empty name. `origin` names the part
    that is wrong ("scheme mysql"); nothing was created. A
    ValueError too, as Python's own URL parsing raises. Write a path with a
    colon before its first slash as "./a:b" (or pass a pathlib.Path)."""


class UnsupportedError(StoreError):
    """The store cannot do what was asked (a store that keeps no history,
    a PostgreSQL store asked for batch changes or opened with derived
    attributes, say); `origin` names the capability. Nothing was done."""


class HistoryError(StoreError):
    """A history token the store cannot read from or purge through: one of
    another store, one later than the store's history (from a later copy of
    the store), or one whose later transactions were purged. Text that is
    not a token at all raises ValueClassError instead."""


class ServerError(StoreError):
    """A database server (PostgreSQL) refused a statement or could not be
    reached; `origin` is its SQLSTATE ("08006": the connection was lost)."""


class StorageError(StoreError, OSError):
    """The disk failed the store's file: full, an I/O error, or not
    writable. The message says what stands: a failed save wrote nothing and
    its context keeps the changes, so it can be saved again once there is room."""


class HookError(Error):
    """Model logic in code failed: a validator, will_save or
    prepare_for_deletion raised something other than a ValidationProblem.
    The save (or deletion) stopped, nothing was written or deleted, and
    every pending change stays. What the hook raised is the `__cause__`;
    `origin` names the hook ("willSave")."""


class ValidationProblem(Exception):
    """Raised by a validator in code (validate_value, validate_for_insert,
    validate_for_update, validate_for_delete) to report a problem: the save
    lists it with every other problem, as a ValidationError's problem with
    rule "validation". `key` names the attribute or relationship concerned
    (None: the whole object, or in validate_value the attribute checked).
    To report several at once, raise an ExceptionGroup of them."""

    def __init__(self, message: str, key: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key


class ObserverError(Error):
    """An observer or live query callback raised while being told of a save,
    merge or refresh, or of pending changes (Context.process_pending_changes).
    What the call did is done (a save is written) and every
    other callback ran; the first exception raised is the `__cause__`, all
    of them are in `exceptions`."""

    exceptions: list[BaseException] = []


_BY_CODE = {
    lib.AMBER_E_NULL_ARGUMENT: MisuseError,
    lib.AMBER_E_INVALID_HANDLE: MisuseError,
    lib.AMBER_E_WRONG_HANDLE_TYPE: MisuseError,
    lib.AMBER_E_WRONG_THREAD: MisuseError,
    lib.AMBER_E_UNAVAILABLE: MisuseError,
    lib.AMBER_E_INVALID_UTF8: ValueClassError,
    lib.AMBER_E_NOT_FOUND: NotFoundError,
    lib.AMBER_E_INVALID_VALUE: ValueClassError,
    lib.AMBER_E_INVALID_MODEL: ModelError,
    lib.AMBER_E_INVALID_JSON: ModelError,
    lib.AMBER_E_MODEL_MISMATCH: ModelError,
    lib.AMBER_E_INVALID_DECLARATION: ModelError,
    lib.AMBER_E_DUPLICATE: ModelError,
    lib.AMBER_E_INVALID_PREDICATE: PredicateError,
    lib.AMBER_E_SAVE_FAILED: ValidationError,
    lib.AMBER_E_NOT_A_STORE: StoreError,
    lib.AMBER_E_SQLITE: StoreError,
    lib.AMBER_E_TRANSFORMER: TransformerError,
    lib.AMBER_E_PLUGIN_REFUSED: PluginError,
    lib.AMBER_E_BUSY: BusyError,
    lib.AMBER_E_OBSERVER: ObserverError,
    lib.AMBER_E_HOOK: HookError,
    lib.AMBER_E_MIGRATION_FAILED: MigrationError,
    lib.AMBER_E_EXISTS: DestinationExistsError,
    lib.AMBER_E_INVALID_URL: StoreURLError,
    lib.AMBER_E_UNSUPPORTED: UnsupportedError,
    lib.AMBER_E_HISTORY: HistoryError,
    lib.AMBER_E_SERVER: ServerError,
    lib.AMBER_E_STORAGE: StorageError,
}

# Exceptions Python callbacks raised during the current C call, per thread:
# the callback returns failure to C, and check() raises them afterwards.
_raised = threading.local()


# How many exceptions callbacks kept, on any thread, not yet taken: lets check()
# skip the thread-local look-up on the common path where no callback raised.
_kept = 0


def _take_callback_exceptions() -> list[BaseException]:
    global _kept
    errors = getattr(_raised, "errors", [])
    _raised.errors = []
    _kept = max(0, _kept - len(errors))
    return errors


def interrupted() -> bool:
    """Whether a callback of the current C call on this thread was stopped by
    a KeyboardInterrupt or SystemExit: the calls after it fail at once, so a
    save over many values stops at the next one instead of running them all."""
    return bool(_kept) and any(not isinstance(error, Exception) for error in getattr(_raised, "errors", ()))


def callback_frame(body: "Callable[[], None]") -> bool:
    """Runs a callback's `body` with a list of its own, so C calls it makes
    (whose check() takes what their callbacks raised) cannot take what earlier
    callbacks of the outer call raised; keeps what `body` raises for the outer
    call's check(). Returns whether `body` finished without raising."""
    return failed_callback(body) is None


def failed_callback(body: "Callable[[], None]") -> Optional[BaseException]:
    """callback_frame, returning what `body` raised (None if it finished)."""
    outer = _take_callback_exceptions()
    try:
        body()
        return None
    except BaseException as error:  # never let a Python exception cross into C
        outer.append(error)
        return error
    finally:
        _raised.errors = outer


def last_error() -> Error:
    """The calling thread's last C API error as an exception."""
    # A collection while the strings are read could run a finalizer whose C call
    # fails (a handle of another thread) and replaces the error being read.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read_last_error()
    finally:
        if collecting:
            gc.enable()


def _read_last_error() -> Error:
    code = lib.amber_last_error_code()
    message = ffi.string(lib.amber_last_error_message()).decode("utf-8", "replace")
    origin = ffi.string(lib.amber_last_error_origin()).decode("utf-8", "replace")
    if code == lib.AMBER_E_NOT_FOUND and origin.startswith("position "):
        return UnknownKeyPathError(code, message, origin)
    return _BY_CODE.get(code, Error)(code, message, origin, [_problem(lib.amber_last_error_problem(index))
                                                             for index in range(lib.amber_last_error_problem_count())])


def _problem(problem) -> Problem:
    def text(pointer) -> str:
        return ffi.string(pointer).decode("utf-8", "replace")
    return Problem(place=text(problem.place), message=text(problem.message), rule=text(problem.rule),
                   object_uri=text(problem.object_uri))


def keep_callback_exception(error: BaseException) -> None:
    """Keeps what a callback raised for the check() of the C call that runs it."""
    global _kept
    _raised.errors = getattr(_raised, "errors", []) + [error]
    _kept += 1


def late_callback(body: "Callable[[], None]", note: str) -> None:
    """Runs a callback that cannot fail in C (a hook such as did_save): what
    it raises, with `note` added, is kept for the Python method that made the
    C call (raises_hook_errors), which raises it once its own work is done
    (an exception of a callback the call itself ran, not of one a C call
    inside `body` ran)."""
    outer = getattr(_raised, "late", [])
    _raised.late = []
    try:
        body()
    except BaseException as error:  # never let a Python exception cross into C
        error.add_note(note)
        error._amber_hook = True  # type: ignore[attr-defined]
        outer.append(error)
    finally:
        _raised.late = outer


def raises_hook_errors(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """`method`, raising what hooks that cannot fail in C raised while it
    ran (late_callback), once it has done all its work; if it raises itself,
    theirs are added to its exception as notes."""
    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        outer = getattr(_raised, "late", [])
        _raised.late = []
        try:
            result = method(*args, **kwargs)
        except BaseException as error:
            for late in _raised.late:
                error.add_note(f"a hook also raised {type(late).__name__}: {late}")
            raise
        finally:
            late, _raised.late = _raised.late, outer
        if late:
            raise late[0]
        return result
    return wrapper


def check(status: int) -> None:
    """Raises the last error unless `status` is AMBER_OK. After callbacks
    failed, a KeyboardInterrupt or SystemExit one raised is raised as it is;
    otherwise the error is raised from the first exception a callback raised
    (an ObserverError lists them all). A call can succeed although a callback
    failed (a fetch that decodes eagerly leaves a failing value to its read):
    then a KeyboardInterrupt or SystemExit is still raised, and other
    exceptions are dropped, so none is blamed on a later call."""
    if status == 0:
        if _kept:
            for exception in _take_callback_exceptions():
                if not isinstance(exception, Exception):
                    raise exception
        return
    raised = _take_callback_exceptions()
    error = last_error()
    for exception in raised:
        if not isinstance(exception, Exception):
            raise exception
    if isinstance(error, ObserverError) and raised:
        # Each failed callback shows in the message as what it raised, not as the status it returned to C.
        described = iter(raised)
        message = re.sub(r"the callback returned -?\d+", lambda found: _described(next(described, None)) or found.group(0),
                         error.message)
        error = ObserverError(error.code, message, error.origin, error._problems)
        error.exceptions = raised
    raise error from (raised[0] if raised else None)


def _described(exception: Optional[BaseException]) -> str:
    """`ValueError: the text`, or "" for none."""
    return f"{type(exception).__name__}: {exception}" if exception is not None else ""
