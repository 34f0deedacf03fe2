"""Model logic in code: the validators and lifecycle hooks a class put in use
(Model.use) defines, run by the library through amber_model_set_logic.

One static trampoline per hook reaches the class through its userdata; the
object comes from the context that owns its handle. Hooks that can fail
(validators, will_save, prepare_for_deletion) fail the C call with what
they raised as the Python error's cause; the others cannot fail in C, so
what they raise comes out of the Python call that ran them once its work
is done (a save is written), with a note saying so.
"""
import weakref
from typing import TYPE_CHECKING, Any, Callable, Optional

from ._common import _free_trampoline, _keep_until_freed, _out
from ._ffi import ffi, lib
from .errors import ValidationProblem, check, failed_callback, interrupted, late_callback

if TYPE_CHECKING:
    from .context import Context
    from .model import Entity
    from .objects import Object

#: Python contexts by the address of their C handle, while they live.
_contexts: "weakref.WeakValueDictionary[int, Context]" = weakref.WeakValueDictionary()

#: The hooks a class may define, with the amber_object_logic field each fills.
HOOKS = {
    "awake_from_insert": "awake_from_insert", "awake_from_fetch": "awake_from_fetch",
    "validate_value": "validate_value", "validate_for_insert": "validate", "validate_for_update": "validate",
    "validate_for_delete": "validate", "will_save": "will_save", "did_save": "did_save",
    "prepare_for_deletion": "prepare_for_deletion", "did_turn_into_fault": "did_turn_into_fault",
}

_VALIDATORS = {lib.AMBER_CHANGE_INSERT: "validate_for_insert", lib.AMBER_CHANGE_UPDATE: "validate_for_update",
               lib.AMBER_CHANGE_DELETE: "validate_for_delete"}


def register_context(context: "Context", handle: Any) -> None:
    """Lets hooks find `context` from its objects' handles."""
    _contexts[int(ffi.cast("uintptr_t", handle))] = context


def defined_hooks(cls: type, base: type) -> list[str]:
    """The hooks `cls` defines differently from `base` (TypedObject's, which do nothing)."""
    return [name for name in HOOKS if getattr(cls, name) is not getattr(base, name)]


def set_logic(model_handle: Any, entity: "Entity", cls: Optional[type], base: type) -> None:
    """Gives `entity`'s objects the hooks `cls` defines (none: removes its logic)."""
    hooks = defined_hooks(cls, base) if cls is not None else []
    if not hooks:
        check(lib.amber_model_set_logic(model_handle, entity.handle, ffi.NULL, ffi.NULL, ffi.NULL))
        return
    logic = ffi.new("amber_object_logic *")
    logic.version = lib.AMBER_OBJECT_LOGIC_VERSION
    for field in {HOOKS[name] for name in hooks}:
        setattr(logic, field, _TRAMPOLINES[field])
    check(lib.amber_model_set_logic(model_handle, entity.handle, logic, _keep_until_freed(cls), _free_trampoline))


def _object(handle: Any) -> "Object":
    """The Python object of an object handle a hook got."""
    out = _out("amber_context **")
    check(lib.amber_object_context(out, handle))
    context = _contexts.get(int(ffi.cast("uintptr_t", out[0])))
    if context is None:
        raise RuntimeError("the object's context has no Python Context")
    return context._known(handle)


def _failing(body: Callable[[], None]) -> int:
    """Runs a hook that can fail: 0, or 1 with what it raised kept for the C call's check()."""
    if interrupted():
        lib.amber_logic_error(b"interrupted")
        return 1
    error = failed_callback(body)
    if error is None:
        return 0
    lib.amber_logic_error(f"{type(error).__name__}: {error}".encode("utf-8", "replace"))
    return 1


def _telling(userdata: Any, handle: Any, hook: str) -> None:
    """Runs a hook that cannot fail in C: what it raises comes out of the call that ran it, once that is done."""
    def run() -> None:
        obj = _object(handle)
        if hook == "did_turn_into_fault":
            obj._forget_values()  # the hook sees the values as they are now, not Python's cached ones
        getattr(ffi.from_handle(userdata), hook)(obj)
    late_callback(run, f"raised by {hook}, after the call that ran it was done")


def _validating(problems: Any, body: Callable[[], None]) -> int:
    """Runs a validator: the ValidationProblems it raises (alone or in an
    ExceptionGroup) are reported; anything else fails the save."""
    def run() -> None:
        try:
            body()
        except ValidationProblem as problem:
            _report(problems, [problem])
        except BaseExceptionGroup as group:
            matched, rest = group.split(ValidationProblem)
            if matched is not None:
                _report(problems, list(_leaves(matched)))
            if rest is not None:
                raise rest
    return _failing(run)


def _leaves(group: BaseExceptionGroup) -> Any:
    for exception in group.exceptions:
        if isinstance(exception, BaseExceptionGroup):
            yield from _leaves(exception)
        else:
            yield exception


def _report(problems: Any, raised: list) -> None:
    for problem in raised:
        key = problem.key.encode() if problem.key is not None else ffi.NULL
        check(lib.amber_problems_add(problems, key, str(problem.message).encode()))


def _teller(hook: str) -> Any:
    """The trampoline of `hook`, one that cannot fail in C."""
    @ffi.callback("void(amber_object *, void *)")
    def trampoline(handle: Any, userdata: Any) -> None:
        _telling(userdata, handle, hook)
    return trampoline


def _failable(hook: str) -> Any:
    """The trampoline of `hook`, one whose exception fails the call in C."""
    @ffi.callback("int32_t(amber_object *, void *)", error=1)
    def trampoline(handle: Any, userdata: Any) -> int:
        return _failing(lambda: getattr(ffi.from_handle(userdata), hook)(_object(handle)))
    return trampoline


@ffi.callback("int32_t(amber_problems *, amber_object *, const char *, const amber_value *, void *)", error=1)
def _validate_value(problems: Any, handle: Any, key: Any, value: Any, userdata: Any) -> int:
    def run() -> None:
        obj, name = _object(handle), ffi.string(key).decode()
        ffi.from_handle(userdata).validate_value(obj, name, obj._get(name))
    return _validating(problems, run)


@ffi.callback("int32_t(amber_problems *, amber_object *, int32_t, void *)", error=1)
def _validate(problems: Any, handle: Any, change: int, userdata: Any) -> int:
    return _validating(problems, lambda: getattr(ffi.from_handle(userdata), _VALIDATORS[change])(_object(handle)))


_TRAMPOLINES = {
    **{hook: _teller(hook) for hook in ("awake_from_insert", "awake_from_fetch", "did_save", "did_turn_into_fault")},
    **{hook: _failable(hook) for hook in ("will_save", "prepare_for_deletion")},
    "validate_value": _validate_value, "validate": _validate,
}
