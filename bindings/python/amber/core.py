"""Registries, models, stores, contexts and objects: a thin Pythonic layer
over the C API. Everything here forwards to amber.h; nothing is decided in
Python that the C API does not decide."""
from __future__ import annotations

import builtins
import collections
import collections.abc
import contextlib
import enum
import functools
import itertools
import json
import math
import operator
import os
import re
import threading
import weakref
from typing import Any, Callable, Iterable, Iterator, Mapping, NoReturn, Optional, Sequence, Union, overload

from . import _batch, _history
from ._ffi import ffi, lib
from ._columns import ColumnFiller
from ._history import HistoryTransaction
from ._values import FIELD_TYPES, BatchReader, RowPacker, StructCodec, _slices, from_c, struct_codec, to_c
from .errors import (Error, IndexOutOfRangeError, MisuseError, ModelError, NotFoundError, ReservedNameError, UnknownNameError, argument_error,
                     callback_frame, check, checked_arguments, checks_arguments, keep_callback_exception, last_error, placed)

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


class MergePolicy(enum.IntEnum):
    """What a save does with a conflict: an object whose row another context
    or process changed or deleted since this context read it. The policies
    other than ERROR decide per key (attribute or to-one) against the row as
    it is inside the save's transaction; a key only one side changed keeps
    that side's value under each, and to-many members added or removed on
    both sides are all kept. After the save the object holds what was saved."""

    ERROR = lib.AMBER_MERGE_ERROR
    """The save raises ValidationError listing every conflict with the stored and
    the local values; nothing is written (the default)."""
    STORE_WINS = lib.AMBER_MERGE_STORE_WINS
    """Per key, the stored value wins; a deletion, on either side, wins."""
    OBJECT_WINS = lib.AMBER_MERGE_OBJECT_WINS
    """Per key, the value set here wins; this context's deletions are carried out,
    and a row deleted in the store is written again from the object."""
    OVERWRITE = lib.AMBER_MERGE_OVERWRITE
    """Every key is written as this context has it; deletions as OBJECT_WINS."""


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


class _PythonTransformer:
    def __init__(self, codec: Callable[[str], Optional[StructCodec]], name: str, input_class: str,
                 output_class: str, forward: Callable[[Any], Any], reverse: Optional[Callable[[Any], Any]]) -> None:
        # The registry's codec lookup, not the registry: _kept_for_library holds transformers
        # until the library lets them go, and must not keep their registry alive meanwhile.
        self.codec = codec
        self.name = name
        self.input_class = input_class
        self.output_class = output_class
        self.forward = forward
        self.reverse = reverse
        self.results: dict[int, list] = {}  # output address -> buffers kept until release

    def call(self, function: Callable[[Any], Any], output: Any, input: Any, result_class: str) -> int:
        try:
            value = from_c(input, self.codec)
            result = function(value)
            keep: list = []
            to_c(result, output, keep, value_class=result_class, codec=self.codec(result_class))
            self.results[int(ffi.cast("uintptr_t", output))] = keep
            return 0
        except BaseException as error:  # never let a Python exception cross into C
            _transformer_failed(error)
            return -1


class _PythonFunction:
    """A Python callable registered as a compute function, with the results it
    handed to C kept until C releases them."""

    def __init__(self, codec: Callable[[str], Optional[StructCodec]], function: Callable[..., Any],
                 result_class: Optional[str]) -> None:
        self.codec = codec
        self.function = function
        self.result_class = result_class
        self.results: dict[int, list] = {}

    def call(self, output: Any, inputs: Any, count: int) -> int:
        try:
            result = self.function(*[from_c(inputs + i, self.codec) for i in range(count)])
            keep: list = []
            to_c(result, output, keep, value_class=self.result_class,
                 codec=self.codec(self.result_class) if self.result_class else None)
            self.results[int(ffi.cast("uintptr_t", output))] = keep
            return 0
        except BaseException as error:  # never let a Python exception cross into C
            _transformer_failed(error)
            return -1


def _transformer_failed(error: BaseException) -> None:
    """Reports `error` as the failure of the running transformer or function
    call, and keeps it for the failing C call's check(): Ctrl-C and SystemExit
    come back out as themselves, other exceptions as the error's cause."""
    lib.amber_transformer_error(f"{type(error).__name__}: {error}".encode("utf-8", "replace"))
    keep_callback_exception(error)


def _escaped(_type: Any, error: BaseException, _traceback: Any) -> None:
    # An exception raised in a trampoline before its try (a Ctrl-C that lands there): fail the call, as inside.
    _transformer_failed(error)


@ffi.callback("int32_t(amber_value *, const amber_value *, size_t, void *)", error=-1, onerror=_escaped)
def _compute_trampoline(output: Any, inputs: Any, count: int, userdata: Any) -> int:
    return ffi.from_handle(userdata).call(output, inputs, count)


@ffi.callback("int32_t(amber_value *, const amber_value *, void *)", error=-1, onerror=_escaped)
def _forward_trampoline(output: Any, input: Any, userdata: Any) -> int:
    transformer = ffi.from_handle(userdata)
    return transformer.call(transformer.forward, output, input, transformer.output_class)


@ffi.callback("int32_t(amber_value *, const amber_value *, void *)", error=-1, onerror=_escaped)
def _reverse_trampoline(output: Any, input: Any, userdata: Any) -> int:
    transformer = ffi.from_handle(userdata)
    return transformer.call(transformer.reverse, output, input, transformer.input_class)


@ffi.callback("void(amber_value *, void *)")
def _release_trampoline(output: Any, userdata: Any) -> None:
    ffi.from_handle(userdata).results.pop(int(ffi.cast("uintptr_t", output)), None)


@ffi.callback("void(void *)")
def _free_trampoline(userdata: Any) -> None:
    _kept_for_library.pop(int(ffi.cast("uintptr_t", userdata)), None)


# ---------------------------------------------------------------------------
# Observers and live queries: a static trampoline each; what a callback
# raises is kept and raised by the check() after the C call that ran it.
# ---------------------------------------------------------------------------

class Change(collections.namedtuple("Change", "object keys")):
    """An object of a change report with the keys (attribute and relationship names) that changed."""

    object: "Object"
    keys: tuple[str, ...]


class ChangeReport(collections.namedtuple("ChangeReport", "event inserted updated deleted refreshed")):
    """What a save, merge or refresh changed, or what is pending (event
    "saved", "merged", "refreshed" or "pending"): inserted objects, updated
    ones with their changed keys, deleted ones (a saved deletion has left the
    context; its uri still names it) and refreshed ones (which took values
    other contexts saved) with their changed keys."""

    event: str
    inserted: list["Object"]
    updated: list[Change]
    deleted: list["Object"]
    refreshed: list[Change]


_EVENTS = {lib.AMBER_EVENT_SAVED: "saved", lib.AMBER_EVENT_MERGED: "merged", lib.AMBER_EVENT_REFRESHED: "refreshed",
           lib.AMBER_EVENT_PENDING: "pending"}


def _read_report(context: "Context", changes: Any) -> ChangeReport:
    event, count = _out("int32_t *"), _out("size_t *")
    check(lib.amber_changes_event(event, changes))
    lists: list[list] = []
    for kind in (lib.AMBER_CHANGES_INSERTED, lib.AMBER_CHANGES_UPDATED, lib.AMBER_CHANGES_DELETED, lib.AMBER_CHANGES_REFRESHED):
        check(lib.amber_changes_count(count, changes, kind))
        items: list = []
        for index in range(count[0]):
            handle = _out("amber_object **")
            check(lib.amber_changes_object(handle, changes, kind, index))
            obj = context._known(handle[0])
            if kind in (lib.AMBER_CHANGES_UPDATED, lib.AMBER_CHANGES_REFRESHED):
                obj._forget_values()  # a merge or a settled conflict changed them since Python cached them
                keys, key_count = _out("const char *const **"), _out("size_t *")
                check(lib.amber_changes_keys(keys, key_count, changes, kind, index))
                items.append(Change(obj, tuple(ffi.string(keys[0][k]).decode() for k in range(key_count[0]))))
            else:
                items.append(obj)
        lists.append(items)
    return ChangeReport(_EVENTS[event[0]], *lists)


class _Callback:
    """What the library's userdata reaches: weakly, the object that owns a
    callable (a context's observer, a live query's on_change) and its key in
    the owner's _callbacks. The callable lives on its owner, so a callable
    that refers to the owner makes a cycle Python can collect, not one held
    from the library."""

    def __init__(self, owner: Any, key: Any = None) -> None:
        self.owner = weakref.ref(owner)
        self.key = key

    def run(self, body: Callable[[Any, Callable], None]) -> int:
        owner = self.owner()
        function = owner._callbacks.get(self.key) if owner is not None else None
        if function is None:
            return 0
        return 0 if callback_frame(lambda: body(owner, function)) else -1


@ffi.callback("int32_t(amber_changes *, void *)")
def _observer_trampoline(changes: Any, userdata: Any) -> int:
    return ffi.from_handle(userdata).run(lambda context, function: function(_read_report(context, changes)))


class IndexChange(collections.namedtuple("IndexChange", "kind old new")):
    """One change to a live query's results: `kind` is "section_delete",
    "section_insert", "delete", "insert", "move" or "update"; `old` and `new`
    are (section, row) positions in the old and new results (row -1 for a
    section), or None where they do not apply. Apply them to a copy of the
    old results as LiveQuery documents."""

    kind: str
    old: Optional[tuple[int, int]]
    new: Optional[tuple[int, int]]


_INDEX_KINDS = {lib.AMBER_INDEX_SECTION_DELETE: "section_delete", lib.AMBER_INDEX_SECTION_INSERT: "section_insert",
                lib.AMBER_INDEX_DELETE: "delete", lib.AMBER_INDEX_INSERT: "insert", lib.AMBER_INDEX_MOVE: "move",
                lib.AMBER_INDEX_UPDATE: "update"}


@ffi.callback("int32_t(amber_live_query *, const amber_index_change *, size_t, void *)")
def _live_query_trampoline(query: Any, changes: Any, count: int, userdata: Any) -> int:
    def position(section: int, row: int) -> Optional[tuple[int, int]]:
        return None if section < 0 else (section, row)

    listed = [IndexChange(_INDEX_KINDS[c.kind], position(c.old_section, c.old_row), position(c.new_section, c.new_row))
              for c in (changes[i] for i in range(count))]

    def report(live: "LiveQuery", function: Callable) -> None:
        # Objects that joined, moved or changed may hold values Python cached before a merge.
        for change in listed:
            if change.kind in ("insert", "move", "update"):
                out = _out("amber_object **")
                check(lib.amber_live_query_object(out, query, change.new[0], change.new[1]))
                live.context._known(out[0])._forget_values()
        function(listed)
    return ffi.from_handle(userdata).run(report)


class _CodecLookup:
    """The struct codecs a registry's Python transformers and functions
    convert with: a class the registry declares, or one a model bound with
    the registry declares (a model file's "valueClasses"), so struct values
    reach Python as named tuples however they were declared, and still after
    Registry.close(). Transformers hold this, not the registry: the library
    keeps them until it lets them go, and they must not keep the registry alive."""

    def __init__(self, handle: Any) -> None:
        self.handle: Any = handle  # None once the registry is closed
        self.found: dict[str, Optional[StructCodec]] = {}
        self.from_registry: dict[str, Optional[StructCodec]] = {}
        self.models: "weakref.WeakSet[Model]" = weakref.WeakSet()

    def __call__(self, class_name: str) -> Optional[StructCodec]:
        if class_name in self.found:
            return self.found[class_name]
        codec = None
        if self.handle is not None:
            codec = struct_codec(class_name, lib.amber_registry_struct_layout, self.handle, self.from_registry)
        for model in list(self.models):
            if codec is not None:
                break
            if model._owns:  # a model closed since holds no layouts
                codec = model._codec(class_name)
        self.found[class_name] = codec
        return codec

    def add(self, model: "Model") -> None:
        """A model bound with the registry: its classes count, so forget what was not found before."""
        self.models.add(model)
        self.found = {name: codec for name, codec in self.found.items() if codec is not None}

    def close(self) -> None:
        self.handle = None


@checks_arguments
class Registry(_Owner):
    """Value classes and transformers that models can name.

    `Registry()` makes a new one (with the built-in transformers
    AmberArchive, JSON and UTF8), freed by close() or when it goes away;
    `shared_registry()` is the process-wide one models bind against by default."""

    _free = staticmethod(lib.amber_registry_free)

    def __init__(self, _handle: Any = None) -> None:
        if _handle is None:
            out = _out("amber_registry **")
            check(lib.amber_registry_new(out))
            self._own(out[0])
        else:
            self._handle = _handle  # the shared registry: lives for the process, never freed
        self._codec = _CodecLookup(self._handle)
        self._plugins: set[str] = set()

    def declare_struct(self, name: str, fields: Sequence[tuple[str, str]]) -> None:
        """Declares a struct class: `fields` are (name, type) pairs, the type a C
        scalar ("int8" … "uint64", "float", "double", "bool") or an earlier struct class."""
        keep = []
        array = ffi.new("amber_field[]", len(fields))
        for item, (field_name, type_name) in zip(array, fields):
            encoded = ffi.new("char[]", _name(field_name, "a field name"))
            keep.append(encoded)
            item.name = encoded
            item.type = FIELD_TYPES.get(type_name, lib.AMBER_FIELD_STRUCT)
            if item.type == lib.AMBER_FIELD_STRUCT:
                nested = ffi.new("char[]", _name(type_name, "a field type"))
                keep.append(nested)
                item.struct_name = nested
        check(lib.amber_registry_declare_struct(self._handle, _name(name, "the struct name"), array, len(fields)))

    def declare_opaque(self, name: str, size: int = 0) -> None:
        """Declares an opaque class; with `size`, every value has exactly that many bytes."""
        check(lib.amber_registry_declare_opaque(self._handle, _name(name, "the class name"), size))

    def struct_type(self, name: str) -> Any:
        """The named tuple type of struct class `name` (build values with it)."""
        codec = self._codec(name)
        if codec is None:
            raise NotFoundError(lib.AMBER_E_NOT_FOUND, f"{name}: no such struct class", name)
        return codec.type

    def register_transformer(self, name: str, input_class: str, output_class: str,
                             forward: Callable[[Any], Any], reverse: Optional[Callable[[Any], Any]] = None, *,
                             replace: bool = False) -> None:
        """Registers a transformer written in Python. Values arrive and leave as
        Python values of the declared classes (struct classes as named tuples).
        An exception it raises fails the read or save with its text; it is
        never stored; KeyboardInterrupt and SystemExit abort the save or read
        with nothing written and come out as themselves.

        A name already registered raises ModelError, unless `replace` is true
        (a notebook cell run again): models bound from then on use the new
        transformer, models bound before keep theirs. Built-in transformers
        cannot be replaced."""
        transformer = _PythonTransformer(self._codec, name, input_class, output_class, forward, reverse)
        handle = _keep_until_freed(transformer)
        register = lib.amber_registry_replace_transformer if replace else lib.amber_registry_register_transformer
        check(register(
            self._handle, _name(name, "the transformer name"), _name(input_class, "the input class"),
            _name(output_class, "the output class"), _forward_trampoline,
            _reverse_trampoline if reverse is not None else ffi.NULL, _release_trampoline, handle, _free_trampoline))

    def register_function(self, name: str, function: Callable[..., Any], result_class: Optional[str] = None) -> None:
        """Registers `function` as `name`, for computed attributes to name
        (`"computed": {"function": name, "from": [...]}` in the model): it
        is called with one Python value per source attribute, in order, and
        returns the attribute's value (a struct class's value as a tuple or
        dict when `result_class` names the class). The result is checked
        against the attribute; an exception fails the read with its text."""
        handle = _keep_until_freed(_PythonFunction(self._codec, function, result_class))
        check(lib.amber_registry_register_function(self._handle, _name(name, "the function name"), _compute_trampoline, _release_trampoline,
                                                   handle, _free_trampoline))

    def function(self, name: str, result_class: Optional[str] = None) -> Callable[[Any], Any]:
        """A decorator registering the function it decorates as `name` (see register_function).

            @registry.function("publishMonth")
            def publish_month(published):
                return published.strftime("%B %Y") if published else None
        """
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.register_function(name, function, result_class)
            return function
        return register

    @overload
    def transformer(self, name: str) -> "Transformer": ...

    @overload
    def transformer(self, name: str, input: str, output: str, *, replace: bool = False) -> Callable[[Any], Any]: ...

    def transformer(self, name: str, input: Optional[str] = None, output: Optional[str] = None, *,
                    replace: bool = False) -> Any:
        """With only a name: a `Transformer` for calling the registered
        transformer `name` (a plugin's, a Python one, or a built-in) directly,
        outside any store. NotFoundError suggests the nearest name.

            color_to_data = registry.transformer("ColorToData")
            stored = color_to_data.forward((1.0, 0.5, 0.25, 1.0))

        With `input` and `output` classes: a class decorator that registers an
        instance of the class, whose `forward` and (optional) `reverse`
        methods convert values; `replace=True` replaces a transformer of that
        name (see register_transformer).

            @registry.transformer("Celsius", input="Double", output="Double")
            class Celsius:
                def forward(self, fahrenheit): return (fahrenheit - 32) * 5 / 9
                def reverse(self, celsius): return celsius * 9 / 5 + 32
        """
        if input is None and output is None:
            return Transformer(self, name)
        if input is None or output is None:
            raise argument_error(f"transformer({name!r}): registering a transformer needs both input and output classes")

        def register(cls: Any) -> Any:
            instance = cls()
            self.register_transformer(name, input, output, instance.forward, getattr(instance, "reverse", None),
                                      replace=replace)
            return cls
        return register

    def load_plugin(self, path: Union[str, os.PathLike], configuration: Optional[str] = None) -> None:
        """Loads a plugin (a shared library exporting amber_plugin_entry). A refused
        plugin raises PluginError with the loader's reason; nothing of it stays.
        A file this registry already loaded is not loaded again."""
        real = os.path.realpath(path)
        if real in self._plugins:
            return
        check(lib.amber_registry_load_plugin(self._handle, os.fsencode(path), _text(configuration)))
        self._plugins.add(real)

    def close(self) -> None:
        """Releases the registry handle. Models bound with it keep working,
        their Python transformers included; the shared registry is never
        released."""
        if self._owns:
            self._codec.close()
        self._release()

    def __del__(self) -> None:
        lookup = getattr(self, "_codec", None)
        if self._owns and lookup is not None:  # transformers may outlive the registry: stop asking its handle
            lookup.close()
        super().__del__()


class _PerThread(threading.local):
    """One length out-parameter per thread, shared by every Transformer. cffi
    releases the GIL during C calls, so one per handle would race between
    threads calling the same handle; one per thread cannot, and costs an
    attribute read instead of an ffi.new per call. Nested calls on one thread
    (a Python transformer calling another from inside) are safe too: the
    library writes the length only once the call has returned."""

    def __init__(self) -> None:
        self.length = ffi.new("size_t *")


_per_thread = _PerThread()
_uncleared = ffi.new_allocator(should_clear_after_alloc=False)  # output buffers are written before they are read
_from_buffer = ffi.from_buffer
_forward_bytes = lib.amber_transformer_forward_bytes
_reverse_bytes = lib.amber_transformer_reverse_bytes
# Classes whose values are not bytes (the byte path refuses them); any other class without a
# struct layout is Binary or an opaque class, whose values are bytes.
_NOT_BYTES = frozenset(("Null", "Boolean", "Integer", "Double", "Float", "String", "Date", "Decimal", "UUID", "URI",
                        "ObjectID", "Array", "Dictionary", "PropertyList"))
_MANY_CHUNK = 1024  # values per call when results have no fixed size: each gets the room forward_bytes would give it


def _variable_capacity(input_length: int) -> int:
    """The output buffer *_bytes make when the class has no fixed size and no
    `out` is given: four times the input plus 4 KiB."""
    return 4 * input_length + 4096


class Transformer(_Owner):
    """A registered transformer, called directly outside any store (from
    `Registry.transformer(name)`), with the checks a store applies on every
    call: the input's class (and size) and the result's. Any thread may call
    it. The handle is freed by close() or when the Transformer goes away; the
    transformer stays usable meanwhile even if its registry is closed."""

    _free = staticmethod(lib.amber_transformer_free)

    def __init__(self, registry: Registry, name: str) -> None:
        out = _out("amber_transformer **")
        check(lib.amber_registry_transformer(out, registry._handle, _name(name, "the transformer name")))
        self._own(out[0])
        self._name = name
        input_class, output_class = _out("char **"), _out("char **")
        input_size, output_size = _out("size_t *"), _out("size_t *")
        check(lib.amber_transformer_classes(input_class, input_size, output_class, output_size, self._handle))
        self._input_class = ffi.string(input_class[0]).decode()
        self._output_class = ffi.string(output_class[0]).decode()
        self._input_size: int = input_size[0]
        self._output_size: int = output_size[0]
        # Struct layouts now, while the registry is surely open: the handle may outlive it.
        self._input_codec = registry._codec(self._input_class)
        self._output_codec = registry._codec(self._output_class)
        self._codecs = {self._input_class: self._input_codec, self._output_class: self._output_codec}.get

    @property
    def name(self) -> str:
        return self._name

    @property
    def input_class(self) -> str:
        """The class forward takes and reverse returns ("Color", "Binary", "String", …)."""
        return self._input_class

    @property
    def output_class(self) -> str:
        """The class forward returns and reverse takes."""
        return self._output_class

    @property
    def input_size(self) -> Optional[int]:
        """The byte size of every input class value (a struct, a fixed-size opaque class); None if it has none."""
        return self._input_size or None

    @property
    def output_size(self) -> Optional[int]:
        """The byte size of every output class value; None if it has none."""
        return self._output_size or None

    def _value(self, function: Callable[..., int], value: Any, value_class: str, codec: Optional[StructCodec]) -> Any:
        keep: list = []
        given = ffi.new("amber_value *")
        to_c(value, given, keep, value_class=value_class, codec=codec)
        result = ffi.new("amber_value *")
        check(function(result, self._handle, given))
        try:
            return from_c(result, self._codecs)
        finally:
            lib.amber_value_release(result)

    def forward(self, value: Any) -> Any:
        """`value`, of the input class, converted forward. Values come and go as
        Object attributes do: struct classes as named tuples (a tuple or dict
        in field order packs too), Binary as bytes, String as str, ….
        TransformerError for a value of another class or a failing transformer."""
        return self._value(lib.amber_transformer_forward, value, self._input_class, self._input_codec)

    def reverse(self, value: Any) -> Any:
        """`value`, of the output class, converted back; TransformerError for a one-way transformer."""
        return self._value(lib.amber_transformer_reverse, value, self._output_class, self._output_codec)

    # The byte path is the fast one, so its two directions are spelled out rather than
    # sharing a helper (a Python call more per conversion), with module-level aliases.
    def forward_bytes(self, data: Any, out: Any = None) -> Union[bytes, int]:
        """The byte path, for transformers between byte forms (struct and opaque
        classes, Binary): converts the bytes of `data` (any bytes-like object;
        for a struct class, the C struct's bytes) forward, with no value built.

        Without `out`, returns the result as bytes, from a buffer of
        `output_size` bytes, or, for a class with no fixed size, of four times
        the input's length plus 4 KiB. With `out` (a writable buffer: a
        bytearray, a memoryview, …), writes the result at its start and
        returns the number of bytes written: reuse one `out` to convert many
        values without allocating. TransformerError for an input of the wrong
        size, an `out` too small for the result, or a failing transformer;
        BufferError for an `out` that is not writable."""
        length = _per_thread.length
        source = data if type(data) is bytes else _from_buffer(data)  # cffi passes bytes as they are
        if out is None:
            capacity = self._output_size or _variable_capacity(len(source))
            target = _uncleared("char[]", capacity)
            if _forward_bytes(length, self._handle, source, len(source), target, capacity):
                raise last_error()
            return ffi.unpack(target, length[0])
        target = _from_buffer(out, require_writable=True)
        if _forward_bytes(length, self._handle, source, len(source), target, len(target)):
            raise last_error()
        return length[0]

    def reverse_bytes(self, data: Any, out: Any = None) -> Union[bytes, int]:
        """forward_bytes in the other direction (without `out`, the buffer has
        `input_size` bytes when the input class has a fixed size)."""
        length = _per_thread.length
        source = data if type(data) is bytes else _from_buffer(data)
        if out is None:
            capacity = self._input_size or _variable_capacity(len(source))
            target = _uncleared("char[]", capacity)
            if _reverse_bytes(length, self._handle, source, len(source), target, capacity):
                raise last_error()
            return ffi.unpack(target, length[0])
        target = _from_buffer(out, require_writable=True)
        if _reverse_bytes(length, self._handle, source, len(source), target, len(target)):
            raise last_error()
        return length[0]

    def forward_many(self, values: Iterable[Any]) -> list:
        """`forward` for many values: `[forward(value) for value in values]`,
        with the same results and checks, at far less cost per value. Values
        of a struct, opaque or Binary class go through the byte path in one C
        call (struct values packed by one struct call each, results unpacked
        at C speed); None stays None; values of other classes, or of types
        the byte path cannot take exactly, go value by value. An error is the
        one `forward` raises for the first value that fails, its message
        starting with "element i: "."""
        return self._many(values, reverse=False)

    def reverse_many(self, values: Iterable[Any]) -> list:
        """`reverse` for many values, as forward_many does forward."""
        return self._many(values, reverse=True)

    def _many(self, values: Iterable[Any], reverse: bool) -> list:
        values = values if isinstance(values, list) else list(values)
        if not values:
            return []
        types = set(map(type, values))
        if type(None) in types:  # nil stays nil without a call, as in forward
            present = list(map(operator.is_not, values, itertools.repeat(None)))
            converted = iter(self._many(list(itertools.compress(values, present)), reverse))
            return [next(converted) if kept else None for kept in present]
        if reverse:
            given, given_codec, made, made_codec, made_size = (
                self._output_class, self._output_codec, self._input_class, self._input_codec, self._input_size)
        else:
            given, given_codec, made, made_codec, made_size = (
                self._input_class, self._input_codec, self._output_class, self._output_codec, self._output_size)
        one = self.reverse if reverse else self.forward
        if made_codec is None and made in _NOT_BYTES:
            return self._each(one, values)
        packed = None
        try:
            if given_codec is not None and all(map(_columns._struct_like, types, itertools.repeat(given_codec))):
                packed = (given_codec.pack_many(values, types), given_codec.size, None)
            elif types == {bytes} and given not in _NOT_BYTES:  # Binary, opaque, or a struct's own bytes
                packed = (b"".join(values), 0, list(map(len, values)))
        except (TypeError, ValueError, OverflowError):
            packed = None  # a value that does not pack: forward raises for it, naming its element
        if packed is None:
            return self._each(one, values)
        data, stride, lengths = packed
        results = self._many_bytes(reverse, data, stride, lengths, len(values), made_codec, made_size)
        return results if results is not None else self._each(one, values)

    def _many_bytes(self, reverse: bool, data: bytes, stride: int, lengths: Optional[list], count: int,
                    codec: Optional[StructCodec], size: int) -> Optional[list]:
        """The byte path for `count` values in `data` (each `stride` bytes, or
        of `lengths`), as Python values of the result class; None if the
        library refused (the caller then goes value by value, which raises
        for the first value that fails, naming it)."""
        function = lib.amber_transformer_reverse_bytes_array if reverse else lib.amber_transformer_forward_bytes_array
        source = ffi.from_buffer(data)
        if size:  # results of a fixed size: one call, into slots of that size
            output = _uncleared("char[]", size * count)
            given = ffi.new("size_t[]", lengths) if lengths is not None else ffi.NULL
            if function(ffi.NULL, self._handle, count, source, len(data), stride, given, output, size * count, size):
                return None
            arena = ffi.buffer(output)[:]
            if codec is not None:
                return codec.unpack_array(arena)
            return _slices(arena, range(0, size * count, size), [size] * count)
        # Results of any size: packed, in chunks, each value with the room forward_bytes would give it.
        results: list = []
        offset = 0
        for first in range(0, count, _MANY_CHUNK):
            chunk = min(_MANY_CHUNK, count - first)
            if lengths is not None:
                sizes = lengths[first:first + chunk]
                taken = sum(sizes)
                room, given = 4 * taken + 4096 * chunk, ffi.new("size_t[]", sizes)  # _variable_capacity of each
            else:
                taken = stride * chunk
                room, given = chunk * _variable_capacity(stride), ffi.NULL
            output, written = _uncleared("char[]", room), ffi.new("size_t[]", chunk)
            if function(written, self._handle, chunk, source + offset, taken, stride, given, output, room, 0):
                return None
            offset += taken
            made = ffi.unpack(written, chunk)
            ends = list(itertools.accumulate(made))
            arena = ffi.buffer(output, ends[-1])[:]
            results += map(arena.__getitem__, map(slice, [0] + ends[:-1], ends))  # bytes: a struct class has a size
        return results

    @staticmethod
    def _each(function: Callable[[Any], Any], values: list) -> list:
        """`function` on each value; an error names the element it failed on."""
        results = []
        for index, value in enumerate(values):
            try:
                results.append(function(value))
            except Error as error:  # every value a conversion refuses is an amber.Error
                raise type(error)(error.code, f"element {index}: {error.message}", error.origin) from None
        return results

    def close(self) -> None:
        """Releases the handle; later calls raise MisuseError."""
        self._release()

    def __enter__(self) -> "Transformer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<amber.Transformer {self._name}: {self._input_class} -> {self._output_class}>"


_shared: Optional[Registry] = None
_shared_lock = threading.Lock()


_SAMPLE_PLUGINS = {"color": "Color", "rect": "Rect", "deflate": "Deflate", "aesgcm": "AESGCM"}
# Where `pip install` puts the sample plugins.
_BUNDLED_PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")


def sample_plugin(name: str) -> str:
    """The path of one of Amber's sample plugins written in C: "color"
    (ColorToData), "rect" (RectToString), "deflate" (compression) or "aesgcm"
    (encryption): from AMBER_PLUGIN_DIR when it is set and holds it (a folder
    `swift build` filled; it overrides, as AMBER_LIBRARY does), else the copy
    `pip install` bundled. Raises NotFoundError naming where it looked."""
    if name not in _SAMPLE_PLUGINS:
        raise NotFoundError(lib.AMBER_E_NOT_FOUND, f"{name!r}: no such sample plugin; one of {', '.join(_SAMPLE_PLUGINS)}", name)
    file = f"libAmber{_SAMPLE_PLUGINS[name]}Plugin.so"
    places = [os.environ["AMBER_PLUGIN_DIR"]] if os.environ.get("AMBER_PLUGIN_DIR") else []
    places.append(_BUNDLED_PLUGINS)
    for place in places:
        if os.path.exists(os.path.join(place, file)):
            return os.path.join(place, file)
    raise NotFoundError(lib.AMBER_E_NOT_FOUND, f"{file} is neither bundled with the package nor in AMBER_PLUGIN_DIR "
                        f"(looked in {', '.join(places)})", name)


def shared_registry() -> Registry:
    """The process-wide registry models bind against unless told otherwise."""
    global _shared
    with _shared_lock:
        if _shared is None:
            out = _out("amber_registry **")
            check(lib.amber_registry_shared(out))
            _shared = Registry(out[0])
        return _shared


class Attribute:
    """An attribute of an entity, resolved once."""

    __slots__ = ("handle", "name", "type", "value_class", "derivation", "computation", "codec")

    def __init__(self, handle: Any, model: "Model") -> None:
        self.handle = handle
        name, kind, value_class, derivation = _out("char **"), _out("int32_t *"), _out("char **"), _out("char **")
        check(lib.amber_attribute_name(name, handle))
        check(lib.amber_attribute_type(kind, handle))
        check(lib.amber_attribute_value_class(value_class, handle))
        check(lib.amber_attribute_derivation(derivation, handle))
        self.name: str = ffi.string(name[0]).decode()
        self.type: int = kind[0]
        self.value_class: Optional[str] = ffi.string(value_class[0]).decode() if value_class[0] != ffi.NULL else None
        #: A derived attribute's expression ("canonical:(title)", "books.@count"), computed at save; None otherwise.
        self.derivation: Optional[str] = ffi.string(derivation[0]).decode() if derivation[0] != ffi.NULL else None
        function, sources, count = _out("char **"), _out("const char *const **"), _out("size_t *")
        check(lib.amber_attribute_computation(function, sources, count, handle))
        #: A computed attribute's (function, [source names]); None otherwise.
        self.computation: Optional[tuple[str, list[str]]] = None if function[0] == ffi.NULL else (
            _str(function[0]), [_str(sources[0][i]) for i in range(count[0])])
        self.codec = model._codec(self.value_class)


class Relationship:
    """A relationship of an entity, resolved once: where it points and how."""

    __slots__ = ("handle", "name", "destination", "inverse", "to_many", "ordered", "required", "delete_rule",
                 "min_count", "max_count")

    _RULES = {lib.AMBER_DELETE_NULLIFY: "nullify", lib.AMBER_DELETE_CASCADE: "cascade", lib.AMBER_DELETE_DENY: "deny",
              lib.AMBER_DELETE_NO_ACTION: "noAction"}

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        spec = ffi.new("amber_relationship_spec *", {"size": ffi.sizeof("amber_relationship_spec"), "min_count": -1,
                                                      "max_count": -1})
        check(lib.amber_relationship_describe(spec, handle))
        self.name: str = ffi.string(spec.name).decode()
        self.destination: str = ffi.string(spec.destination).decode()
        self.inverse: Optional[str] = ffi.string(spec.inverse).decode() if spec.inverse != ffi.NULL else None
        self.to_many = bool(spec.flags & lib.AMBER_RELATIONSHIP_TO_MANY)
        self.ordered = bool(spec.flags & lib.AMBER_RELATIONSHIP_ORDERED)
        self.required = bool(spec.flags & lib.AMBER_RELATIONSHIP_REQUIRED)
        self.delete_rule: str = self._RULES[spec.delete_rule]
        self.min_count: Optional[int] = spec.min_count if spec.min_count >= 0 else None
        self.max_count: Optional[int] = spec.max_count if spec.max_count >= 0 else None

    def __repr__(self) -> str:
        kind = ("ordered to-many" if self.ordered else "to-many") if self.to_many else "to-one"
        return f"<amber.Relationship {self.name}: {kind} {self.destination}, inverse {self.inverse}, {self.delete_rule}>"


class Entity:
    """An entity of a bound model: its handle, its attributes and its relationships by name."""

    def __init__(self, handle: Any, model: "Model") -> None:
        self.handle = handle
        name, count, parent = _out("char **"), _out("size_t *"), _out("amber_entity **")
        check(lib.amber_entity_name(name, handle))
        self.name: str = ffi.string(name[0]).decode()
        check(lib.amber_entity_parent(parent, handle))
        #: The name of the entity this one inherits from, if any.
        self.parent: Optional[str] = None
        if parent[0] != ffi.NULL:
            check(lib.amber_entity_name(name, parent[0]))
            self.parent = ffi.string(name[0]).decode()
        check(lib.amber_entity_subentity_count(count, handle))
        #: Whether other entities inherit from this one (its fetches return their objects too).
        self.has_subentities = count[0] > 0
        flag = _out("int32_t *")
        check(lib.amber_entity_is_extensible(flag, handle))
        #: Whether its objects take extended attributes: names the model does not know,
        #: set and read like attributes (`book["shelf"] = "B2"`), stored with no migration.
        self.extensible = bool(flag[0])
        check(lib.amber_entity_attribute_count(count, handle))
        self.attributes: dict[str, Attribute] = {}
        for index in range(count[0]):
            out = _out("amber_attribute **")
            check(lib.amber_entity_attribute_at(out, handle, index))
            attribute = Attribute(out[0], model)
            self.attributes[attribute.name] = attribute
        self.relationships: dict[str, Relationship] = {}
        check(lib.amber_entity_relationship_count(count, handle))
        for index in range(count[0]):
            out = _out("amber_relationship **")
            check(lib.amber_entity_relationship_at(out, handle, index))
            relationship = Relationship(out[0])
            self.relationships[relationship.name] = relationship
        # Read in one batch at fetch: everything but transformed values, which keep
        # their decode policy (lazy by default: decoded on first access, if ever), and
        # computed ones, computed on first read and cached by the library, never here.
        self.prefetched = [a for a in self.attributes.values()
                           if a.type not in (lib.AMBER_TYPE_TRANSFORMABLE, lib.AMBER_TYPE_UNDEFINED) and a.computation is None]
        self.prefetch_handles = ffi.new("amber_attribute *[]", [a.handle for a in self.prefetched])
        # decode=True reads the transformed values too, after the others: a fetched object
        # keeps the row of values it came with, and either row gives an attribute one position.
        self.everything = self.prefetched + [a for a in self.attributes.values() if a.type == lib.AMBER_TYPE_TRANSFORMABLE]
        self.everything_handles = ffi.new("amber_attribute *[]", [a.handle for a in self.everything])
        # A subclass of Object with a slot per fetched attribute: a fetch fills the
        # slots, and `book.title` reads one in C. An empty slot (not fetched, or
        # cleared by a set or a rollback) ends in __getattr__, which asks the
        # library. Attributes never fetched (transient) get a property that asks.
        # Names that start with "_" or that Object's API uses (uri, keys, …) get neither:
        # they are read and set as items (book["uri"]), so no model can hide the API.
        slotted = [a.name for a in self.everything if _is_plain(a.name)]
        self.object_class = type(self.name, (Object,), {"__slots__": tuple(slotted), "_entity": self, **{
            name: _attribute_property(name) for name in self.attributes
            if _is_plain(name) and name not in slotted}, **{
            name: _relationship_property(name) for name in self.relationships if _is_plain(name)}})
        self.slots: dict[str, Any] = {name: getattr(self.object_class, name) for name in slotted}
        # In `everything` order (so `prefetched` is a prefix): each slot's setter, None for unslotted names.
        self.slot_setters = [self.slots[a.name].__set__ if a.name in self.slots else None for a in self.everything]

    def attribute(self, name: str) -> Attribute:
        try:
            return self.attributes[name]
        except KeyError:
            out = _out("amber_attribute **")
            check(lib.amber_entity_attribute(out, self.handle, name.encode()))  # raises with the nearest name
            raise


def _is_plain(name: str) -> bool:
    """Whether the attribute or relationship `name` reads as a Python attribute
    (`book.title`): not private-looking, not a name of Object's API."""
    return not name.startswith("_") and name not in _OBJECT_API


def _attribute_property(name: str) -> property:
    # Read-only as a descriptor: Object.__setattr__ takes every assignment.
    return property(lambda self: self._get(name), doc=f"The {name} attribute.")


def _relationship_property(name: str) -> property:
    # A to-one reads as its object (or None), a to-many as a live collection; Object.__setattr__ takes assignments.
    return property(lambda self: self._related(name), doc=f"The {name} relationship.")


@checks_arguments
class RelatedObjects(collections.abc.MutableSet):
    """The members of a to-many relationship of one object, live: every
    read asks the context, so it sees pending changes, and `add`, `discard`
    and `remove` change the relationship (the inverse follows at once). An
    ordered relationship iterates in its order and can be indexed."""

    __slots__ = ("_owner", "_relationship")

    def __init__(self, owner: "Object", relationship: Relationship) -> None:
        self._owner = owner
        self._relationship = relationship

    def _members(self) -> list["Object"]:
        objects, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_object_objects(objects, count, self._owner._handle, self._relationship.handle))
        try:
            context = self._owner._context
            return context._adopt(ffi.unpack(objects[0], count[0]), context.model.entity(self._relationship.destination)) \
                if count[0] else []
        finally:
            lib.amber_free(objects[0])

    def __len__(self) -> int:
        """Counted without loading the members, when they are not loaded yet."""
        out = _out("size_t *")
        check(lib.amber_object_count_objects(out, self._owner._handle, self._relationship.handle))
        return out[0]

    def __iter__(self) -> Any:
        return iter(self._members())

    def __contains__(self, item: object) -> bool:
        return any(member is item for member in self._members())

    def __getitem__(self, index: Any) -> Any:
        if not self._relationship.ordered:
            raise argument_error(f"{self._owner._entity.name}.{self._relationship.name} is not ordered; iterate it instead")
        return self._members()[index]

    def add(self, value: "Object") -> None:
        """Makes `value` a member (last, if ordered); nothing if it is one."""
        check(lib.amber_object_add_object(self._owner._handle, self._relationship.handle, _handle_of(value, self)))

    def discard(self, value: "Object") -> None:
        """Removes `value` if it is a member."""
        check(lib.amber_object_remove_object(self._owner._handle, self._relationship.handle, _handle_of(value, self)))

    def __repr__(self) -> str:
        return f"<amber.RelatedObjects {self._owner._entity.name}.{self._relationship.name}: {len(self)} objects>"


def _handle_of(value: Any, place: Any) -> Any:
    if not isinstance(value, Object):
        raise argument_error(f"{place}: expected an amber.Object, given {type(value).__name__}")
    return value._handle


class Template(collections.namedtuple("Template", "name entity predicate sort limit variables")):
    """A fetch request template of a model: the entity it fetches, its
    predicate (with `$VARIABLES`), its sort keys ("title", "-published" for
    descending), its limit (None: none) and its variables' names."""

    __slots__ = ()


@checks_arguments
class Model(_Owner):
    """A model: from a JSON file, JSON text or a dict in the model file format
    (docs/model-json.md). It is bound (every class and transformer checked)
    when a store opens it, so plugins loaded by `amber.open` count. The bound
    model's handle is freed when the Model goes away (stores opened with it
    keep it until then: each holds its Model)."""

    _free = staticmethod(lib.amber_model_free)

    def __init__(self, json_text: str, registry: Optional[Registry] = None) -> None:
        if not isinstance(json_text, str):
            raise argument_error(f"a model's JSON text must be a str, not {type(json_text).__name__}")
        self._json = json_text
        self.registry = registry if registry is not None else shared_registry()
        self._entities: dict[str, Entity] = {}
        self._codecs: dict[str, Optional[StructCodec]] = {}
        self._templates: Optional[dict[str, Template]] = None
        #: What an Xcode import changed or left out, one note per line ("Entity.attribute: ..."); empty for other models.
        self.notes: list[str] = []

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike], registry: Optional[Registry] = None) -> "Model":
        """The model in the JSON file at `path` (read now, bound when first needed)."""
        with builtins.open(path, encoding="utf-8") as file:  # this module's open() opens stores
            try:
                text = file.read()
            except UnicodeDecodeError as error:
                raise ModelError(lib.AMBER_E_INVALID_JSON, f"{os.fspath(path)}: not UTF-8 text ({error})", os.fspath(path)) from None
            return cls(text, registry)

    @classmethod
    def from_json(cls, text: str, registry: Optional[Registry] = None) -> "Model":
        return cls(text, registry)

    @classmethod
    def from_dict(cls, description: dict, registry: Optional[Registry] = None) -> "Model":
        # JSON has no NaN or infinity: name the place in the caller's dict, not in JSON text they never wrote.
        try:
            text = json.dumps(description, allow_nan=False)
        except ValueError as error:
            place = _non_finite_place(description, "$")
            if not place:  # a dict that contains itself
                raise ModelError(lib.AMBER_E_INVALID_JSON, f"the model description cannot be written as JSON: {error}", "$") from None
            raise ModelError(lib.AMBER_E_INVALID_JSON, f"{place}: {_non_finite_value(description, place)} is not a value a model "
                             "can hold (a model file is JSON, which has no NaN or infinity)", place) from None
        return cls(text, registry)

    @classmethod
    def from_xcode(cls, path: Union[str, os.PathLike], version: Optional[str] = None,
                   registry: Optional[Registry] = None) -> "Model":
        """The model of an Xcode data model, imported by the rules of
        docs/xcode-models.md and bound at once: a .xcdatamodeld bundle (its
        current version, or the one named `version`), a .xcdatamodel folder
        or its contents file. What the import changed or left out is in
        `notes`. A store Core Data wrote opens with the model it was made
        with: amber.open("App.sqlite", Model.from_xcode("App.xcdatamodeld"))."""
        target = registry if registry is not None else shared_registry()
        out, notes = _out("amber_model **"), _out("char **")
        check(lib.amber_model_from_xcode(out, notes, os.fsencode(path), ffi.NULL if version is None else _name(version, "a model version"),
                                         target._handle))
        try:
            text = ffi.string(notes[0]).decode()
        finally:
            lib.amber_free(notes[0])
        model = cls._bound(out[0], target)
        model.notes = text.splitlines()
        return model

    @classmethod
    def _bound(cls, handle: Any, registry: Registry) -> "Model":
        model = cls("", registry)
        model._own(handle)
        return model

    def bind(self) -> "Model":
        """Binds the model now (amber.open does it for you); raises ModelError listing every problem."""
        if self._handle is None:
            out = _out("amber_model **")
            encoded = self._json.encode("utf-8")
            check(lib.amber_model_from_json(out, encoded, len(encoded), self.registry._handle))
            self._own(out[0])
            self.registry._codec.add(self)
        return self

    def __repr__(self) -> str:
        try:
            names = [entity["name"] for entity in json.loads(self._json or self.to_json())["entities"]]
        except (Error, ValueError, KeyError, TypeError):  # a malformed description: binding will say why
            return "<amber.Model (malformed)>"
        state = "" if self._handle is not None else ", not bound yet"
        return f"<amber.Model {', '.join(names)}{state}>"

    def entity(self, name: str) -> Entity:
        """The entity named `name`; NotFoundError suggests the nearest name."""
        entity = self._entities.get(name)
        if entity is None:
            self.bind()
            out = _out("amber_entity **")
            check(lib.amber_model_entity(out, self._handle, _name(name, "the entity name")))
            entity = self._entities[name] = Entity(out[0], self)
        return entity

    def _codec(self, class_name: Optional[str]) -> Optional[StructCodec]:
        if not class_name:
            return None
        return struct_codec(class_name, lib.amber_model_struct_layout, self.bind()._handle, self._codecs)

    def struct_type(self, name: str) -> Any:
        """The named tuple type of struct class `name` as this model sees it."""
        codec = self._codec(name)
        if codec is None:
            raise NotFoundError(lib.AMBER_E_NOT_FOUND, f"{name}: no such struct class in the model", name)
        return codec.type

    @property
    def templates(self) -> dict[str, "Template"]:
        """The model's fetch request templates by name (run one with
        Context.fetch_template)."""
        return dict(self._template_table())

    def _template_table(self) -> dict[str, "Template"]:
        """The templates by name, read from the library once (not copied: callers must not change it)."""
        if self._templates is not None:
            return self._templates
        handle = self.bind()._handle
        count = _out("size_t *")
        check(lib.amber_model_template_count(count, handle))
        found: dict[str, Template] = {}
        for index in range(count[0]):
            spec = ffi.new("amber_template_spec *", {"size": ffi.sizeof("amber_template_spec")})
            names, many = _out("const char *const **"), _out("size_t *")
            check(lib.amber_model_template_at(spec, names, many, handle, index))
            sort = ["-" + _str(spec.sort[i].key) if spec.sort[i].descending else _str(spec.sort[i].key)
                    for i in range(spec.sort_count)]
            name = _str(spec.name)
            found[name] = Template(name, _str(spec.entity), _str(spec.predicate) if spec.predicate else None, tuple(sort),
                                   spec.limit or None, tuple(_str(names[0][i]) for i in range(many[0])))
        self._templates = found
        return found

    def to_json(self) -> str:
        out, length = _out("char **"), _out("size_t *")
        check(lib.amber_model_to_json(out, length, self.bind()._handle))
        try:
            return ffi.unpack(out[0], length[0]).decode()
        finally:
            lib.amber_free(out[0])


@checked_arguments
def open(url: Optional[Union[str, os.PathLike]], model: Optional[Model] = None, *,
         plugins: Iterable[Union[str, os.PathLike]] = (), plugin_config: Optional[str] = None,
         registry: Optional[Registry] = None, busy_timeout: float = 5.0, migrate: bool = True, backup: bool = True,
         progress: Optional[Callable[[str, int, int], None]] = None, durability: str = "normal",
         history: bool = True, allow_data_removal: bool = False) -> "Store":
    """Opens (creating if needed) the store `url` names with `model`, after
    loading `plugins` into the model's registry. `url` is what every Amber
    language and the CLI take (amber_store_open_url): a path or a "file:"
    URL ("file:///data/books.amber", percent-encoded) for a store file,
    "memory:" (or None) for a new in-memory store, or
    "postgresql://user@host:port/db?schema=NAME" for a store on a PostgreSQL
    server (its tables made in schema NAME, "public" by default, when it has
    none; a server that refuses or cannot be reached raises ServerError with
    its SQLSTATE as `origin`; derived and extended attributes, batch changes
    and migrations raise UnsupportedError there for now). A str with a scheme
    before any "/" is a URL: write a path with a colon there as "./a:b". A
    pathlib.Path or bytes is always a path. Text that names no store (an
    unknown scheme, a file: URL with a host or a query, text after
    "memory:") raises StoreURLError naming the part; nothing is created.

    With no model, opens an existing store at the path `url` with the model
    it carries (a path only: the C API opens an existing store by path; the
    options below other than the plugins do not apply). A store Core Data
    wrote opens, for reading, with the model it keeps of itself; give
    `Model.from_xcode(...)` to open it with the app's model instead.

    `busy_timeout` is how many seconds a save waits for another connection
    (another store on the file, or another process) to finish writing
    before raising BusyError; several processes may create one new store at
    once. A store may be shared by contexts on any threads.

    A store made with another model is migrated to `model` in one transaction
    (`migrate=False` raises ModelError instead): see `migration_plan` for what
    it does. With `backup` (the default) a file is first copied to
    `<path>.<old version hash>.backup`; a PostgreSQL store migrates in one
    transaction under its lock, and the server keeps no copy. `progress(step, completed, total)` is
    called as the migration proceeds; an exception it raises cancels the
    migration. A migration that is refused, cancelled or fails raises
    MigrationError and leaves the store unchanged. A migration that would
    remove stored data (the objects of a dropped entity, the values of a
    dropped attribute, the links of a dropped relationship) is refused,
    listing what and how much, unless `allow_data_removal` is true.

    `durability` is what a save that returned survives: "normal" (the
    default), a crash or kill of the process; "full", power failure too, at
    the cost of syncing the disk at every save. Either way a crash never
    damages the store or leaves a save half written.

    `history` (the default) records each save's changes in the store's
    history (`Store.history`), and contexts of other processes merge exactly
    them; with `history=False` a save records only that it happened
    (`recorded` False, no changes), and other processes' contexts compare
    every object they hold after it."""
    if durability not in _DURABILITY:
        raise argument_error(f"durability is {durability!r}; expected 'normal' or 'full'")
    target = model.registry if model is not None else (registry or shared_registry())
    for plugin in plugins:
        target.load_plugin(plugin, plugin_config)
    out = _out("amber_store **")
    if model is None:
        model_out = _out("amber_model **")
        check(lib.amber_store_open_existing(out, model_out, os.fsencode(url), target._handle))
        return Store(out[0], Model._bound(model_out[0], target), os.fspath(url))
    model.bind()
    if busy_timeout < 0:
        raise argument_error(f"busy_timeout is {busy_timeout}; expected 0 or more seconds")
    handle = ffi.new_handle(progress) if progress is not None else ffi.NULL
    options = ffi.new("amber_store_options *", {"size": ffi.sizeof("amber_store_options"),
                                                "busy_timeout_ms": int(busy_timeout * 1000),
                                                "migrate": int(bool(migrate)), "backup": int(bool(backup)),
                                                "progress": _progress_trampoline if progress is not None else ffi.NULL,
                                                "progress_context": handle, "durability": _DURABILITY[durability],
                                                "history": int(bool(history)),
                                                "allow_data_removal": int(bool(allow_data_removal))})
    if isinstance(url, str):  # a path or a URL, as amber_store_open_url decides
        check(lib.amber_store_open_url(out, os.fsencode(url), model._handle, options))
        return Store(out[0], model, url)
    check(lib.amber_store_open_with_options(out, ffi.NULL if url is None else os.fsencode(url), model._handle, options))
    return Store(out[0], model, None if url is None else os.fspath(url))


_DURABILITY = {"normal": lib.AMBER_DURABILITY_NORMAL, "full": lib.AMBER_DURABILITY_FULL}


@ffi.callback("int32_t(void *, const char *, uint64_t, uint64_t)")
def _progress_trampoline(userdata: Any, step: Any, completed: int, total: int) -> int:
    function = ffi.from_handle(userdata)
    return 0 if callback_frame(lambda: function(ffi.string(step).decode(), completed, total)) else 1


@checked_arguments
def migration_plan(path: Union[str, os.PathLike], model: Model) -> list[str]:
    """What opening the store at `path` (or a "postgresql://" URL) with `model` would do to it, one line
    per change, without changing anything; [] when it already has the
    model's shape. Raises MigrationError naming every change that cannot be
    inferred."""
    return _lines(lambda out, count: lib.amber_store_migration_plan(out, count, os.fsencode(path), model.bind()._handle))


@checked_arguments
def check_file(path: Union[str, os.PathLike]) -> list[str]:
    """Checks the store file at `path` as `Store.check` does, without opening
    it as a store: its model is not bound, so a store whose plugins are
    missing can be checked. Damage is reported in the list; raises StoreError
    only if the file is missing or cannot be opened."""
    return _lines(lambda out, count: lib.amber_store_check_file(out, count, os.fsencode(path)))


@checked_arguments
def import_coredata(source: Union[str, os.PathLike], destination: Union[str, os.PathLike], model: Optional[Model] = None,
                    registry: Optional[Registry] = None) -> int:
    """Copies the store Core Data wrote at `source` into a new Amber store at
    `destination`: every object and link, keys kept, values exactly as they
    read from the source, in one transaction, each entity's count checked.
    The source is only read. `model` is the model it was made with
    (`Model.from_xcode(...)`), or None for the model it keeps of itself,
    bound against `registry`. Returns how many objects were copied. Raises
    DestinationExistsError when something is at `destination`, ModelError
    naming every difference between the source and `model`, StoreError for
    a source that is not a Core Data store; nothing is left at `destination`
    after a failure."""
    target = registry if registry is not None else shared_registry()
    copied = _out("int64_t *")
    check(lib.amber_store_import_coredata(copied, os.fsencode(source), os.fsencode(destination),
                                          model.bind()._handle if model is not None else ffi.NULL, target._handle))
    return int(copied[0])


def _lines(call: Callable[[Any, Any], int]) -> list[str]:
    """The lines of the text a C call returns with their count (migration plans, check reports)."""
    out, count = _out("char **"), _out("size_t *")
    check(call(out, count))
    try:
        text = ffi.string(out[0]).decode()
    finally:
        lib.amber_free(out[0])
    return text.split("\n") if count[0] else []


@checks_arguments
class Store(_Owner):
    """An open store. Close it (or use it as a context manager) when done;
    closing also closes the contexts made from it. A store nothing refers to
    any more (its contexts hold it) is closed when it goes away."""

    _free = staticmethod(lib.amber_store_close)

    def __init__(self, handle: Any, model: Model, path: Optional[Union[str, bytes]] = None) -> None:
        self._own(handle)
        self.model = model
        self.path = path  # what it was opened by: a path, a URL ("memory:", "file:…"); None: in memory
        # Weak: a context holds its store, and one nobody holds must be free to go.
        self._contexts: weakref.WeakSet[Context] = weakref.WeakSet()

    def context(self) -> "Context":
        """A new context on this thread. As a context manager (like sqlite3's
        `with connection:`) it saves on a clean exit and rolls back on an
        exception, then closes."""
        context = Context(self)
        self._contexts.add(context)
        return context

    def check(self) -> list[str]:
        """Checks the store: every page, index and constraint (SQLite's
        integrity check), every link between objects, and Amber's metadata.
        Returns each problem found; [] when the store is sound."""
        return _lines(lambda out, count: lib.amber_store_check(out, count, self._handle))

    def backup(self, path: Union[str, os.PathLike]) -> None:
        """Copies the store, as of its last save, into a new file at `path`
        with SQLite's online backup API; saves go on meanwhile. `path` is
        either left absent or a whole store that opens like this one. Raises
        DestinationExistsError if a file is already at `path` (nothing is
        written)."""
        check(lib.amber_store_backup(self._handle, os.fsencode(path)))

    def vacuum(self) -> None:
        """Rebuilds the store file without the space deleted objects left,
        so it shrinks; objects and their IDs are unchanged."""
        check(lib.amber_store_vacuum(self._handle))

    def checkpoint(self) -> None:
        """Copies every save in the write-ahead log into the store file and
        empties the log, so the file alone holds the store. Raises BusyError
        if another connection was still reading an older state (retrying may
        finish it). Closing the store does this and removes the log."""
        check(lib.amber_store_checkpoint(self._handle))

    # The history (see amber_store_history).

    def history_token(self) -> str:
        """The token of the last transaction in the store's history,
        "UUID/sequence" ("UUID/0" before the first save): `history(after=…)`
        with it reads only what is saved from then on. Keep it between runs
        to read what other processes saved meanwhile."""
        return _history.token(self._handle)

    def history(self, after: Optional[str] = None) -> list[HistoryTransaction]:
        """The transactions saved after the token `after` (None: from the
        start of the history), oldest first, each a HistoryTransaction with
        its token, time, the saving context's names and the objects it
        inserted, updated and deleted. Raises HistoryError for a token of
        another store, one later than the history, or one whose later
        transactions were purged; ValueClassError for text that is not a token."""
        return _history.read(self._handle, after)

    def purge_history(self, through: str) -> None:
        """Deletes the transactions up to and including the token `through`
        from the history. Reading after an earlier token then raises
        HistoryError, and contexts of other processes that had not merged
        them compare their objects instead. Raises HistoryError for a token
        of another store or one later than the history."""
        _history.purge(self._handle, through)

    def close(self, discard: bool = False) -> None:
        """Closes the contexts made from this store that are still open, then
        the store. While one of them holds unsaved changes, raises MisuseError
        naming them and closes nothing, unless `discard` is true: their
        changes are then dropped. Using a context or object of a closed store
        raises MisuseError saying the store was closed."""
        contexts = [context for context in list(self._contexts) if context._owns]
        unsaved = [(context, context._pending_counts()) for context in contexts] if not discard else []
        unsaved = [(context, counts) for context, counts in unsaved if counts != ""]
        if unsaved:
            counts = "; ".join(counts for _, counts in unsaved)
            raise MisuseError(lib.AMBER_E_UNAVAILABLE, f"the store cannot close: {len(unsaved)} of its contexts "
                              f"{'holds' if len(unsaved) == 1 else 'hold'} unsaved changes ({counts}); save or roll them back, "
                              "or close(discard=True) to drop them", "store")
        for context in contexts:
            context._closed_because = ": its store was closed"
            context.close()
        self._release()

    def __repr__(self) -> str:
        where = self.path if self.path is not None else ":memory:"
        return f"<amber.Store {where}{'' if self._owns else ' (closed)'}>"

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        # Leaving on an exception drops what its contexts did not save (as their own `with` does), rather than hide it.
        self.close(discard=kind is not None)


@checks_arguments
class Context(_Owner):
    """A scratchpad over a store, used from the thread that made it. Freed by
    close() or when it goes away (its objects hold it), with every object
    handle it gave out."""

    _free = staticmethod(lib.amber_context_free)
    _closed_because = ""  # why, in the MisuseError of a later use: the store's close says so

    @property
    def _handle(self) -> Any:
        # Every call the context makes passes through here: once closed, it says so, and why.
        if not self._owns:
            raise MisuseError(lib.AMBER_E_INVALID_HANDLE, f"the context is closed{self._closed_because}", "context")
        return self._live_handle

    @_handle.setter
    def _handle(self, handle: Any) -> None:
        self._live_handle = handle

    def _pending_counts(self) -> str:
        """Its unsaved changes counted ("1 inserted, 0 updated, 0 deleted"), "" for none; a context
        of another thread, which cannot be asked, may hold some: it says so."""
        try:
            if not self.has_changes:
                return ""
            return f"{len(self.inserted)} inserted, {len(self.updated)} updated, {len(self.deleted)} deleted"
        except MisuseError:
            return "a context of another thread, whose changes cannot be read from this one"

    def __init__(self, store: Store) -> None:
        if not store._owns:
            raise MisuseError(lib.AMBER_E_INVALID_HANDLE, "the store is closed", "store")
        out = _out("amber_context **")
        check(lib.amber_context_new(out, store._handle))
        self._own(out[0])
        self.store = store
        self.model = store.model
        self._merges_automatically = False
        self._merge_policy = MergePolicy.ERROR
        self._names: tuple[Optional[str], Optional[str]] = (None, None)  # (name, author): C takes both at once
        self._callbacks: dict[int, Callable] = {}  # observers by token
        # Handle (a cdata pointer: it hashes and compares by address) -> a weak reference to
        # its Python object, while something holds that object: one nobody holds goes away,
        # releases its handle, and its reference's callback removes the entry, so a large
        # fetch stays flat. A WeakValueDictionary does the same but makes each entry in
        # Python code, which costs a fetch about as much per object as making the object.
        self._objects: dict[Any, _Ref] = {}
        self._forget = functools.partial(_forget, self._objects)  # the dict, not the context: no cycle

    def _object(self, handle: Any, entity: Entity) -> "Object":
        """The one Python object for a handle (a cdata pointer)."""
        return self._adopt([handle], entity)[0]

    def _adopt(self, handles: Sequence[Any], entity: Entity) -> list["Object"]:
        """The Python objects for `handles` (cdata pointers): the one already made
        for a handle while it lives, else a new one."""
        objects = self._objects
        alive: list[Optional[Object]] = [None] * len(handles)
        if objects:
            alive = [None if ref is None else ref() for ref in map(objects.get, handles)]
        made = self._make([handle for handle, obj in zip(handles, alive) if obj is None], entity)
        if len(made) == len(handles):  # the usual case: none had an object yet
            return made
        fresh = iter(made)
        return [obj if obj is not None else next(fresh) for obj in alive]

    def _make(self, handles: list[Any], entity: Entity) -> list["Object"]:
        """New objects for `handles`, made one slot at a time in C loops: no
        Python-level __init__ or __setattr__ per object."""
        made = list(map(_new_object, itertools.repeat(entity.object_class, len(handles))))
        _each(map(_set_context, made, itertools.repeat(self)))
        _each(map(_set_handle, made, handles))
        _each(map(_set_filled, made, itertools.repeat(False)))
        refs = list(map(_Ref, made, itertools.repeat(self._forget)))
        _each(map(_set_ref_handle, refs, handles))
        self._objects.update(zip(handles, refs))
        return made

    def _object_at(self, handle: Any) -> Optional["Object"]:
        ref = self._objects.get(handle)
        return ref() if ref is not None else None

    def _fill(self, entity: Entity, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[Any, Any, list]:
        attributes = [entity.attribute(name) for name in names]
        handles = ffi.new("amber_attribute *[]", [a.handle for a in attributes])
        slow_keep: list = []

        def slow(value: Any, target: Any, index: int) -> None:
            attribute = attributes[index % len(attributes)]
            to_c(value, target, slow_keep, attribute.type, attribute.value_class, attribute.codec)

        # A str is a URI for URI attributes and for attributes whose value class is URI, as to_c decides.
        kinds = [lib.AMBER_TYPE_URI if a.value_class == "URI" else a.type for a in attributes]
        places = [f"{entity.name}.{a.name}" for a in attributes]
        values, keep = _packer.pack(rows, kinds, [a.codec for a in attributes], places, slow)
        return handles, values, keep + slow_keep

    def insert(self, entity: str, /, **values: Any) -> "Object":
        """Inserts a new object of `entity`, setting `values` by name:
        attributes, relationships (an object or None for a to-one, an
        iterable of objects for a to-many; the inverses follow) and, for an
        extensible entity, extended attributes. All or nothing: relationship
        values are checked before anything is inserted, and set last."""
        target = self.model.entity(entity)
        related = {name: self._related_value(target, name, values.pop(name)) for name in list(values) if name in target.relationships}
        # Extended values, then relationships, are set once the object exists.
        later = {name: values.pop(name) for name in list(values) if name not in target.attributes} if target.extensible else {}
        later.update(related)
        out = ffi.new("amber_object *[1]")
        # With later values, the insert and its sets are one undo group (when undo is on), undone together.
        grouped = bool(later) and lib.amber_context_begin_undo_group(self._handle, ffi.NULL) == lib.AMBER_OK
        try:
            if values:
                handles, array, _keep = self._fill(target, list(values), [list(values.values())])
                check(lib.amber_context_insert_many(out, self._handle, target.handle, handles, len(values), array, 1))
            else:
                check(lib.amber_context_insert(out, self._handle, target.handle))
            obj = self._object(out[0], target)
            try:
                for name, value in later.items():
                    obj._set(name, value)
            except BaseException:
                self.delete(obj)  # a new object deleted before any save leaves the context
                raise
        finally:
            if grouped:
                check(lib.amber_context_end_undo_group(self._handle))
        return obj

    def _related_value(self, entity: Entity, name: str, value: Any) -> Any:
        """`value` for relationship `name` of a new `entity` object, checked as
        setting it would check it (objects of this context, of the destination
        entity or one below it, each once), so that setting it cannot fail
        after the object is made: a to-one's object or None, a to-many's list."""
        relationship = entity.relationships[name]
        place = f"{entity.name}.{name}"

        def checked(member: Any) -> Any:
            if not isinstance(member, Object) or member._context is not self:
                raise argument_error(f"{place}: {member!r} is not an object of this context")
            kind: Optional[Entity] = member._entity
            while kind is not None and kind.name != relationship.destination:
                kind = self.model.entity(kind.parent) if kind.parent else None
            if kind is None:
                raise argument_error(f"{place}: {member!r} is a {member._entity.name}, not a {relationship.destination}")
            state = _out("uint32_t *")
            check(lib.amber_object_state(state, member._handle))
            if state[0] & lib.AMBER_OBJECT_DELETED:
                raise argument_error(f"{place}: {member!r} is deleted")
            return member
        if not relationship.to_many:
            return None if value is None else checked(value)
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise argument_error(f"{place}: a to-many takes an iterable of objects, not {type(value).__name__}")
        members = [checked(member) for member in value]
        if len(set(map(id, members))) != len(members):
            raise argument_error(f"{place}: an object is listed twice")
        return members

    def insert_many(self, entity: str, attributes: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Inserts one object per row (values in `attributes` order) in one call:
        the fast path for bulk loads. All or nothing. Returns the count.

        The rows are sent column by column (see `insert_columns`): a column
        whose values are all of one type (with or without None) is converted
        at C speed, any other value by value, exactly as `insert` converts it."""
        target = self.model.entity(entity)
        rows = rows if isinstance(rows, list) else list(rows)
        if not rows:
            return 0
        width = len(attributes)
        if set(map(len, rows)) != {width}:
            odd = next(row for row in rows if len(row) != width)
            raise argument_error(f"{target.name}: a row has {len(odd)} values for {width} attributes")
        # One pass per column with a C-level getter: zip(*rows) makes an iterator per row,
        # and the garbage collector runs over them (about twice as slow at 100,000 rows).
        columns = [list(map(operator.itemgetter(index), rows)) for index in range(width)]
        self._insert_columns(target, attributes, columns, len(rows))
        return len(rows)

    def insert_columns(self, entity: str, columns: Mapping[str, Sequence[Any]]) -> int:
        """Inserts one object per row of `columns`: attribute name -> that
        attribute's values, one per row, every column of the same length.
        All or nothing. Returns the count.

            ctx.insert_columns("Book", {"title": titles, "price": prices})

        A column whose values are all of one type (bool, int, float, str,
        bytes, datetime, UUID, Decimal, or tuples of the attribute's struct
        class), with or without None, goes to the C API as one array; any
        other column value by value, exactly as `insert` converts it. No value
        is converted inexactly on the way: a column mixing int and float, or
        holding an int beyond 64 bits, goes value by value (and is refused or
        converted as a single set would be)."""
        target = self.model.entity(entity)
        names = list(columns)
        values = [column if isinstance(column, (list, tuple)) else list(column) for column in columns.values()]
        lengths = set(map(len, values))
        if len(lengths) > 1:
            described = ", ".join(f"{name}: {len(column)}" for name, column in zip(names, values))
            raise argument_error(f"{target.name}: columns of different lengths ({described})")
        rows = lengths.pop() if lengths else 0
        if rows == 0:
            return 0
        self._insert_columns(target, names, values, rows)
        return rows

    def _insert_columns(self, entity: Entity, names: Sequence[str], columns: Sequence[Sequence[Any]], rows: int) -> None:
        for name in names:
            if name in entity.relationships:
                raise argument_error(f"{entity.name}.{name} is a relationship: a batch insert takes attributes; "
                                     "set relationships on the objects it makes, or insert them one by one with insert()")
        attributes = [entity.attribute(name) for name in names]
        array = ffi.new("amber_column[]", len(attributes))
        keep: list = []
        for target, attribute, values in zip(array, attributes, columns):
            _columns.fill(target, values, attribute, entity.name, keep)
        check(lib.amber_context_insert_columns(ffi.NULL, self._handle, entity.handle, array, len(attributes), rows))

    @staticmethod
    def _arguments(arguments: Sequence[Any], keep: list) -> Any:
        """Predicate arguments (or variable values) as a C array; objects stand for their IDs."""
        values = ffi.new("amber_value[]", len(arguments))
        keep.append(values)
        for number, (slot, argument) in enumerate(zip(values, arguments), 1):
            if isinstance(argument, (list, tuple)) and argument and all(isinstance(item, Object) for item in argument):
                argument = [item.uri for item in argument]  # objects as their IDs' URIs (author IN %@)
            elif type(argument) is tuple:
                argument = list(argument)  # a collection for IN; only a struct class's own tuple type is a struct
            if isinstance(argument, Object):  # an object stands for its ID (author == %@)
                uri = ffi.new("char[]", argument.uri.encode())
                keep.append(uri)
                slot.type = lib.AMBER_VALUE_OBJECT_ID
                slot.v.text.data = uri
                slot.v.text.length = len(uri) - 1
            else:
                try:
                    to_c(argument, slot, keep)
                except (TypeError, ValueError) as error:
                    raise placed(error, f"predicate argument {number}") from None
        return values

    def _request(self, entity: Optional[str], predicate: Optional[str], arguments: Sequence[Any], sort: Optional[Sequence[str]],
                 limit: Optional[int], offset: int, keep: list, prefetch: Sequence[str] = (),
                 subentities: bool = True, template: Optional[str] = None,
                 variables: Optional[Mapping[str, Any]] = None) -> Any:
        request = ffi.new("amber_fetch_request *")
        request.size = ffi.sizeof("amber_fetch_request")  # what AMBER_FETCH_REQUEST_INIT sets in C
        name = ffi.new("char[]", _name(template, "the template name") if template is not None else _name(entity, "the entity name"))
        keep.append(name)
        if template is not None:
            request.template_name = name
        else:
            request.entity = name
        if predicate is not None:
            text = ffi.new("char[]", _name(predicate, "the predicate"))
            keep.append(text)
            request.predicate = text
        if arguments:
            request.arguments = self._arguments(arguments, keep)
            request.argument_count = len(arguments)
        if variables:
            names = [ffi.new("char[]", str(key).encode("utf-8")) for key in variables]
            keep.extend(names)
            array = ffi.new("char *[]", names)
            keep.append(array)
            request.variable_names = array
            request.variable_values = self._arguments(list(variables.values()), keep)
            request.variable_count = len(names)
        if sort:
            keys = ffi.new("amber_sort[]", len(sort))
            keep.append(keys)
            for slot, key in zip(keys, sort):
                text = _name(key, "a sort key")
                descending = text.startswith(b"-")
                encoded = ffi.new("char[]", text.lstrip(b"-+"))
                keep.append(encoded)
                slot.key = encoded
                slot.descending = 1 if descending else 0
            request.sort = keys
            request.sort_count = len(sort)
        # C reads 0 and below as "no limit": refused here, so limit=0 or -1 never fetches everything in silence.
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise argument_error(f"limit {limit!r}: a fetch limit is a positive int (None: no limit)")
        request.limit = limit or 0
        request.offset = offset
        request.exclude_subentities = 0 if subentities else 1
        if prefetch:
            paths = [ffi.new("char[]", _name(path, "a prefetch key path")) for path in prefetch]
            keep.extend(paths)
            array = ffi.new("char *[]", paths)
            keep.append(array)
            request.prefetch = array
            request.prefetch_count = len(paths)
        return request

    def fetch(self, entity: str, predicate: Optional[str] = None, *arguments: Any, sort: Optional[Sequence[str]] = None,
              limit: Optional[int] = None, offset: int = 0, decode: bool = False,
              prefetch: Sequence[str] = (), subentities: bool = True,
              variables: Optional[Mapping[str, Any]] = None) -> list["Object"]:
        """Objects of `entity` matching `predicate` (Core Data syntax, `%@` and
        `%K` filled from `arguments`), sorted by `sort` keys ("price", "-price"
        for descending), at most `limit`, after skipping `offset`.

        Stored values come in the same C call as the objects. Transformed
        values keep their decode policy (lazy: on first access) unless
        `decode=True`, which decodes them in the batch too: faster when you
        will read them all.

        Predicates follow relationships (`author.name == %@`, `ANY books.price
        > %@`, `books.@count > 3`) and compare objects (`author == %@` with an
        Object). `prefetch` names relationship key paths (`["author"]`,
        `["books", "books.tags"]`) read with the objects, one query each, so
        following them later reads nothing more. Objects of entities that
        inherit from `entity` come too, unless `subentities` is False.
        `$NAME` variables in the predicate take their values from `variables`
        (keyed by name without the `$`): each variable needs one and each
        value a variable, else PredicateError names it."""
        keep: list = []
        request = self._request(entity, predicate, arguments, sort, limit, offset, keep, prefetch, subentities,
                                variables=variables)
        return self._fetch(self.model.entity(entity), request, decode, subentities)

    def fetch_template(self, name: str, variables: Optional[Mapping[str, Any]] = None, *,
                       sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
                       decode: bool = False, prefetch: Sequence[str] = (), subentities: bool = True) -> list["Object"]:
        """Objects fetched by the model's template `name` (Model.templates),
        its `$VARIABLES` filled from `variables` ({"AUTHOR": "Albert Camus"}:
        every variable needs a value and every value a variable, else
        PredicateError names it). `sort` and `limit` given here
        replace the template's; the other options are as for fetch."""
        keep: list = []
        request = self._request(None, None, (), sort, limit, offset, keep, prefetch, subentities, template=name,
                                variables=variables)
        template = self.model._template_table().get(name)
        if template is None:  # C's error, with the nearest name
            check(lib.amber_context_count(_out("int64_t *"), self._handle, request))
        return self._fetch(self.model.entity(template.entity), request, decode, subentities)

    def _fetch(self, target: "Entity", request: Any, decode: bool, subentities: bool) -> list["Object"]:
        self._before_merging_point()
        read = target.everything if decode else target.prefetched
        width, count = len(read), _out("size_t *")
        if not width or (target.has_subentities and subentities):
            # Nothing to read with the objects (the batch needs at least one attribute), or objects of
            # several entities: each made as its own entity's, its values read when asked.
            objects = _out("amber_object ***")
            check(lib.amber_context_fetch(objects, count, self._handle, request))
            try:
                if target.has_subentities and subentities:
                    return [self._known(objects[0][i]) for i in range(count[0])]
                return self._fetched(objects[0], count[0], target)
            finally:
                lib.amber_free(objects[0])
        batch, values, handles = _out("amber_batch **"), _out("const amber_value **"), _out("amber_object *const **")
        attributes = target.everything_handles if decode else target.prefetch_handles
        check(lib.amber_context_fetch_batch(batch, values, handles, count, self._handle, request, attributes, width))
        # The values are views into the batch: each becomes a Python value before the batch is freed,
        # here, on the context's thread (amber_batch_free refuses any other).
        try:
            result = self._fetched(handles[0], count[0], target)
            if result:
                # Column by column into the objects' slots, in C loops. An object fetched
                # before gets the same values it has here (pending changes included).
                columns = _reader.columns(values[0], count[0], width, self.model._codec)
                for setter, column in zip(target.slot_setters, columns):
                    if setter is not None:
                        _each(map(setter, result, column))
                _each(map(_set_filled, result, itertools.repeat(True)))
        finally:
            freed = lib.amber_batch_free(batch[0])
        check(freed)
        return result

    def _fetched(self, handles: Any, count: int, entity: Entity) -> list["Object"]:
        """The objects for a fetch's `count` handles, each made before any value is read:
        if reading one fails, dropping them releases them all."""
        return self._adopt(ffi.unpack(handles, count), entity) if count else []

    def count(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
              variables: Optional[Mapping[str, Any]] = None) -> int:
        """How many objects `fetch` would return."""
        keep: list = []
        request = self._request(entity, predicate, arguments, None, None, 0, keep, variables=variables)
        out = _out("int64_t *")
        self._before_merging_point()
        check(lib.amber_context_count(out, self._handle, request))
        return out[0]

    # Batch changes by predicate (see amber_context_batch_update).

    def batch_update(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                     set: Optional[Mapping[str, Any]] = None, copy: Optional[Mapping[str, str]] = None,
                     add: Optional[Mapping[str, Any]] = None, subtract: Optional[Mapping[str, Any]] = None,
                     multiply: Optional[Mapping[str, Any]] = None, sort: Optional[Sequence[str]] = None,
                     limit: Optional[int] = None, offset: int = 0,
                     variables: Optional[Mapping[str, Any]] = None) -> list[str]:
        """Changes attributes of every object of `entity` that `predicate`
        matches (arguments, `sort`, `limit`, `offset` and `variables` as for
        fetch), in the store, in one transaction, without loading the objects.
        Returns the changed objects' IDs as URIs (as `obj.uri`).

            ctx.batch_update("Book", "pages > %@", 500, set={"long": True},
                             multiply={"price": Decimal("1.1")}, copy={"subtitle": "title"})

        `set` sets constants, `copy` sets each attribute to another attribute
        of the same object (`{"subtitle": "title"}`), and `add`, `subtract`
        and `multiply` set each attribute to itself + - * the value. Values
        are converted as `obj.attr = value` converts them. Arithmetic on
        integers and Decimals is exact or refused (an integer overflow, a
        Decimal result needing more than 38 digits); on floats it is IEEE
        arithmetic, as in Python. Nothing is written
        unless every changed object passes: ValidationError lists each
        object whose new value breaks a rule or a uniqueness constraint;
        ValueClassError names an attribute a batch cannot set (transient,
        derived, computed, transformed, set twice) or a value it refuses.

        The store's history records the batch; objects this context holds
        show the new values (keeping values set here and not saved), other
        contexts see them when they merge."""
        target = self.model.entity(entity)
        keep: list = []
        request = self._request(entity, predicate, arguments, sort, limit, offset, keep, variables=variables)
        array, count = _batch.assignments(target, {"set": set, "copy": copy, "add": add, "subtract": subtract,
                                                   "multiply": multiply}, keep)
        self._before_merging_point()
        try:
            return _batch.object_ids(lambda out, count_out: lib.amber_context_batch_update(
                out, count_out, self._handle, request, array, count))
        finally:
            self._forget_all_values()  # held objects were refreshed, derived values anywhere computed anew (also when an observer failed)

    def batch_delete(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                     sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
                     variables: Optional[Mapping[str, Any]] = None) -> list[str]:
        """Deletes every object of `entity` that `predicate` matches
        (arguments as for fetch), in the store, in one transaction, without
        loading the objects. Returns the deleted objects' IDs as URIs.

        Delete rules hold: nullify empties the links of the objects left
        (a required inverse refuses the batch); deny, cascade and no action
        refuse it while a deleted object still has a destination. A refusal
        raises ValidationError naming each relationship, and nothing is
        deleted. Objects this context holds leave it unless changed here; the
        history records the batch; other contexts see it when they merge."""
        self.model.entity(entity)  # NotFoundError with the nearest name, as fetch raises
        keep: list = []
        request = self._request(entity, predicate, arguments, sort, limit, offset, keep, variables=variables)
        self._before_merging_point()
        try:
            return _batch.object_ids(lambda out, count_out: lib.amber_context_batch_delete(
                out, count_out, self._handle, request))
        finally:
            self._forget_all_values()  # links of the objects left were nullified, derived values computed anew

    def object(self, uri: str) -> "Object":
        """The object whose ID has this URI form."""
        out = _out("amber_object **")
        self._before_merging_point()
        check(lib.amber_context_object_with_uri(out, self._handle, _name(uri, "the URI")))
        return self._known(out[0])

    def delete(self, obj: "Object") -> None:
        """Marks `obj` for deletion at the next save."""
        check(lib.amber_context_delete(self._handle, _handle_of(obj, "delete")))

    def save(self) -> None:
        """Writes every pending change in one transaction; ValidationError lists
        every problem and keeps every change."""
        self._before_merging_point()
        check(lib.amber_context_save(self._handle))
        if self._merge_policy != MergePolicy.ERROR:
            # A settled conflict may have changed any object's values.
            self._forget_all_values()

    def rollback(self) -> None:
        """Discards every pending change."""
        check(lib.amber_context_rollback(self._handle))
        self._forget_all_values()

    def merge_saved_changes(self) -> None:
        """Merges what other contexts saved since the last merge (on this store,
        through other stores on the file, or in other processes): objects held
        here that they updated keep every value set here and take the saved
        value of every other attribute; objects they deleted leave the context
        unless changed here; new rows appear in the next fetch, and observers
        get them as `inserted` (not for a save of more than 4,096 objects)."""
        check(lib.amber_context_merge_saved_changes(self._handle))
        self._forget_all_values()

    def wait_for_saved_changes(self, timeout: float) -> bool:
        """Waits until others saved something this context has not merged
        yet (another context, connection, process or host), or `timeout`
        seconds pass; returns whether they had (then `merge_saved_changes()`
        takes it). A PostgreSQL store is told of saves by the server; an SQLite
        store looks every few milliseconds. Blocks the calling thread."""
        if timeout < 0:
            raise ValueError(f"timeout is {timeout}; expected 0 or more seconds")
        changed = ffi.new("int32_t *")
        check(lib.amber_context_wait_for_saved_changes(changed, self._handle, int(timeout * 1000)))
        return bool(changed[0])

    def refresh(self, obj: "Object", merge_changes: bool = True) -> None:
        """Reads `obj` again from the store: keeping every value set here
        (`merge_changes`), or dropping its pending value changes."""
        check(lib.amber_context_refresh(self._handle, obj._handle, 1 if merge_changes else 0))
        obj._forget_values()

    @property
    def automatically_merges_changes(self) -> bool:
        """Whether the context merges other contexts' saves before each fetch,
        count, lookup and save (then a value set here wins over one saved
        meanwhile instead of the save failing with a conflict, also one saved
        between that merge and the write)."""
        return self._merges_automatically

    @automatically_merges_changes.setter
    def automatically_merges_changes(self, enabled: bool) -> None:
        check(lib.amber_context_set_automatic_merging(self._handle, 1 if enabled else 0))
        self._merges_automatically = bool(enabled)

    @property
    def name(self) -> Optional[str]:
        """The context's name ("sync", "importer"), recorded with each of its
        saves in the store's history (HistoryTransaction.context); None (the
        default) records none."""
        return self._names[0]

    @name.setter
    def name(self, name: Optional[str]) -> None:
        self._set_names(name, self._names[1], "name")

    @property
    def author(self) -> Optional[str]:
        """Who saves through this context, recorded with each of its saves in
        the store's history (HistoryTransaction.author); None (the default)
        records none."""
        return self._names[1]

    @author.setter
    def author(self, author: Optional[str]) -> None:
        self._set_names(self._names[0], author, "author")

    def _set_names(self, name: Optional[str], author: Optional[str], what: str) -> None:
        changed = name if what == "name" else author
        if changed is not None and not isinstance(changed, str):
            raise _not_text(changed, f"Context.{what}")
        check(lib.amber_context_set_names(self._handle, _text(name), _text(author)))
        self._names = (name, author)

    @property
    def merge_policy(self) -> MergePolicy:
        """What a save does when another context or process changed or deleted
        an object's row since it was read (see MergePolicy); ERROR by default."""
        return self._merge_policy

    @merge_policy.setter
    def merge_policy(self, policy: MergePolicy) -> None:
        policy = MergePolicy(policy)  # ValueError for a number that names no policy
        check(lib.amber_context_set_merge_policy(self._handle, int(policy)))
        self._merge_policy = policy

    # Undo and redo (see amber_context_enable_undo).

    def enable_undo(self, levels_limit: int = 0) -> None:
        """Records every change made here for undo and redo, keeping at most
        `levels_limit` groups (0: no limit); earlier history is dropped."""
        check(lib.amber_context_enable_undo(self._handle, levels_limit))

    def disable_undo(self) -> None:
        """Stops recording and drops the history."""
        check(lib.amber_context_disable_undo(self._handle))

    def undo(self) -> bool:
        """Reverts the last group of changes; False if there was nothing to undo."""
        return self._replay(lib.amber_context_undo)

    def redo(self) -> bool:
        """Applies again the last group undo() reverted; False if there is none."""
        return self._replay(lib.amber_context_redo)

    def _replay(self, function: Callable[[Any, Any], int]) -> bool:
        done = _out("int32_t *")
        try:
            check(function(done, self._handle))
        finally:
            self._forget_all_values()
        return bool(done[0])

    @contextlib.contextmanager
    def undo_group(self, name: Optional[str] = None) -> Iterator[None]:
        """Groups every change made in the block into one undo step named
        `name` (for an "Undo <name>" menu item)."""
        check(lib.amber_context_begin_undo_group(self._handle, _text(name)))
        try:
            yield
        finally:
            check(lib.amber_context_end_undo_group(self._handle))

    @property
    def can_undo(self) -> bool:
        out = _out("int32_t *")
        check(lib.amber_context_undo_state(out, ffi.NULL, self._handle))
        return bool(out[0])

    @property
    def can_redo(self) -> bool:
        out = _out("int32_t *")
        check(lib.amber_context_undo_state(ffi.NULL, out, self._handle))
        return bool(out[0])

    @property
    def undo_action_name(self) -> Optional[str]:
        """The name of the group undo() would revert, if it has one."""
        return self._action_name(0)

    @property
    def redo_action_name(self) -> Optional[str]:
        """The name of the group redo() would apply, if it has one."""
        return self._action_name(1)

    def _action_name(self, redo: int) -> Optional[str]:
        out = _out("char **")
        check(lib.amber_context_undo_action_name(out, self._handle, redo))
        if out[0] == ffi.NULL:
            return None
        try:
            return ffi.string(out[0]).decode("utf-8")
        finally:
            lib.amber_free(out[0])

    # Observers and live queries (see amber_context_add_observer, amber_live_query_new).

    def add_observer(self, observer: Callable[[ChangeReport], None]) -> int:
        """Calls `observer` with a ChangeReport after each save that wrote
        something, each merge that changed or removed objects held here, and
        each refresh that changed an object, on this context's thread. If it
        raises, the others still run and the call that made the event raises
        ObserverError after doing its work (a save is written). Returns a
        token for remove_observer."""
        token, callback = _out("uint64_t *"), _Callback(self)
        check(lib.amber_context_add_observer(token, self._handle, _observer_trampoline, _keep_until_freed(callback),
                                             _free_trampoline))
        callback.key = int(token[0])
        self._callbacks[callback.key] = observer
        return callback.key

    def remove_observer(self, token: int) -> None:
        """Removes the observer add_observer returned `token` for (NotFoundError if there is none)."""
        check(lib.amber_context_remove_observer(self._handle, token))
        self._callbacks.pop(token, None)

    def pending_changes(self) -> ChangeReport:
        """The changes made here and not saved yet (event "pending")."""
        out = _out("amber_changes **")
        check(lib.amber_context_pending_changes(out, self._handle))
        try:
            return _read_report(self, out[0])
        finally:
            lib.amber_changes_free(out[0])

    def live_query(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                   sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
                   section_key: Optional[str] = None, section_unit: Optional[str] = None,
                   on_change: Optional[Callable[[list[IndexChange]], None]] = None) -> "LiveQuery":
        """The results of a fetch (arguments as for fetch) that follow every
        save, merge and refresh of this context; `on_change` gets the index
        changes of each. Sections by `section_key` (the first sort key), dates
        grouped by `section_unit` ("year", "month" or "day", in UTC)."""
        return LiveQuery(self, entity, predicate, arguments, sort, limit, offset, section_key, section_unit, on_change)

    def _before_merging_point(self) -> None:
        """Cached values go before a call that may merge other contexts' saves."""
        if self._merges_automatically:
            self._forget_all_values()

    def _forget_all_values(self) -> None:
        for ref in list(self._objects.values()):
            obj = ref()
            if obj is not None:
                obj._forget_values()

    @property
    def has_changes(self) -> bool:
        out = _out("int32_t *")
        check(lib.amber_context_has_changes(out, self._handle))
        return bool(out[0])

    def _pending(self, kind: int) -> list["Object"]:
        objects, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_context_pending_objects(objects, count, self._handle, kind))
        try:
            return [self._known(objects[0][i]) for i in range(count[0])]
        finally:
            lib.amber_free(objects[0])

    def _known(self, handle: Any) -> "Object":
        """The Python object for a handle this context gave out, even one Python
        never saw (objects inserted in a batch)."""
        found = self._object_at(handle)
        if found is not None:
            return found
        entity, name = _out("amber_entity **"), _out("char **")
        check(lib.amber_object_entity(entity, handle))
        check(lib.amber_entity_name(name, entity[0]))
        return self._object(handle, self.model.entity(ffi.string(name[0]).decode()))

    @property
    def inserted(self) -> list["Object"]:
        return self._pending(lib.AMBER_PENDING_INSERTED)

    @property
    def updated(self) -> list["Object"]:
        return self._pending(lib.AMBER_PENDING_UPDATED)

    @property
    def deleted(self) -> list["Object"]:
        return self._pending(lib.AMBER_PENDING_DELETED)

    def close(self) -> None:
        """Frees the context and its objects' handles; later use raises MisuseError."""
        self._release()
        # Values a fetch cached in its objects go too, so reading one raises instead of answering from the cache.
        for ref in list(self._objects.values()):
            obj = ref()
            if obj is not None:
                obj._forget_values()
        self._objects.clear()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        # As sqlite3's `with connection:`: a clean exit saves, an exception rolls back; then it closes.
        try:
            if self._owns:
                if kind is None:
                    self.save()
                else:
                    self.rollback()
        finally:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if not self._owns else ("with unsaved changes" if self.has_changes else "no unsaved changes")
        return f"<amber.Context on {self.store!r}, {state}>"


class Section(collections.namedtuple("Section", "value start count")):
    """A run of a live query's results sharing `value` (the section key's,
    a date grouped by the unit's first instant; None without a section key)."""

    value: Any
    start: int
    count: int


_UNITS = {None: lib.AMBER_UNIT_NONE, "year": lib.AMBER_UNIT_YEAR, "month": lib.AMBER_UNIT_MONTH, "day": lib.AMBER_UNIT_DAY}


@checks_arguments
class LiveQuery(_Owner):
    """The results of a fetch request, kept up to date after each save, merge
    and refresh of its context (see Context.live_query). A change costs what
    it touches, not the size of the results.

    `on_change` receives a list of IndexChange. To apply one to a copy of the
    old results, remove the rows of "delete" and the old rows of "move" (last
    position first), then the sections of "section_delete" (last first);
    insert the sections of "section_insert", then the rows of "insert" and
    the new rows of "move" (first position first). Freed by close(), at the
    end of a with block, or when it goes away; it keeps its context alive."""

    _free = staticmethod(lib.amber_live_query_free)

    def __init__(self, context: Context, entity: str, predicate: Optional[str], arguments: Sequence[Any],
                 sort: Optional[Sequence[str]], limit: Optional[int], offset: int, section_key: Optional[str],
                 section_unit: Optional[str], on_change: Optional[Callable[[list[IndexChange]], None]]) -> None:
        if section_unit not in _UNITS:
            raise argument_error(f"section_unit: {section_unit!r} is not one of 'year', 'month', 'day'")
        keep: list = []
        request = context._request(entity, predicate, arguments, sort, limit, offset, keep)
        options = ffi.new("amber_live_query_options *")
        options.size = ffi.sizeof("amber_live_query_options")
        if section_key is not None:
            key = ffi.new("char[]", _name(section_key, "section_key"))
            keep.append(key)
            options.section_key = key
        options.section_unit = _UNITS[section_unit]
        self.context = context  # freed before its context
        self._callbacks = {None: on_change} if on_change is not None else {}
        out = _out("amber_live_query **")
        callback = _keep_until_freed(_Callback(self)) if on_change is not None else ffi.NULL
        check(lib.amber_live_query_new(out, context._handle, request, options,
                                       _live_query_trampoline if on_change is not None else ffi.NULL,
                                       callback, _free_trampoline if on_change is not None else ffi.NULL))
        self._own(out[0])

    def __enter__(self) -> "LiveQuery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stops following; the results can no longer be read."""
        self._release()

    def __len__(self) -> int:
        count = _out("size_t *")
        check(lib.amber_live_query_count(count, ffi.NULL, self._handle))
        return int(count[0])

    def __getitem__(self, index: int) -> "Object":
        if index < 0:
            index += len(self)
        out = _out("amber_object **")
        status = lib.amber_live_query_object(out, self._handle, -1, index) if index >= 0 else lib.AMBER_E_INVALID_VALUE
        if status == lib.AMBER_E_INVALID_VALUE:
            raise IndexOutOfRangeError(lib.AMBER_E_INVALID_VALUE, "live query index out of range")
        check(status)
        return self.context._known(out[0])

    @property
    def objects(self) -> list["Object"]:
        """The results, in order."""
        return [self[i] for i in range(len(self))]

    def object_at(self, section: int, row: int) -> "Object":
        """The result at row `row` of section `section`."""
        out = _out("amber_object **")
        check(lib.amber_live_query_object(out, self._handle, section, row))
        return self.context._known(out[0])

    @property
    def sections(self) -> list[Section]:
        """The sections in order (one holding every result without a section key)."""
        count, sections = _out("size_t *"), _out("size_t *")
        check(lib.amber_live_query_count(count, sections, self._handle))
        result = []
        for index in range(sections[0]):
            start, rows, value = _out("size_t *"), _out("size_t *"), ffi.new("amber_value *")
            check(lib.amber_live_query_section(start, rows, value, self._handle, index))
            try:
                result.append(Section(from_c(value, self.context.model._codec), int(start[0]), int(rows[0])))
            finally:
                lib.amber_value_release(value)
        return result

    def refetch(self) -> None:
        """Evaluates the request again in full and reports what differs."""
        check(lib.amber_live_query_refetch(self._handle))


class Object:
    """An object of a context. Attributes read and write as Python attributes
    (`book.title`) or items (`book["title"]`); so do extended attributes of an
    extensible entity (`book["shelf"] = "B2"`; None removes one). An attribute
    or relationship named like the object's own API (`uri`, `entity`,
    `primary_key`, `keys`, `extended_keys`, `to_dict`) or starting with "_" is
    an item only (`book["uri"]`): the API cannot be hidden. Its handle is
    released when the Object goes away; pending changes stay in the context
    until saved or rolled back."""

    # Made by Context._make, which sets these slots; each entity's subclass adds a slot
    # per fetched attribute, holding the value read with the fetch until a set or a
    # rollback clears it (_filled: whether a fetch filled any, so clearing costs nothing
    # otherwise). _entity is a class attribute of each entity's subclass.
    __slots__ = ("_context", "_handle", "_filled", "__weakref__")
    _entity: Entity
    _release_handle = staticmethod(lib.amber_object_release)  # through the class, which outlives every instance

    def __del__(self) -> None:
        # Runs before the slots are cleared, so the context can still be asked: once it is
        # freed, so are its handles. Never raises; a refusal (another thread) leaves the
        # handle to the context, which frees it with itself.
        if self._context._owns:
            self._release_handle(self._handle)

    @property
    def entity(self) -> str:
        return self._entity.name

    @property
    def uri(self) -> str:
        """The object's ID in URI form (temporary until first saved)."""
        out, length = _out("char **"), _out("size_t *")
        check(lib.amber_object_uri(out, length, self._handle))
        try:
            return ffi.unpack(out[0], length[0]).decode()
        finally:
            lib.amber_free(out[0])

    def fetched(self, name: str) -> list["Object"]:
        """The objects of fetched property `name` (declared in the model): a
        fetch whose predicate reads $FETCH_SOURCE as this object, made when
        first read and kept until Context.refresh refreshes the object.
        NotFoundError naming Entity.name for a property the entity lacks."""
        objects, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_object_fetched_objects(objects, count, self._handle, _name(name, "a fetched property")))
        try:
            return [self._context._known(objects[0][i]) for i in range(count[0])]
        finally:
            lib.amber_free(objects[0])

    @property
    def primary_key(self) -> int:
        """The object's primary key, the integer its URI ends with (…/p42 → 42),
        stable once the object is saved; MisuseError before its first save."""
        out = _out("int64_t *")
        check(lib.amber_object_primary_key(out, self._handle))
        return out[0]

    def _get(self, name: str) -> Any:
        slot = self._entity.slots.get(name)
        if slot is not None:
            try:
                return slot.__get__(self)
            except AttributeError:  # not fetched, or cleared (also by closing the context): ask the library
                pass
        if not self._context._owns:
            self._context._handle  # raises MisuseError: the context (or its store) is closed
        if name in self._entity.relationships:
            return self._related(name)
        attribute = self._entity.attributes.get(name)
        value = ffi.new("amber_value *")
        if attribute is not None:
            check(lib.amber_object_get(value, self._handle, attribute.handle))
        elif self._entity.extensible:  # an extended attribute (None if the object has none)
            check(lib.amber_object_get_named(value, self._handle, name.encode()))
        else:
            self._unknown(name)
        try:
            return from_c(value, self._context.model._codec)
        finally:
            lib.amber_value_release(value)

    def _unknown(self, name: str) -> NoReturn:
        """Raises UnknownNameError for `name`, with the library's nearest-name message."""
        try:
            self._entity.attribute(name)
        except NotFoundError as error:
            raise UnknownNameError(error.code, error.message, error.origin) from None
        raise UnknownNameError(lib.AMBER_E_NOT_FOUND, f"{self._entity.name}.{name}: no such attribute", f"{self._entity.name}.{name}")

    def _related(self, name: str) -> Any:
        """A to-one's object (None if none), or a to-many's live members."""
        relationship = self._entity.relationships[name]
        if relationship.to_many:
            return RelatedObjects(self, relationship)
        out = _out("amber_object **")
        check(lib.amber_object_get_object(out, self._handle, relationship.handle))
        if out[0] == ffi.NULL:
            return None
        return self._context._object(out[0], self._context.model.entity(relationship.destination))

    def _set_related(self, relationship: Relationship, new: Any) -> None:
        if relationship.to_many:
            # Replacing the members, in `new`'s order: one call, all or nothing.
            wanted = list(new)
            handles = ffi.new("amber_object *[]", [_handle_of(member, f"{self._entity.name}.{relationship.name}") for member in wanted])
            check(lib.amber_object_set_objects(self._handle, relationship.handle, handles, len(wanted)))
            return
        destination = ffi.NULL if new is None else _handle_of(new, f"{self._entity.name}.{relationship.name}")
        check(lib.amber_object_set_object(self._handle, relationship.handle, destination))

    def _set(self, name: str, new: Any) -> None:
        if not self._context._owns:
            self._context._handle  # raises MisuseError: the context (or its store) is closed
        relationship = self._entity.relationships.get(name)
        if relationship is not None:
            self._set_related(relationship, new)
            return
        value = ffi.new("amber_value *")
        keep: list = []
        place = f"{self._entity.name}.{name}"
        if name not in self._entity.attributes and self._entity.extensible:
            try:
                to_c(new, value, keep)
            except (TypeError, ValueError) as error:
                raise placed(error, place) from None
            check(lib.amber_object_set_named(self._handle, name.encode(), value))
            return
        attribute = self._entity.attributes.get(name)
        if attribute is None:
            self._unknown(name)
        try:
            to_c(new, value, keep, attribute.type, attribute.value_class, attribute.codec)
        except (TypeError, ValueError) as error:
            raise placed(error, place) from None
        check(lib.amber_object_set(self._handle, attribute.handle, value))
        # A set can change other stored values too (a shadow attribute's storage): read afresh.
        self._forget_values()

    def _forget_values(self) -> None:
        """Empties the slots a fetch filled, so every attribute is read afresh
        (nothing to do, and no per-slot work, for an object no fetch filled)."""
        if not self._filled:
            return
        self._filled = False
        for slot in self._entity.slots.values():
            try:
                slot.__delete__(self)
            except AttributeError:  # already empty
                pass

    def __getattr__(self, name: str) -> Any:
        # Only names that are not attributes reach here (attributes are properties of the entity's class).
        if name.startswith("_"):
            raise AttributeError(name)
        return self._get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name in _OBJECT_API:
            raise ReservedNameError(lib.AMBER_E_INVALID_VALUE, f"{self._entity.name}.{name}: \"{name}\" is a name of the "
                                    f"object's API, not an attribute; set an attribute of that name as an item: obj[\"{name}\"] = value",
                                    f"{self._entity.name}.{name}")
        else:
            self._set(name, value)

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            raise _not_text(name, f"{self._entity.name}: an attribute name")
        return self._get(name)

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str):
            raise _not_text(name, f"{self._entity.name}: an attribute name")
        self._set(name, value)

    def extended_keys(self) -> list[str]:
        """The names of the object's extended attributes, sorted (empty unless its entity is extensible)."""
        out, count = _out("char **"), _out("size_t *")
        check(lib.amber_object_extended_keys(out, count, self._handle))
        if out[0] == ffi.NULL:
            return []
        try:
            # One buffer of NUL-terminated names, one after another.
            names, offset = [], 0
            for _ in range(count[0]):
                name = ffi.string(out[0] + offset)
                names.append(name.decode())
                offset += len(name) + 1
            return names
        finally:
            lib.amber_free(out[0])

    def keys(self) -> list[str]:
        """The names of the object's attributes, in model order, then its extended
        attributes, sorted: what `to_dict`, iteration and `in` see. (Relationships
        are read by name too, but are not values of the object and are not listed.)"""
        names = list(self._entity.attributes)
        if self._entity.extensible:
            names += self.extended_keys()
        return names

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._entity.attributes:
            return True
        return self._entity.extensible and name in self.extended_keys()

    def to_dict(self) -> dict[str, Any]:
        """Every attribute's value by name, extended attributes included."""
        return {name: self._get(name) for name in self.keys()}

    def __repr__(self) -> str:
        return f"<amber.Object {self._entity.name} {self.uri}>"



# The public names of Object: attributes and relationships with these names are items only.
_OBJECT_API = frozenset(name for name in dir(Object) if not name.startswith("_"))

# Object's slots, set directly (Context._make).
_new_object = object.__new__
_set_context = Object._context.__set__  # type: ignore[attr-defined]
_set_handle = Object._handle.__set__  # type: ignore[attr-defined]
_set_filled = Object._filled.__set__  # type: ignore[attr-defined]


class _Ref(weakref.ref):
    """A weak reference to an Object that knows its handle: its key in Context._objects."""

    __slots__ = ("handle",)


def _forget(objects: dict, ref: _Ref) -> None:
    """The callback of a _Ref: the object is gone, so is its entry, unless the
    entry went already (the context was closed) or names another object."""
    if objects.get(ref.handle) is ref:
        del objects[ref.handle]


_set_ref_handle = _Ref.handle.__set__  # type: ignore[attr-defined]
_each = functools.partial(collections.deque, maxlen=0)  # runs an iterator (of C calls) to its end


def _non_finite_place(value: Any, place: str, seen: Optional[set] = None) -> str:
    """Where in `value` (a model description) the first NaN or infinite float is, as
    `$.entities[0].attributes[1].default`; "" for none (each container is looked in once, so a cycle ends)."""
    if isinstance(value, float) and not math.isfinite(value):
        return place
    seen = set() if seen is None else seen
    if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
        return ""
    seen.add(id(value))
    for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
        found = _non_finite_place(item, f"{place}.{key}" if isinstance(key, str) else f"{place}[{key}]", seen)
        if found:
            return found
    return ""


def _non_finite_value(value: Any, place: str) -> str:
    """The float at `place` (as `_non_finite_place` gives it), written as Python writes it."""
    for part in re.findall(r"\.([^.\[]+)|\[(\d+)\]", place):
        value = value[part[0]] if part[0] else value[int(part[1])]
    return repr(value)
