"""Whole columns of Python values as amber_column structs, for
amber_context_insert_columns (Context.insert_many, Context.insert_columns).

A column whose values are all of one Python type the C API has a typed column
for (bool, int, float, str, bytes, datetime, UUID, Decimal, struct tuples),
with or without None, is converted by C-speed operations: `array`,
`bytes.join`, `map` over built-in methods, one `struct` call per chunk of
struct values. Every other column (plist values, a mix of types, subclasses
of the built-in types, anything a fast conversion refuses) is packed value by
value into an amber_value array by the same code as a single insert, so it
gets exactly the same conversions and raises exactly the same errors.

Nothing is converted inexactly: a column is typed by the exact Python type of
its values (an int in a float column makes a mixed column, converted value
by value as a single set would convert it), and a value a typed column cannot
hold (an int beyond int64, a str that does not encode as UTF-8, a naive
datetime, a datetime a date does not hold to the microsecond, a non-finite
Decimal) sends its column to the value-by-value path,
which raises what a single insert raises."""
from __future__ import annotations

import array
import itertools
import operator
import uuid
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Callable, Optional, Sequence

from ._ffi import ffi, lib
from ._values import RowPacker, StructCodec, kept_seconds, to_c

_NONE = type(None)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_COLUMN_SIZE = ffi.sizeof("amber_column")
# The array typecode of size_t (lengths) and of int64_t and double (numbers), checked against cffi's sizes.
_SIZE_T = next((code for code in "LQI" if array.array(code).itemsize == ffi.sizeof("size_t")), None)
if _SIZE_T is None or array.array("q").itemsize != 8 or array.array("d").itemsize != ffi.sizeof("double"):
    raise ImportError("amber: no array typecode matches size_t, int64_t or double on this platform")

_get_tzinfo = operator.attrgetter("tzinfo")
_from_timestamp = datetime.fromtimestamp
_get_bytes = operator.attrgetter("bytes")


def _filled(values: Sequence[Any], filler: Any) -> list:
    """`values` with None replaced by `filler` (those rows are marked null; their element is ignored)."""
    return [filler if value is None else value for value in values]


def fill_related(target: Any, values: Sequence[Any], relationship: Any, place: str, handle_of: Callable[[Any, str], Any],
                 keep: list) -> None:
    """Fills amber_column `target` as an AMBER_COLUMN_OBJECTS column for
    `relationship` (a model.Relationship): per row, a to-one's object or
    None, or a to-many's iterable of objects. `handle_of` gives an object's
    handle (refusing anything else, naming `place`); the context checks the
    rest (entity, context, deletion, duplicates) before any object is made."""
    target.size = _COLUMN_SIZE
    target.relationship = relationship.handle
    target.type = lib.AMBER_COLUMN_OBJECTS
    if not relationship.to_many:
        handles = ffi.new("amber_object *[]", [ffi.NULL if value is None else handle_of(value, f"{place} in row {row}")
                                               for row, value in enumerate(values)])
    else:
        counts, members = [], []
        for row, value in enumerate(values):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise TypeError(f"{place} in row {row}: a to-many takes an iterable of objects, not {type(value).__name__}")
            row_members = [handle_of(member, f"{place} in row {row}") for member in value]
            counts.append(len(row_members))
            members += row_members
        handles = ffi.new("amber_object *[]", members)
        lengths = ffi.new("size_t[]", counts)
        keep.append(lengths)
        target.lengths = lengths
        target.data_size = ffi.sizeof("amber_object *") * len(members)
    keep.append(handles)
    target.data = handles


class ColumnFiller:
    """Fills amber_column structs from columns of Python values. `packer`
    packs the columns that take the value-by-value path."""

    def __init__(self, packer: RowPacker) -> None:
        self.packer = packer
        # Python type -> the method converting a column of only that type (None rows filled with the filler).
        self.typed: dict[type, tuple[Callable[..., bool], Any]] = {
            bool: (self._booleans, False), int: (self._integers, 0), float: (self._doubles, 0.0),
            str: (self._strings, ""), bytes: (self._bytes, b""), datetime: (self._dates, _EPOCH),
            uuid.UUID: (self._uuids, uuid.UUID(int=0)), Decimal: (self._decimals, Decimal(0)),
        }

    def fill(self, target: Any, values: Sequence[Any], attribute: Any, entity: str, keep: list) -> int:
        """Fills amber_column `target` with `values` for `attribute` (a model.Attribute)
        of entity `entity`; buffers it points to go into `keep`, to be held until the
        C call returns. Returns the column's type (an AMBER_VALUE_* constant, or
        AMBER_COLUMN_VALUES when the column went value by value)."""
        target.size = _COLUMN_SIZE
        target.attribute = attribute.handle
        types = set(map(type, values))
        nulls: Optional[bytes] = None
        if _NONE in types:
            types.discard(_NONE)
            nulls = bytes(map(operator.is_, values, itertools.repeat(None)))
        codec: Optional[StructCodec] = attribute.codec
        converted = False
        try:
            if codec is not None and types and all(map(self._struct_like, types, itertools.repeat(codec))):
                present = values if nulls is None else _filled(values, codec.unpack(bytes(codec.size)))
                converted = self._structs(target, present, codec, types, keep)
            elif len(types) == 1:
                method, filler = self.typed.get(next(iter(types)), (None, None))
                if method is not None:
                    converted = method(target, values if nulls is None else _filled(values, filler), attribute, keep)
            elif not types:  # every value None
                converted = self._integers(target, [0] * len(values), attribute, keep)
        except (OverflowError, ValueError, TypeError):
            converted = False  # not exact as a typed column: the value-by-value path converts it, or raises as it would
        if not converted:
            self._values(target, values, attribute, entity, keep)
            return lib.AMBER_COLUMN_VALUES
        if nulls is not None:
            keep.append(nulls)
            target.nulls = ffi.from_buffer("uint8_t[]", nulls)
        return target.type

    @staticmethod
    def _struct_like(kind: type, codec: StructCodec) -> bool:
        """Whether values of type `kind` pack as `codec`'s class, as to_c packs them: a
        struct type of Amber's only if it is of that class, else any tuple, list or dict."""
        own = getattr(kind, "_amber_codec", None)
        if own is not None:
            return own.name == codec.name and own.size == codec.size
        return issubclass(kind, (tuple, list, dict))

    @staticmethod
    def _set(target: Any, kind: int, data: Any, keep: list, lengths: Optional[array.array] = None) -> bool:
        keep.append(data)
        target.type = kind
        target.data = ffi.from_buffer(data)
        if lengths is not None:
            keep.append(lengths)
            target.lengths = ffi.from_buffer("size_t[]", lengths)
            target.data_size = len(data)
        return True

    def _text(self, target: Any, kind: int, texts: Sequence[str], keep: list) -> bool:
        if all(map(str.isascii, texts)):  # the common case: a character is a byte, one encode for the column
            return self._set(target, kind, "".join(texts).encode("ascii"), keep, array.array(_SIZE_T, map(len, texts)))
        encoded = list(map(str.encode, texts))  # UTF-8, strict: a lone surrogate raises, and the column goes value by value
        return self._set(target, kind, b"".join(encoded), keep, array.array(_SIZE_T, map(len, encoded)))

    def _booleans(self, target: Any, values: Sequence[bool], attribute: Any, keep: list) -> bool:
        return self._set(target, lib.AMBER_VALUE_BOOL, bytes(values), keep)

    def _integers(self, target: Any, values: Sequence[int], attribute: Any, keep: list) -> bool:
        return self._set(target, lib.AMBER_VALUE_INT, array.array("q", values), keep)  # OverflowError beyond int64

    def _doubles(self, target: Any, values: Sequence[float], attribute: Any, keep: list) -> bool:
        return self._set(target, lib.AMBER_VALUE_DOUBLE, array.array("d", values), keep)

    def _strings(self, target: Any, values: Sequence[str], attribute: Any, keep: list) -> bool:
        uri = attribute.type == lib.AMBER_TYPE_URI or attribute.value_class == "URI"  # as to_c decides
        return self._text(target, lib.AMBER_VALUE_URI if uri else lib.AMBER_VALUE_STRING, values, keep)

    def _bytes(self, target: Any, values: Sequence[bytes], attribute: Any, keep: list) -> bool:
        lengths = array.array(_SIZE_T, map(len, values))
        value_class = attribute.value_class
        if value_class and value_class not in ("Binary", "PropertyList"):  # an opaque class's bytes, as to_c sends them
            name = ffi.new("char[]", value_class.encode())
            keep.append(name)
            target.class_name = name
            return self._set(target, lib.AMBER_VALUE_CUSTOM, b"".join(values), keep, lengths)
        return self._set(target, lib.AMBER_VALUE_BINARY, b"".join(values), keep, lengths)

    def _dates(self, target: Any, values: Sequence[datetime], attribute: Any, keep: list) -> bool:
        if None in map(_get_tzinfo, values):
            return False  # a naive datetime: the value-by-value path raises its TypeError
        stamps = array.array("d", map(datetime.timestamp, values))
        # Exact or refused: a date the double does not hold to the microsecond goes value by value, which refuses it.
        if list(map(_from_timestamp, map(kept_seconds, stamps), itertools.repeat(timezone.utc))) != list(values):
            return False
        return self._set(target, lib.AMBER_VALUE_DATE, stamps, keep)

    def _uuids(self, target: Any, values: Sequence[uuid.UUID], attribute: Any, keep: list) -> bool:
        return self._set(target, lib.AMBER_VALUE_UUID, b"".join(map(_get_bytes, values)), keep)

    def _decimals(self, target: Any, values: Sequence[Decimal], attribute: Any, keep: list) -> bool:
        if not all(map(Decimal.is_finite, values)):
            return False  # NaN or infinity: the value-by-value path raises its ValueError
        return self._text(target, lib.AMBER_VALUE_DECIMAL, list(map(str, values)), keep)

    def _structs(self, target: Any, values: Sequence[Any], codec: StructCodec, types: set, keep: list) -> bool:
        name = ffi.new("char[]", codec.name.encode())
        keep.append(name)
        target.class_name = name
        target.element_size = codec.size
        # None rows hold the class's zero value, of its own named tuple type.
        return self._set(target, lib.AMBER_VALUE_CUSTOM, codec.pack_many(values, types | {codec.type}), keep)

    def _values(self, target: Any, values: Sequence[Any], attribute: Any, entity: str, keep: list) -> None:
        """The value-by-value path: an amber_value per row, packed as a single insert packs them."""
        def slow(value: Any, slot: Any, _index: int) -> None:
            to_c(value, slot, keep, attribute.type, attribute.value_class, attribute.codec)

        uri = lib.AMBER_TYPE_URI if attribute.value_class == "URI" else attribute.type
        packed, buffers = self.packer.pack(list(zip(values)), [uri], [attribute.codec], [f"{entity}.{attribute.name}"], slow)
        keep.extend(buffers)
        keep.append(packed)
        target.type = lib.AMBER_COLUMN_VALUES
        target.data = packed
