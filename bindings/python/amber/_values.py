"""Python values <-> amber_value, and struct classes <-> named tuples."""
from __future__ import annotations

import base64
import functools
import itertools
import json
import operator
import struct
import uuid
from collections import namedtuple
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ._ffi import ffi, lib
from .errors import check, placed, value_error


def field_type_info(code: int) -> tuple[str, int]:
    """The name and size in bytes the C API gives field type `code` (an AMBER_FIELD_* constant)."""
    name, size = ffi.new("char **"), ffi.new("size_t *")
    check(lib.amber_field_type_info(name, size, ffi.NULL, code))
    return ffi.string(name[0]).decode(), size[0]


# Field-type names ("int8" … "bool", "struct") to codes, in code order: the codes are the
# header's AMBER_FIELD_* constants, the names the C API's, so Python keeps no copy of the table.
FIELD_TYPES: dict[str, int] = {field_type_info(code)[0]: code for code in sorted(
    getattr(lib, constant) for constant in dir(lib) if constant.startswith("AMBER_FIELD_"))}


def checked_formats(formats: dict[int, str]) -> dict[int, str]:
    """`formats` (scalar field type code -> struct-module format), once it is known to
    cover every scalar field type of the C API with the size the C API gives it."""
    scalars = {code for code in FIELD_TYPES.values() if code != lib.AMBER_FIELD_STRUCT}
    if set(formats) != scalars:
        raise ImportError(f"amber: struct formats cover field types {sorted(formats)}, the C API has {sorted(scalars)}")
    for code, format in formats.items():
        name, size = field_type_info(code)
        if struct.calcsize(format) != size:
            raise ImportError(f"amber: field type {name} is {size} bytes in the C API, {struct.calcsize(format)} as {format!r}")
    return formats


# Scalar field types as struct-module formats, standard sizes and no padding: offsets
# come from Amber, which lays structs out as the C compiler does.
_FORMATS = checked_formats({
    lib.AMBER_FIELD_INT8: "=b", lib.AMBER_FIELD_INT16: "=h", lib.AMBER_FIELD_INT32: "=i", lib.AMBER_FIELD_INT64: "=q",
    lib.AMBER_FIELD_UINT8: "=B", lib.AMBER_FIELD_UINT16: "=H", lib.AMBER_FIELD_UINT32: "=I",
    lib.AMBER_FIELD_UINT64: "=Q", lib.AMBER_FIELD_FLOAT: "=f", lib.AMBER_FIELD_DOUBLE: "=d", lib.AMBER_FIELD_BOOL: "=?",
})


class StructCodec:
    """Packs and unpacks values of one struct class. Values come back as
    named tuples; a named tuple, a plain tuple in field order or a dict by
    field name all pack."""

    def __init__(self, name: str, size: int, fields: list[tuple[str, int, Optional["StructCodec"], int]]) -> None:
        self.name = name
        self.size = size
        self.fields = fields
        self.type = namedtuple(name, [field[0] for field in fields])  # type: ignore[misc]
        # Lets a struct value say which class it is wherever it goes (predicate arguments too).
        self.type._amber_codec = self
        # Every scalar of the value, nested ones too, read by one struct unpack: the
        # offsets are Amber's, increasing in field order as C lays structs out.
        layout, end = "=", 0
        for offset, format in self._scalars(0):
            layout += f"{offset - end}x{format[1:]}"
            end = offset + struct.calcsize(format)
        self._scalar_reader = struct.Struct(layout).unpack_from
        self._flat = all(nested is None for _name, _kind, nested, _offset in fields)
        # One value's scalars and its trailing padding, for values packed back to back as a C array holds them.
        self._element = struct.Struct(layout + (f"{size - end}x" if size > end else ""))
        self._pack_element = self._element.pack
        self._make = functools.partial(tuple.__new__, self.type)  # no Python-level __new__ per value

    def _scalars(self, base: int) -> list[tuple[int, str]]:
        """(offset, struct format) of every scalar field, nested ones flattened, in field order."""
        found = []
        for _name, kind, nested, offset in self.fields:
            found += nested._scalars(base + offset) if nested is not None else [(base + offset, _FORMATS[kind])]
        return found

    def pack_many(self, values: Sequence[Any], types: Optional[set] = None) -> bytes:
        """The values packed back to back (a C array of the struct), exactly as
        `pack` packs each, with the same errors. Tuples and lists of a flat
        struct are packed by one struct call each, at C speed; anything else
        (dicts, nested structs, a value that does not pack) goes through
        `pack`. `types`: the set of the values' types, if the caller has it."""
        kinds = types if types is not None else set(map(type, values))
        if self._flat and all(issubclass(kind, (tuple, list)) for kind in kinds):
            try:
                return b"".join(itertools.starmap(self._pack_element, values))
            except struct.error:
                pass  # a value with too few or too many fields, or one out of range: pack names it
        return b"".join(map(self.pack, values))

    def pack(self, value: Any) -> bytes:
        buffer = bytearray(self.size)
        self._pack_into(value, buffer, 0)
        return bytes(buffer)

    def _pack_into(self, value: Any, buffer: bytearray, base: int) -> None:
        if isinstance(value, dict):
            unknown = set(value) - {field[0] for field in self.fields}
            if unknown:
                raise TypeError(f"{self.name}: no field {sorted(unknown)[0]!r}")
            try:
                items = [value[field[0]] for field in self.fields]
            except KeyError as missing:
                raise TypeError(f"{self.name}: field {missing.args[0]!r} is missing") from None
        elif isinstance(value, (tuple, list)):
            if len(value) != len(self.fields):
                raise TypeError(f"{self.name}: expected {len(self.fields)} fields, given {len(value)}")
            items = list(value)
        else:
            raise TypeError(f"{self.name}: expected a {self.name} named tuple, a tuple or a dict, given {type(value).__name__}")
        for (name, kind, nested, offset), item in zip(self.fields, items):
            if nested is not None:
                nested._pack_into(item, buffer, base + offset)
                continue
            try:
                struct.pack_into(_FORMATS[kind], buffer, base + offset, item)
            except struct.error as error:
                raise TypeError(f"{self.name}.{name}: {error}") from None

    def unpack(self, data: Any, base: int = 0) -> Any:
        """The value whose bytes start at `base` in `data`."""
        scalars = self._scalar_reader(data, base)
        return self._make(scalars) if self._flat else self._assemble(iter(scalars))

    def unpack_many(self, data: Any, starts: Iterable[int]) -> list:
        """The values whose bytes start at each of `starts` in `data`."""
        if self._flat:
            return list(map(self._make, map(self._scalar_reader, itertools.repeat(data), starts)))
        return [self.unpack(data, start) for start in starts]

    def unpack_array(self, data: Any) -> list:
        """The values of a C array of the struct: `data` holds them back to back."""
        if self._flat and self._element.size == self.size:
            return list(map(self._make, self._element.iter_unpack(data)))
        return self.unpack_many(data, range(0, len(data), self.size))

    def _assemble(self, scalars: Iterator[Any]) -> Any:
        return self._make([next(scalars) if nested is None else nested._assemble(scalars)
                           for _name, _kind, nested, _offset in self.fields])


def struct_codec(name: str, describe: Callable[..., int], handle: Any, cache: dict) -> Optional[StructCodec]:
    """The codec of struct class `name`, from `describe` (amber_model_struct_layout
    or amber_registry_struct_layout) on `handle`; None if it is not a struct class."""
    if name in cache:
        return cache[name]
    size, alignment, count = ffi.new("size_t *"), ffi.new("size_t *"), ffi.new("size_t *")
    encoded = name.encode()
    if describe(size, alignment, ffi.NULL, count, 0, handle, encoded) not in (0, lib.AMBER_E_BUFFER_TOO_SMALL):
        cache[name] = None
        return None
    infos = ffi.new("amber_field_info[]", count[0])
    check(describe(size, alignment, infos, count, count[0], handle, encoded))
    fields = []
    for info in infos:
        nested = None
        if info.type == lib.AMBER_FIELD_STRUCT:
            nested = struct_codec(ffi.string(info.struct_name).decode(), describe, handle, cache)
        fields.append((ffi.string(info.name).decode(), info.type, nested, info.offset))
    codec = StructCodec(name, size[0], fields)
    cache[name] = codec
    return codec


# Plist-like values travel as JSON text in the form the C API documents
# (amber.h, AMBER_VALUE_PLIST): a number with a fraction or an exponent is a
# float, one without an int; one-key objects stand for what JSON lacks.
_RESERVED = frozenset({"$date", "$binary", "$uuid", "$float", "$dictionary"})


def _plist_tree(value: Any, depth: int = 0) -> Any:
    """`value` as a tree json.dumps writes exactly, or a ValueClassError
    saying what in it cannot be stored as it is."""
    if depth > 64:
        raise value_error("an array or dictionary nested deeper than 64 levels")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return _int64(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise value_error(f"{value} inside an array or dictionary: JSON, which carries them, holds no NaN or infinity")
        return value
    if isinstance(value, list):
        return [_plist_tree(item, depth + 1) for item in value]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise value_error(f"the dictionary key {key!r} is a {type(key).__name__}: keys must be str")
        tree = {key: _plist_tree(item, depth + 1) for key, item in value.items()}
        # A dictionary that looks like one of the one-key forms is wrapped, so it reads back as a dictionary.
        return {"$dictionary": tree} if len(tree) == 1 and next(iter(tree)) in _RESERVED else tree
    if isinstance(value, datetime):
        _timestamp(value)  # refuses what a date cannot hold, as a date attribute does
        return {"$date": value.astimezone(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$binary": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value).upper()}
    if isinstance(value, tuple):
        raise value_error("a tuple inside an array or dictionary would read back as a list: pass a list")
    raise value_error(f"a {type(value).__name__} value is not plist-like (None, bool, int, float, str, bytes, "
                      "datetime, UUID, and lists and str-keyed dicts of these)")


def _plist_value(tree: Any) -> Any:
    """The Python value of a plist's JSON tree, read top-down so that only a
    one-key form is read as the value it stands for."""
    if isinstance(tree, list):
        return [_plist_value(item) for item in tree]
    if not isinstance(tree, dict):
        return tree
    if len(tree) == 1:
        (key, inner), = tree.items()
        if key == "$date":
            return _parse_date(inner)
        if key == "$binary":
            return base64.b64decode(inner)
        if key == "$uuid":
            return uuid.UUID(inner)
        if key == "$float":
            return float(inner)
        if key == "$dictionary":
            return {name: _plist_value(item) for name, item in inner.items()}
    return {name: _plist_value(item) for name, item in tree.items()}


def _parse_date(text: str) -> datetime:
    """A `$date` text (ISO 8601 in UTC, any number of fractional digits) as an
    aware datetime, rounded to the microsecond a datetime holds."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    date = datetime.fromisoformat(whole).replace(tzinfo=timezone.utc)
    if not fraction:
        return date
    micro = int((Decimal("0." + fraction) * 1_000_000).to_integral_value())  # half to even, as datetime rounds
    return date + timedelta(microseconds=micro)


def _int64(value: int) -> int:
    if not -(1 << 63) <= value < (1 << 63):
        raise value_error(f"the integer {value} does not fit in 64 bits")
    return value


_SINCE_2001 = 978307200.0  # seconds from 1970 to 2001-01-01, where Amber's dates count from


def kept_seconds(seconds: float) -> float:
    """What a date of `seconds` since 1970 reads back as: Amber keeps a date
    as seconds since 2001, and these two steps round as its own do."""
    return (seconds - _SINCE_2001) + _SINCE_2001


def _timestamp(value: datetime) -> float:
    """The seconds since 1970 of aware datetime `value`, if a date holds them
    exactly (to the microsecond); a ValueClassError if not."""
    if value.tzinfo is None:
        raise value_error("datetime values must be timezone-aware (for example datetime.now(timezone.utc))")
    seconds = value.timestamp()
    try:
        exact = datetime.fromtimestamp(kept_seconds(seconds), timezone.utc) == value
    except (OverflowError, ValueError, OSError):  # rounded up into the year 10000
        exact = False
    if not exact:
        raise value_error(f"{value.isoformat()} cannot be held exactly: a date is a double count of seconds, "
                          "which keeps microseconds only within about 270 years of 1970")
    return seconds


def _set_text(target: Any, kind: int, text: str, keep: list) -> None:
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise value_error(f"the string is not valid Unicode ({error.reason} at index {error.start})") from None
    buffer = ffi.new("char[]", encoded)
    keep.append(buffer)
    target.type = kind
    target.v.text.data = buffer
    target.v.text.length = len(encoded)


def to_c(value: Any, target: Any, keep: list, attribute_type: int = 0, value_class: Optional[str] = None,
         codec: Optional[StructCodec] = None) -> None:
    """Fills amber_value `target` from a Python value. Buffers it points to are
    appended to `keep`, which the caller holds until the C call returns.
    `attribute_type`, `value_class` and `codec` say what the receiving side
    expects, so that a str can be a URI and a tuple a struct. A value that
    cannot be handed over exactly raises ValueClassError (callers add the place)."""
    if value is None:
        target.type = lib.AMBER_VALUE_NULL
    elif value is True or value is False:
        target.type = lib.AMBER_VALUE_BOOL
        target.v.boolean = 1 if value else 0
    elif isinstance(value, int):
        target.type = lib.AMBER_VALUE_INT
        target.v.integer = _int64(value)
    elif isinstance(value, float):
        target.type = lib.AMBER_VALUE_DOUBLE
        target.v.real = value
    elif isinstance(value, str):
        uri = attribute_type == lib.AMBER_TYPE_URI or value_class == "URI"
        _set_text(target, lib.AMBER_VALUE_URI if uri else lib.AMBER_VALUE_STRING, value, keep)
    elif isinstance(value, tuple) and hasattr(type(value), "_amber_codec"):
        own = type(value)._amber_codec
        _set_custom(target, own.name, _packed(own, value), keep)
    elif codec is not None and isinstance(value, (tuple, list, dict)):
        _set_custom(target, codec.name, _packed(codec, value), keep)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if value_class and value_class not in ("Binary", "PropertyList"):
            _set_custom(target, value_class, data, keep)  # an opaque class's bytes
        else:
            buffer = ffi.from_buffer(data)
            keep.append((data, buffer))
            target.type = lib.AMBER_VALUE_BINARY
            target.v.bytes.data = buffer
            target.v.bytes.length = len(data)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise value_error(f"{value} cannot be stored as a Decimal")
        _set_text(target, lib.AMBER_VALUE_DECIMAL, str(value), keep)
    elif isinstance(value, datetime):
        target.type = lib.AMBER_VALUE_DATE
        target.v.date = _timestamp(value)
    elif isinstance(value, uuid.UUID):
        target.type = lib.AMBER_VALUE_UUID
        ffi.memmove(target.v.uuid, value.bytes, 16)
    elif isinstance(value, (list, dict)):
        _set_text(target, lib.AMBER_VALUE_PLIST, json.dumps(_plist_tree(value), allow_nan=False), keep)
    elif isinstance(value, tuple):
        raise value_error("a tuple is stored only as a struct class's value; for an array pass a list")
    else:
        raise value_error(f"cannot store a {type(value).__name__} value in Amber")


def _packed(codec: StructCodec, value: Any) -> bytes:
    try:
        return codec.pack(value)
    except (TypeError, ValueError, OverflowError, struct.error) as error:
        raise value_error(str(error)) from None


def _set_custom(target: Any, class_name: str, data: bytes, keep: list) -> None:
    name = ffi.new("char[]", class_name.encode())
    buffer = ffi.from_buffer(data)
    keep.extend((name, data, buffer))
    target.type = lib.AMBER_VALUE_CUSTOM
    target.v.custom.class_name = name
    target.v.custom.data = buffer
    target.v.custom.length = len(data)


def from_c(value: Any, codec_for: Callable[[str], Optional[StructCodec]]) -> Any:
    """A Python value from amber_value `value` (copied; the caller releases the C side)."""
    kind = value.type
    if kind == lib.AMBER_VALUE_STRING:
        return ffi.unpack(value.v.text.data, value.v.text.length).decode("utf-8")
    if kind == lib.AMBER_VALUE_INT:
        return value.v.integer
    if kind == lib.AMBER_VALUE_DOUBLE:
        return value.v.real
    if kind == lib.AMBER_VALUE_NULL:
        return None
    if kind == lib.AMBER_VALUE_DATE:
        return datetime.fromtimestamp(value.v.date, timezone.utc)
    if kind == lib.AMBER_VALUE_BOOL:
        return bool(value.v.boolean)
    if kind == lib.AMBER_VALUE_FLOAT:
        return float(value.v.real32)
    if kind == lib.AMBER_VALUE_BINARY:
        # An empty value's pointer may be NULL (amber_object_get allocates nothing for it).
        return ffi.unpack(ffi.cast("char *", value.v.bytes.data), value.v.bytes.length) if value.v.bytes.length else b""
    if kind == lib.AMBER_VALUE_DECIMAL:
        return Decimal(ffi.unpack(value.v.text.data, value.v.text.length).decode())
    if kind == lib.AMBER_VALUE_UUID:
        return uuid.UUID(bytes=bytes(ffi.buffer(value.v.uuid, 16)))
    if kind in (lib.AMBER_VALUE_URI, lib.AMBER_VALUE_OBJECT_ID):
        return ffi.unpack(value.v.text.data, value.v.text.length).decode("utf-8")
    if kind == lib.AMBER_VALUE_CUSTOM:
        data = ffi.unpack(ffi.cast("char *", value.v.custom.data), value.v.custom.length) if value.v.custom.length else b""
        codec = codec_for(ffi.string(value.v.custom.class_name).decode())
        return codec.unpack(data) if codec is not None and len(data) == codec.size else data
    if kind == lib.AMBER_VALUE_PLIST:
        return _plist_loads(ffi.unpack(value.v.text.data, value.v.text.length))
    raise TypeError(f"unknown amber value type {kind}")


class RowPacker:
    """Packs rows of Python values straight into an amber_value array laid out
    by cffi (sizes and offsets read from the header's types), for the batch
    insert: one bytearray for the values, one for the bytes they point to,
    no cdata object per value. Values the fast path does not cover (plist,
    URIs, bytes for opaque classes…) go through to_c."""

    def __init__(self) -> None:
        self.size = ffi.sizeof("amber_value")
        self.union = ffi.offsetof("amber_value", "v")
        # type, then the union as it holds a double / an int64 / pointer+length / class, pointer, length.
        self.real = struct.Struct(f"=i{self.union - 4}xd")
        self.integer = struct.Struct(f"=i{self.union - 4}xq")
        self.pointer = struct.Struct(f"=i{self.union - 4}xQQ")
        self.custom = struct.Struct(f"=i{self.union - 4}xQQQ")

    def pack(self, rows: list, kinds: list, codecs: list, places: Sequence[str],
             slow: Callable[[Any, Any, int], None]) -> tuple[Any, list]:
        """An amber_value array for `rows` (each a sequence, one value per
        attribute), and the buffers to keep alive while C reads it. A value
        that cannot be handed over raises a ValueClassError naming its
        attribute's place (`places`, one per attribute) and row."""
        count = len(rows) * len(kinds)
        values = bytearray(self.size * max(count, 1))
        arena = bytearray()
        fixups = []  # (value offset, field offset, arena offset): pointers into the arena, set once it stops growing
        names: dict[str, int] = {}
        slow_cases = []
        offset = 0
        real, integer = self.real.pack_into, self.integer.pack_into
        try:
            for row in rows:
                for value, kind, codec in zip(row, kinds, codecs):
                    if value is None:
                        pass  # zero bytes: AMBER_VALUE_NULL
                    elif value is True or value is False:
                        integer(values, offset, lib.AMBER_VALUE_BOOL, 1 if value else 0)
                    elif isinstance(value, str) and kind != lib.AMBER_TYPE_URI:
                        encoded = value.encode("utf-8")
                        fixups.append((offset, len(arena), len(encoded), None))
                        arena += encoded
                    elif isinstance(value, float):
                        real(values, offset, lib.AMBER_VALUE_DOUBLE, value)
                    elif isinstance(value, int):
                        integer(values, offset, lib.AMBER_VALUE_INT, value)
                    elif isinstance(value, datetime) and value.tzinfo is not None:
                        real(values, offset, lib.AMBER_VALUE_DATE, _timestamp(value))
                    elif codec is not None and isinstance(value, (tuple, list, dict)):
                        packed = codec.pack(value)
                        if codec.name not in names:
                            names[codec.name] = len(arena)
                            arena += codec.name.encode() + b"\0"
                        fixups.append((offset, len(arena), len(packed), names[codec.name]))
                        arena += packed
                    else:
                        slow_cases.append((offset, value, len(slow_cases)))
                    offset += self.size
        except (TypeError, ValueError, OverflowError, struct.error) as error:
            raise self._placed(error, offset, places, len(rows)) from None
        keep_arena = bytes(arena)
        base = int(ffi.cast("uintptr_t", ffi.from_buffer(keep_arena))) if keep_arena else 0
        for at, start, length, name in fixups:
            if name is None:
                self.pointer.pack_into(values, at, lib.AMBER_VALUE_STRING, base + start, length)
            else:
                self.custom.pack_into(values, at, lib.AMBER_VALUE_CUSTOM, base + name, base + start, length)
        array = ffi.from_buffer("amber_value[]", values)
        keep: list = [keep_arena, values]
        for at, value, _ in slow_cases:
            try:
                slow(value, array[at // self.size], at // self.size)
            except (TypeError, ValueError, OverflowError, struct.error) as error:
                raise self._placed(error, at, places, len(rows)) from None
        return array, keep

    def _placed(self, error: BaseException, offset: int, places: Sequence[str], rows: int) -> BaseException:
        """`error`, raised for the value at byte `offset` of the array, naming its attribute (and row, of several)."""
        index = offset // self.size
        row = f" (row {index // len(places)})" if rows > 1 else ""
        return placed(error, places[index % len(places)] + row)


def _plist_loads(text: bytes) -> Any:
    return _plist_value(json.loads(text.decode("utf-8")))


def _decoded(chunks: list) -> list:
    return list(map(bytes.decode, chunks))  # UTF-8, strict


class BatchReader:
    """Reads the values of a batch (amber_context_fetch_batch) column by column,
    straight from the bytes of its array: each field of a column (types,
    numbers, pointers, lengths) is one strided slice of a memoryview, and the
    bytes strings, blobs and struct values point to come from one copy of
    the part of the batch's arena they span. No cdata object per value; each
    column's values are made per value type, as from_c makes them."""

    # Each field read from the values array: its path in amber_value and its memoryview format,
    # a native one whose size is the C type's (int32_t, int64_t, double, float, pointer, size_t).
    FIELDS = {
        "type": (("type",), "i"), "boolean": (("v", "boolean"), "i"), "integer": (("v", "integer"), "q"),
        "real": (("v", "real"), "d"), "real32": (("v", "real32"), "f"), "date": (("v", "date"), "d"),
        "text": (("v", "text", "data"), "P"), "text_length": (("v", "text", "length"), "N"),
        "bytes": (("v", "bytes", "data"), "P"), "bytes_length": (("v", "bytes", "length"), "N"),
        "class_name": (("v", "custom", "class_name"), "P"), "custom": (("v", "custom", "data"), "P"),
        "custom_length": (("v", "custom", "length"), "N"),
    }
    # Value types carried as text, and what each becomes.
    TEXT: dict[int, Callable[[list], list]] = {
        lib.AMBER_VALUE_STRING: _decoded, lib.AMBER_VALUE_URI: _decoded, lib.AMBER_VALUE_OBJECT_ID: _decoded,
        lib.AMBER_VALUE_DECIMAL: lambda chunks: list(map(Decimal, _decoded(chunks))),
        lib.AMBER_VALUE_PLIST: lambda chunks: list(map(_plist_loads, chunks)),
    }

    def __init__(self) -> None:
        self.size = ffi.sizeof("amber_value")
        self.uuid = ffi.offsetof("amber_value", "v", "uuid")
        self.fields: dict[str, tuple[str, int, int]] = {}  # name -> (format, its index in a value's elements, elements per value)
        for name, (path, format) in self.FIELDS.items():
            offset, item = ffi.offsetof("amber_value", *path), struct.calcsize(format)
            c_type = ffi.typeof("amber_value")
            for step in path:
                c_type = dict(c_type.fields)[step].type
            if item != ffi.sizeof(c_type) or offset % item or self.size % item:
                raise ImportError(f"amber: amber_value.{'.'.join(path)} ({ffi.sizeof(c_type)} bytes at offset {offset} of "
                                  f"{self.size}) cannot be read as memoryview format {format!r}")
            self.fields[name] = (format, offset // item, self.size // item)

    def columns(self, values: Any, count: int, width: int, codec_for: Callable[[str], Optional[StructCodec]]) -> list[list]:
        """The `width` columns, `count` Python values each, of a batch's values
        array (`count` rows of `width` values). Everything is copied: the batch
        may be freed once this returns."""
        raw = memoryview(ffi.buffer(values, count * width * self.size))
        views: dict[str, memoryview] = {}
        result = []
        for column in range(width):
            def field(name: str, column: int = column) -> list:
                format, index, per_value = self.fields[name]
                view = views.get(format)
                if view is None:
                    view = views[format] = raw.cast(format)
                return view[column * per_value + index::width * per_value].tolist()

            def uuids(rows: Optional[list], column: int = column) -> list:
                starts = [(row * width + column) * self.size + self.uuid for row in (range(count) if rows is None else rows)]
                return [uuid.UUID(bytes=raw[start:start + 16].tobytes()) for start in starts]

            types = field("type")
            kinds = set(types)
            if len(kinds) == 1:  # the usual case: one type all down the column
                result.append(self._convert(kinds.pop(), field, None, count, uuids, codec_for))
                continue
            mixed: list = [None] * count
            for kind in kinds - {lib.AMBER_VALUE_NULL}:
                rows = [row for row, found in enumerate(types) if found == kind]
                for row, value in zip(rows, self._convert(kind, field, rows, len(rows), uuids, codec_for)):
                    mixed[row] = value
            result.append(mixed)
        return result

    def _convert(self, kind: int, field: Callable[[str], list], rows: Optional[list], count: int,
                 uuids: Callable[[Optional[list]], list], codec_for: Callable[[str], Optional[StructCodec]]) -> list:
        """The Python values of the `count` values of type `kind` in a column's
        `rows` (None: the whole column is of that type)."""
        def pick(name: str) -> list:
            found = field(name)
            return found if rows is None else [found[row] for row in rows]

        if kind == lib.AMBER_VALUE_INT:
            return pick("integer")
        if kind == lib.AMBER_VALUE_DOUBLE:
            return pick("real")
        if kind == lib.AMBER_VALUE_DATE:
            return list(map(datetime.fromtimestamp, pick("date"), itertools.repeat(timezone.utc)))
        if kind == lib.AMBER_VALUE_NULL:
            return [None] * count
        if kind == lib.AMBER_VALUE_FLOAT:
            return pick("real32")
        if kind == lib.AMBER_VALUE_BOOL:
            return list(map(bool, pick("boolean")))
        if kind in self.TEXT:
            lengths = pick("text_length")
            arena, starts, _ = _arena(pick("text"), lengths)
            return self.TEXT[kind](_slices(arena, starts, lengths))
        if kind == lib.AMBER_VALUE_BINARY:
            lengths = pick("bytes_length")
            arena, starts, _ = _arena(pick("bytes"), lengths)
            return _slices(arena, starts, lengths)
        if kind == lib.AMBER_VALUE_UUID:
            return uuids(rows)
        if kind == lib.AMBER_VALUE_CUSTOM:
            lengths = pick("custom_length")
            arena, starts, names = _arena(pick("custom"), lengths, pick("class_name"))
            return _custom_values(arena, starts, lengths, names, codec_for)
        raise TypeError(f"unknown amber value type {kind}")


def _arena(pointers: list, lengths: list, names: Sequence[int] = ()) -> tuple[bytes, list, list]:
    """One copy of the bytes that values point to, with each value's start in
    it and each class name's. The batch keeps them all in one arena ("the batch
    makes two buffers in all": the values and the arena), so the span from the
    lowest start to the highest end is memory of the batch."""
    lows = list(itertools.compress(pointers, lengths)) + list(names)
    if not lows:  # every value empty: nothing to read, whatever the pointers are
        return b"", [0] * len(pointers), []
    low = min(lows)
    high = max(map(operator.add, itertools.compress(pointers, lengths), itertools.compress(lengths, lengths)), default=low)
    if names:  # a class name ends at its NUL: the last one's length tells how far the span goes
        last = max(names)
        high = max(high, last + len(ffi.string(ffi.cast("char *", last))) + 1)
    arena = ffi.buffer(ffi.cast("char *", low), high - low)[:]
    return arena, list(map(operator.sub, pointers, itertools.repeat(low))), list(map(operator.sub, names, itertools.repeat(low)))


def _slices(arena: bytes, starts: list, lengths: list) -> list:
    return [arena[start:start + length] for start, length in zip(starts, lengths)]


def _class_name(arena: bytes, start: int) -> str:
    return arena[start:arena.index(0, start)].decode()


def _custom_values(arena: bytes, starts: list, lengths: list, names: list,
                   codec_for: Callable[[str], Optional[StructCodec]]) -> list:
    """Struct values as named tuples, other classes' values as bytes, as from_c makes them."""
    first = _class_name(arena, names[0])
    codec = codec_for(first)
    # The usual case, one struct class all down the column (its attribute's): one unpack per value.
    if codec is not None and lengths.count(codec.size) == len(lengths) and all(
            map(arena.startswith, itertools.repeat(first.encode() + b"\0"), names)):
        return codec.unpack_many(arena, starts)
    values = []
    for start, length, name in zip(starts, lengths, names):
        codec = codec_for(_class_name(arena, name))
        values.append(codec.unpack(arena, start) if codec is not None and length == codec.size else arena[start:start + length])
    return values
