"""Transformer.forward_many / reverse_many: many values per C call, with the
results and errors of one call per value."""
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import amber


@pytest.fixture(scope="module")
def registry(plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    registry.load_plugin(os.path.join(plugin_dir, "libAmberDeflatePlugin.so"))
    registry.load_plugin(os.path.join(plugin_dir, "libAmberRectPlugin.so"))
    registry.declare_opaque("Token", 4)
    registry.declare_struct("Spot", [("x", "float"), ("y", "float"), ("z", "float"), ("w", "float")])  # a Color's size
    registry.register_transformer("Flip", "Token", "Binary", lambda data: data[::-1], lambda data: data[::-1])
    return registry


def _same(left, right):
    return len(left) == len(right) and all(type(a) is type(b) and a == b for a, b in zip(left, right))


def test_colours_round_trip_as_one_call_each(registry):
    """A seeded run: the colour plugin's byte functions, struct values in, blobs out, and back."""
    color = registry.transformer("ColorToData")
    Color = registry.struct_type("Color")
    rng = random.Random(99)
    values = []
    for index in range(3000):
        channels = [rng.uniform(-1e6, 1e6) for _ in range(4)]
        values.append(Color(*channels) if index % 3 else tuple(channels) if index % 2 else list(channels))
    stored = color.forward_many(values)
    assert _same(stored, [color.forward(value) for value in values])
    back = color.reverse_many(stored)
    assert _same(back, [color.reverse(data) for data in stored])
    assert all(type(value) is Color for value in back)
    assert color.forward_many([]) == [] and color.reverse_many(iter([])) == []
    # None stays None, in place; a generator is taken as a list.
    assert color.forward_many(value for value in [None, values[1], None]) == [None, stored[1], None]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=300)), max_size=40))
def test_blobs_of_any_size_round_trip(registry, blobs):
    """Deflate: Binary to Binary, results of any size (packed, in chunks)."""
    deflate = registry.transformer("Deflate")
    packed = deflate.forward_many(blobs)
    assert _same(packed, [deflate.forward(blob) for blob in blobs])
    assert _same(deflate.reverse_many(packed), blobs)


def test_opaque_classes_and_other_classes(registry):
    flip = registry.transformer("Flip")  # a Python transformer: the byte path goes through its value functions
    tokens = [bytes([n, n + 1, n + 2, n + 3]) for n in range(0, 200, 4)]
    flipped = flip.forward_many(tokens)
    assert flipped == [token[::-1] for token in tokens] and flip.reverse_many(flipped) == tokens
    rect = registry.transformer("RectToString")  # the output is a String: value by value, same results
    Rect = registry.struct_type("Rect")
    rects = [Rect(1.0, 2.0, 3.0, float(n)) for n in range(5)]
    assert rect.forward_many(rects) == [rect.forward(value) for value in rects]
    assert rect.reverse_many(rect.forward_many(rects)) == rects


def test_nested_structs_come_back_as_named_tuples(registry):
    """A struct with a nested struct (unpacked field by field) made from blobs by a Python transformer."""
    registry.declare_struct("Pair", [("spot", "Spot"), ("tag", "int8")])
    Pair, Spot = registry.struct_type("Pair"), registry.struct_type("Spot")
    registry.register_transformer("BlobToPair", "Binary", "Pair", lambda data: (tuple(map(float, data[:4])), data[4]),
                                  lambda pair: bytes([*map(int, pair.spot), pair.tag]))
    to_pair = registry.transformer("BlobToPair")
    blobs = [bytes([n, n + 1, n + 2, n + 3, n]) for n in range(20)]
    pairs = to_pair.forward_many(blobs)
    assert pairs == [Pair(Spot(n, n + 1.0, n + 2.0, n + 3.0), n) for n in range(20)] and all(type(p.spot) is Spot for p in pairs)
    assert to_pair.reverse_many(pairs) == blobs


def test_errors_are_those_of_the_failing_value_and_name_it(registry):
    color, flip = registry.transformer("ColorToData"), registry.transformer("Flip")
    Color = registry.struct_type("Color")
    good = Color(0.0, 0.5, 1.0, 1.0)
    with pytest.raises(TypeError, match=r"^element 2: Color: expected 4 fields, given 3$"):
        color.forward_many([good, good, (1.0, 2.0, 3.0)])
    # A struct of another class with a Color's size: refused, never taken for its bytes.
    with pytest.raises(amber.TransformerError, match=r"^element 1: ColorToData: .*forward takes Color, not Spot"):
        color.forward_many([good, registry.struct_type("Spot")(1.0, 2.0, 3.0, 4.0)])
    with pytest.raises(amber.TransformerError, match=r"^element 3: "):
        color.reverse_many([bytes(16)] * 3 + [bytes(12)])
    with pytest.raises(amber.TransformerError, match=r"^element 1: .*Token"):
        flip.forward_many([b"abcd", b"abc"])  # an opaque class of 4 bytes
    with pytest.raises(amber.TransformerError, match=r"^element 0: "):
        flip.forward_many(["text, not bytes"])
    with pytest.raises(amber.ValueClassError, match="^element 0: .*too large"):
        color.forward_many([(1e300, 0.0, 0.0, 0.0)])  # too large for a float field, as forward refuses it
    with pytest.raises(amber.ValueClassError, match="^element 1: the string is not valid Unicode"):
        registry.transformer("UTF8").forward_many(["fine", "\ud800"])

