"""Batch changes by predicate: the amber_batch_assignment array a batch
update sends, and the object IDs amber_context_batch_update and
amber_context_batch_delete return. Context.batch_update and
Context.batch_delete build the request as Context.fetch does and call these."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from ._ffi import ffi, lib
from ._values import to_c
from .errors import argument_error, check, placed

# Context.batch_update's keyword -> the amber_batch_operation it asks for, in the order the
# assignments are sent (the C API checks the whole batch before anything is written, so the
# order changes no result, only which refusal of several is reported).
OPERATIONS: dict[str, int] = {
    "set": lib.AMBER_BATCH_SET,
    "copy": lib.AMBER_BATCH_COPY,
    "add": lib.AMBER_BATCH_ADD,
    "subtract": lib.AMBER_BATCH_SUBTRACT,
    "multiply": lib.AMBER_BATCH_MULTIPLY,
}


def _attribute(entity: Any, name: Any, what: str) -> Any:
    """The entity's Attribute `name` (NotFoundError with the nearest name)."""
    if not isinstance(name, str):
        raise argument_error(f"{what} must be an attribute name (a str), not {type(name).__name__} ({name!r})")
    return entity.attribute(name)


def assignments(entity: Any, changes: Mapping[str, Optional[Mapping[str, Any]]], keep: list) -> tuple[Any, int]:
    """The amber_batch_assignment array (and its length) for `changes`:
    operation keyword ("set", "copy", …) -> {attribute name: value}, where a
    value is the constant or operand, converted as `obj.attr = value`
    converts it, or, for "copy", the name of the attribute copied. The array
    and every buffer a value points to are appended to `keep`, which the
    caller holds until the C call returns."""
    pairs = []
    for keyword, operation in OPERATIONS.items():
        mapping = changes.get(keyword)
        if mapping is None:
            continue
        if not isinstance(mapping, Mapping):
            raise argument_error(f"batch_update {keyword}= must be a mapping of attribute names to "
                                 f"{'attribute names' if keyword == 'copy' else 'values'}, not {type(mapping).__name__}")
        pairs.extend((operation, keyword, name, value) for name, value in mapping.items())
    array = ffi.new("amber_batch_assignment[]", len(pairs))
    keep.append(array)
    for slot, (operation, keyword, name, value) in zip(array, pairs):
        attribute = _attribute(entity, name, f"a key of batch_update {keyword}=")
        slot.attribute = attribute.handle
        slot.operation = operation
        if operation == lib.AMBER_BATCH_COPY:
            slot.source = _attribute(entity, value, f"batch_update copy={{{name!r}: …}}").handle
            slot.value.type = lib.AMBER_VALUE_NULL
            continue
        try:
            to_c(value, slot.value, keep, attribute.type, attribute.value_class, attribute.codec)
        except (TypeError, ValueError) as error:
            raise placed(error, f"{entity.name}.{attribute.name}") from None
    return array, len(pairs)


def object_ids(call: Callable[[Any, Any], int]) -> list[str]:
    """Runs `call(out_ids, out_count)` (a batch update or delete) and returns
    the object IDs it wrote, as URIs; the C text is freed."""
    out, count = ffi.new("char **"), ffi.new("size_t *")
    status = call(out, count)
    # Filled also when an observer failed (the batch is written): freed before check() raises.
    text = ""
    if out[0] != ffi.NULL:
        try:
            text = ffi.string(out[0]).decode("utf-8")
        finally:
            lib.amber_free(out[0])
    check(status)
    return text.split("\n") if text else []
