"""Python values <-> amber_value, and struct classes <-> named tuples."""
from __future__ import annotations

import base64
import ctypes
import json
import struct
import uuid
from collections import namedtuple
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Callable, Optional

from ._ffi import ffi, lib
from .errors import check


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

    def unpack(self, data: bytes, base: int = 0) -> Any:
        values = []
        for _name, kind, nested, offset in self.fields:
            if nested is not None:
                values.append(nested.unpack(data, base + offset))
            else:
                values.append(struct.unpack_from(_FORMATS[kind], data, base + offset)[0])
        return self.type(*values)


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


# Plist-like values travel as JSON text, with one-key objects for what JSON lacks.
def _plist_default(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError("datetime values must be timezone-aware")
        return {"$date": value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$binary": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value).upper()}
    raise TypeError(f"{type(value).__name__} is not plist-like")


def _plist_hook(item: dict) -> Any:
    if len(item) == 1:
        (key, value), = item.items()
        if key == "$date" and isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        if key == "$binary" and isinstance(value, str):
            return base64.b64decode(value)
        if key == "$uuid" and isinstance(value, str):
            return uuid.UUID(value)
    return item


def _set_text(target: Any, kind: int, text: str, keep: list) -> None:
    encoded = text.encode("utf-8")
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
    expects, so that a str can be a URI and a tuple a struct."""
    if value is None:
        target.type = lib.AMBER_VALUE_NULL
    elif value is True or value is False:
        target.type = lib.AMBER_VALUE_BOOL
        target.v.boolean = 1 if value else 0
    elif isinstance(value, int):
        target.type = lib.AMBER_VALUE_INT
        target.v.integer = value
    elif isinstance(value, float):
        target.type = lib.AMBER_VALUE_DOUBLE
        target.v.real = value
    elif isinstance(value, str):
        uri = attribute_type == lib.AMBER_TYPE_URI or value_class == "URI"
        _set_text(target, lib.AMBER_VALUE_URI if uri else lib.AMBER_VALUE_STRING, value, keep)
    elif isinstance(value, tuple) and hasattr(type(value), "_amber_codec"):
        own = type(value)._amber_codec
        _set_custom(target, own.name, own.pack(value), keep)
    elif codec is not None and isinstance(value, (tuple, list, dict)):
        packed = codec.pack(value)
        _set_custom(target, codec.name, packed, keep)
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
            raise ValueError(f"{value} cannot be stored as a Decimal")
        _set_text(target, lib.AMBER_VALUE_DECIMAL, str(value), keep)
    elif isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError("datetime values must be timezone-aware (for example datetime.now(timezone.utc))")
        target.type = lib.AMBER_VALUE_DATE
        target.v.date = value.timestamp()
    elif isinstance(value, uuid.UUID):
        target.type = lib.AMBER_VALUE_UUID
        ffi.memmove(target.v.uuid, value.bytes, 16)
    elif isinstance(value, (list, dict, tuple)):
        _set_text(target, lib.AMBER_VALUE_PLIST, json.dumps(value, default=_plist_default), keep)
    else:
        raise TypeError(f"cannot store a {type(value).__name__} value in Amber")


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
        return ffi.unpack(ffi.cast("char *", value.v.bytes.data), value.v.bytes.length)
    if kind == lib.AMBER_VALUE_DECIMAL:
        return Decimal(ffi.unpack(value.v.text.data, value.v.text.length).decode())
    if kind == lib.AMBER_VALUE_UUID:
        return uuid.UUID(bytes=bytes(ffi.buffer(value.v.uuid, 16)))
    if kind in (lib.AMBER_VALUE_URI, lib.AMBER_VALUE_OBJECT_ID):
        return ffi.unpack(value.v.text.data, value.v.text.length).decode("utf-8")
    if kind == lib.AMBER_VALUE_CUSTOM:
        data = ffi.unpack(ffi.cast("char *", value.v.custom.data), value.v.custom.length)
        codec = codec_for(ffi.string(value.v.custom.class_name).decode())
        return codec.unpack(data) if codec is not None and len(data) == codec.size else data
    if kind == lib.AMBER_VALUE_PLIST:
        return json.loads(ffi.unpack(value.v.text.data, value.v.text.length).decode("utf-8"), object_hook=_plist_hook)
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

    def pack(self, rows: list, kinds: list, codecs: list, slow: Callable[[Any, Any, int], None]) -> tuple[Any, list]:
        """An amber_value array for `rows` (each a sequence, one value per
        attribute), and the buffers to keep alive while C reads it."""
        count = len(rows) * len(kinds)
        values = bytearray(self.size * max(count, 1))
        arena = bytearray()
        fixups = []  # (value offset, field offset, arena offset): pointers into the arena, set once it stops growing
        names: dict[str, int] = {}
        slow_cases = []
        offset = 0
        real, integer = self.real.pack_into, self.integer.pack_into
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
                    real(values, offset, lib.AMBER_VALUE_DATE, value.timestamp())
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
            slow(value, array[at // self.size], at // self.size)
        return array, keep


class ColumnReader:
    """Reads library-filled amber_value arrays column by column, straight from
    their bytes (layout from cffi): one struct unpack per value instead of a
    cdata object per field. Each column knows its attribute's type, so
    strings, numbers, dates and struct values take a direct path; anything
    else falls back to from_c."""

    def __init__(self) -> None:
        size = ffi.sizeof("amber_value")
        pad = ffi.offsetof("amber_value", "v") - 4
        self.size = size
        self.pointer = struct.Struct(f"=i{pad}xQQ").unpack_from
        self.real = struct.Struct(f"=i{pad}xd").unpack_from
        self.integer = struct.Struct(f"=i{pad}xq").unpack_from
        self.custom = struct.Struct(f"=i{pad}xQQQ").unpack_from

    def column(self, attribute_type: int, codec: Optional[StructCodec], fallback: Callable[[int], Any]) -> Callable[[Any, int], Any]:
        """A function (raw bytes, value index) -> Python value for one attribute."""
        size, string_at, utc = self.size, ctypes.string_at, timezone.utc
        if attribute_type in (lib.AMBER_TYPE_STRING,):
            read = self.pointer

            def text(raw: Any, index: int) -> Any:
                kind, data, length = read(raw, index * size)
                if kind == lib.AMBER_VALUE_STRING:
                    return string_at(data, length).decode("utf-8")
                return None if kind == lib.AMBER_VALUE_NULL else fallback(index)
            return text
        if attribute_type == lib.AMBER_TYPE_DOUBLE:
            read = self.real

            def real(raw: Any, index: int) -> Any:
                kind, value = read(raw, index * size)
                return value if kind == lib.AMBER_VALUE_DOUBLE else (None if kind == lib.AMBER_VALUE_NULL else fallback(index))
            return real
        if attribute_type in (lib.AMBER_TYPE_INTEGER16, lib.AMBER_TYPE_INTEGER32, lib.AMBER_TYPE_INTEGER64):
            read = self.integer

            def integer(raw: Any, index: int) -> Any:
                kind, value = read(raw, index * size)
                return value if kind == lib.AMBER_VALUE_INT else (None if kind == lib.AMBER_VALUE_NULL else fallback(index))
            return integer
        if attribute_type == lib.AMBER_TYPE_DATE:
            read, moment = self.real, datetime.fromtimestamp

            def date(raw: Any, index: int) -> Any:
                kind, value = read(raw, index * size)
                return moment(value, utc) if kind == lib.AMBER_VALUE_DATE else (None if kind == lib.AMBER_VALUE_NULL else fallback(index))
            return date
        if codec is not None:
            read, unpack, expected = self.custom, codec.unpack, codec.size

            def custom(raw: Any, index: int) -> Any:
                kind, _name, data, length = read(raw, index * size)
                if kind == lib.AMBER_VALUE_CUSTOM and length == expected:
                    return unpack(string_at(data, length))
                return None if kind == lib.AMBER_VALUE_NULL else fallback(index)
            return custom
        return lambda raw, index: fallback(index)
