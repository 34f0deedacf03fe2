"""Registered transformers called directly through a Transformer handle: values
as Object attributes have them, the byte path, their refusals, and the handle's
lifetime."""
import gc
import os
import random
import struct
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import amber
from amber import ffi, lib

LITTLE_ENDIAN = struct.Struct("<4f")  # the color plugin's stored form
NATIVE = struct.Struct("=4f")  # struct Color { float r, g, b, a; } in memory


@pytest.fixture(scope="module")
def registry(plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    registry.load_plugin(os.path.join(plugin_dir, "libAmberDeflatePlugin.so"))
    return registry


@pytest.fixture(scope="module")
def color(registry):
    return registry.transformer("ColorToData")


def test_a_plugin_transformer_says_what_it_converts(color):
    assert isinstance(color, amber.Transformer)
    assert (color.name, color.input_class, color.input_size, color.output_class, color.output_size) == \
        ("ColorToData", "Color", 16, "Binary", None)
    assert repr(color) == "<amber.Transformer ColorToData: Color -> Binary>"


def test_values_go_through_as_object_attributes_have_them(registry, color):
    Color = registry.struct_type("Color")
    stored = color.forward(Color(1.0, 0.5, 0.25, 1.0))
    assert stored == LITTLE_ENDIAN.pack(1.0, 0.5, 0.25, 1.0)
    assert color.forward((1.0, 0.5, 0.25, 1.0)) == stored  # a tuple in field order packs
    assert color.forward({"r": 1.0, "g": 0.5, "b": 0.25, "a": 1.0}) == stored  # and a dict by field name
    back = color.reverse(stored)
    assert back == Color(1.0, 0.5, 0.25, 1.0) and type(back) is Color and back.b == 0.25
    with pytest.raises(TypeError, match="Color: expected 4 fields, given 3"):
        color.forward((1.0, 0.5, 0.25))


def test_the_byte_path_returns_bytes_or_fills_a_buffer(color):
    native = NATIVE.pack(0.1, 0.2, 0.3, 0.4)
    stored = color.forward_bytes(native)
    assert stored == LITTLE_ENDIAN.pack(0.1, 0.2, 0.3, 0.4) == color.forward(NATIVE.unpack(native))
    assert color.reverse_bytes(stored) == native
    assert color.reverse_bytes(bytearray(stored)) == native  # any bytes-like input
    out = bytearray(32)
    assert color.forward_bytes(memoryview(native), out) == 16 and out[:16] == stored and out[16:] == bytes(16)
    back = bytearray(24)
    assert color.reverse_bytes(memoryview(out)[:16], memoryview(back)[4:20]) == 16 and back[4:20] == native


def test_byte_path_refusals(color):
    with pytest.raises(amber.TransformerError, match="forward was given 3 bytes, but Color values have 16") as error:
        color.forward_bytes(b"abc")
    assert error.value.code == lib.AMBER_E_TRANSFORMER and error.value.origin == "ColorToData"
    with pytest.raises(amber.TransformerError, match="reverse needs 16 bytes of output for Color, the buffer holds 8"):
        color.reverse_bytes(bytes(16), bytearray(8))
    # Binary has no fixed size: the plugin itself refuses a buffer too small.
    with pytest.raises(amber.TransformerError, match='"ColorToData" .* forward failed'):
        color.forward_bytes(bytes(16), bytearray(8))
    with pytest.raises(BufferError):
        color.forward_bytes(bytes(16), bytes(16))  # out must be writable
    with pytest.raises(amber.TransformerError, match="reverse failed"):
        color.reverse(b"too short")


def test_an_unknown_name_suggests_the_nearest(registry):
    with pytest.raises(amber.NotFoundError,
                       match='transformer "ColorToDat": no such transformer; did you mean ColorToData?') as error:
        registry.transformer("ColorToDat")
    assert error.value.origin == "ColorToDat"


def test_variable_size_outputs_get_a_buffer_by_the_input_size(registry):
    deflate = registry.transformer("Deflate")
    assert (deflate.input_size, deflate.output_size) == (None, None)
    text = b"amber " * 600
    packed = deflate.forward_bytes(text)  # into 4 x 3600 + 4096 bytes
    assert len(packed) < len(text) and deflate.reverse(packed) == text
    assert deflate.reverse_bytes(memoryview(packed)) == text  # 3600 bytes: within 4 x len(packed) + 4 KiB
    big = deflate.forward_bytes(bytes(100_000))  # far more than that once inflated
    with pytest.raises(amber.TransformerError, match="reverse made 100000 bytes, the buffer holds"):
        deflate.reverse_bytes(big)
    out = bytearray(100_000)
    assert deflate.reverse_bytes(big, out) == 100_000 and out == bytes(100_000)


def test_only_byte_forms_take_the_byte_path():
    utf8 = amber.shared_registry().transformer("UTF8")  # a built-in, from the shared registry
    assert (utf8.input_class, utf8.output_class) == ("String", "Binary")
    assert utf8.forward("Étranger") == "Étranger".encode() and utf8.reverse(b"abc") == "abc"
    with pytest.raises(amber.TransformerError, match="only struct, opaque and Binary values have bytes"):
        utf8.forward_bytes(b"abc")


def test_python_transformers_through_a_handle():
    registry = amber.Registry()
    registry.declare_opaque("Block", 8)
    registry.register_transformer("Shout", "String", "String",
                                  lambda text: text.upper() if text != "boom" else 1 / 0, lambda text: text.lower())
    registry.register_transformer("Pad", "Block", "Binary", lambda block: block + b"!", None)  # one way
    shout = registry.transformer("Shout")
    assert shout.forward("hey") == "HEY" and shout.reverse("HEY") == "hey"
    with pytest.raises(amber.TransformerError, match="ZeroDivisionError: division by zero"):
        shout.forward("boom")
    pad = registry.transformer("Pad")
    assert (pad.input_class, pad.input_size, pad.output_size) == ("Block", 8, None)
    assert pad.forward(b"12345678") == b"12345678!"
    assert pad.forward_bytes(b"12345678") == b"12345678!"  # no byte functions: through values, still checked
    with pytest.raises(amber.TransformerError, match="not reversible"):
        pad.reverse(b"x")
    with pytest.raises(amber.TransformerError, match="not reversible"):
        pad.reverse_bytes(b"x")


def test_a_value_of_another_class_is_refused_before_the_transformer_runs():
    registry = amber.Registry()
    seen = []
    registry.register_transformer("Shout", "String", "String", lambda text: seen.append(text) or "x", str.lower)
    with pytest.raises(amber.TransformerError):
        registry.transformer("Shout").forward(42)
    assert seen == []


def test_the_decorator_still_registers(registry):
    @registry.transformer("Twice", input="Integer", output="Integer")
    class Twice:
        def forward(self, number):
            return number * 2

    assert registry.transformer("Twice").forward(21) == 42
    with pytest.raises(TypeError, match="needs both input and output classes"):
        registry.transformer("Half", input="Integer")


def test_calls_from_several_threads_get_their_own_lengths(registry):
    # Threads call one handle at once, on outputs of different lengths: each must read its own.
    deflate = registry.transformer("Deflate")
    inputs = [random.Random(i).randbytes(100 * i) for i in range(1, 9)]  # incompressible: outputs of 8 lengths
    expected = [deflate.forward_bytes(data) for data in inputs]
    assert len(set(map(len, expected))) == len(inputs)
    failures = []

    def work(index):
        out = bytearray(4096)
        for _ in range(200):
            written = deflate.forward_bytes(inputs[index], out)
            if out[:written] != expected[index] or deflate.reverse_bytes(out[:written]) != inputs[index]:
                failures.append(index)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_call_nested_in_a_python_transformer(registry, color):
    # A Python transformer calling a handle from inside another handle's call, on the same thread.
    local = amber.Registry()
    local.register_transformer("Recolor", "Binary", "Binary",
                               lambda data: data + color.reverse_bytes(color.forward_bytes(bytes(16))), bytes)
    recolor = local.transformer("Recolor")
    out = bytearray(64)
    assert recolor.forward_bytes(b"12345", out) == 21 and out[:21] == b"12345" + bytes(16)


def test_a_closed_transformer_raises_and_a_dropped_one_is_freed(registry):
    with registry.transformer("ColorToData") as handle:
        assert handle.forward_bytes(bytes(16)) == bytes(16)
    with pytest.raises(amber.MisuseError, match="released"):
        handle.forward_bytes(bytes(16))
    with pytest.raises(amber.MisuseError, match="released"):
        handle.forward((0.0, 0.0, 0.0, 0.0))
    handle.close()  # closing again does nothing

    dropped = registry.transformer("ColorToData")
    raw = ffi.cast("amber_transformer *", dropped._handle)
    assert lib.amber_transformer_classes(ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, raw) == lib.AMBER_OK
    del dropped
    gc.collect()
    assert lib.amber_transformer_classes(ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, raw) == lib.AMBER_E_INVALID_HANDLE


def test_a_handle_outlives_its_registry(plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    handle = registry.transformer("ColorToData")
    registry.close()
    assert handle.reverse(handle.forward((1.0, 0.0, 0.0, 1.0))) == (1.0, 0.0, 0.0, 1.0)
    assert type(handle.reverse(bytes(16))).__name__ == "Color"  # the struct layout was read while the registry lived
    with pytest.raises(amber.MisuseError, match="released"):
        registry.transformer("ColorToData")


floats32 = st.floats(width=32)  # every float32, NaN and infinities included


@settings(max_examples=300, deadline=None)
@given(st.tuples(floats32, floats32, floats32, floats32))
def test_colors_come_back_exactly(color, rgba):
    native = NATIVE.pack(*rgba)
    stored = color.forward(rgba)
    assert stored == LITTLE_ENDIAN.pack(*rgba)
    assert color.forward_bytes(native) == stored  # the byte path agrees with the value path, byte for byte
    back = color.reverse(stored)
    assert NATIVE.pack(*back) == native  # bit for bit, so NaN and -0.0 count too
    assert color.reverse_bytes(stored) == native


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_any_sixteen_bytes_round_trip_on_the_byte_path(color, native):
    stored, back = bytearray(16), bytearray(16)
    assert color.forward_bytes(native, stored) == 16
    assert color.reverse_bytes(stored, back) == 16 and back == native
