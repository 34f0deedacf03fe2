"""Registries of value classes and transformers, Python transformers and computed
functions, and the transformer handles that run them."""
from __future__ import annotations

import itertools
import operator
import os
import threading
import weakref
from typing import Any, Callable, Iterable, Optional, Sequence, TYPE_CHECKING, Union, overload

from ._ffi import ffi, lib
from ._values import FIELD_TYPES, StructCodec, _slices, from_c, struct_codec, to_c
from .errors import Error, MisuseError, ModelError, NotFoundError, argument_error, check, checks_arguments, interrupted, keep_callback_exception, last_error
from ._common import _Owner, _columns, _free_trampoline, _keep_until_freed, _name, _out, _text

if TYPE_CHECKING:
    from .model import Model
    from .objects import Object


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
        if _stopped():
            return -1
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
        if _stopped():
            return -1
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


def _stopped() -> bool:
    """Whether the running C call was interrupted by an earlier callback (Ctrl-C,
    SystemExit): this one then fails at once, without running Python code."""
    if not interrupted():
        return False
    lib.amber_transformer_error(b"interrupted")
    return True


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
