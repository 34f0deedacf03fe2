"""Column-wise inserts (Context.insert_many, Context.insert_columns through
amber_context_insert_columns): the same objects as single inserts, value by
value and type by type, for every attribute type; which columns take the
typed fast path; refusals exactly as single inserts refuse."""
import os
import random
import uuid
from collections import namedtuple
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amber
from amber import _common, ffi, lib

MODEL = {
    "valueClasses": [
        {"name": "Point", "kind": "struct", "fields": [{"name": "x", "type": "double"}, {"name": "y", "type": "double"}]},
        {"name": "Tagged", "kind": "struct", "fields": [{"name": "tag", "type": "int8"}, {"name": "at", "type": "Point"},
                                                        {"name": "ok", "type": "bool"}]},
        {"name": "Digest", "kind": "opaque"},
    ],
    "entities": [{"name": "Row", "attributes": [
        {"name": "seq", "type": "integer64"},
        {"name": "small", "type": "integer16"},
        {"name": "medium", "type": "integer32"},
        {"name": "big", "type": "integer64"},
        {"name": "price", "type": "decimal"},
        {"name": "ratio", "type": "double"},
        {"name": "weight", "type": "float"},
        {"name": "flag", "type": "boolean"},
        {"name": "when", "type": "date"},
        {"name": "title", "type": "string"},
        {"name": "blob", "type": "binary"},
        {"name": "key", "type": "uuid"},
        {"name": "link", "type": "uri"},
        {"name": "tags", "type": "transformable"},
        {"name": "color", "type": "transformable", "valueClass": "Color", "transformer": "ColorToData"},
        {"name": "spot", "type": "undefined", "transient": True, "valueClass": "Tagged"},
        {"name": "point", "type": "undefined", "transient": True, "valueClass": "Point"},
        {"name": "digest", "type": "undefined", "transient": True, "valueClass": "Digest"},
        {"name": "anything", "type": "undefined", "transient": True},
    ]}],
}
NAMES = [attribute["name"] for attribute in MODEL["entities"][0]["attributes"]]
STORED = [name for name in NAMES if name not in ("spot", "point", "digest", "anything")]
PlainColor = namedtuple("PlainColor", "r g b a")  # not one of Amber's types: packs as the attribute's class


@pytest.fixture(scope="module")
def model(plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    return amber.Model.from_dict(MODEL, registry)


def _zones():
    return st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])


def _maybe(strategy):
    return st.one_of(st.none(), strategy)


def _row_strategy(model):
    Color, Point, Tagged = (model.struct_type(name) for name in ("Color", "Point", "Tagged"))
    finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
    small_float = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)
    point = st.builds(Point, finite, finite)
    values = {
        "small": _maybe(st.integers(-32768, 32767)),
        "medium": _maybe(st.integers(-2**31, 2**31 - 1)),
        "big": _maybe(st.integers(-2**63, 2**63 - 1)),
        "price": _maybe(st.decimals(min_value=-10**9, max_value=10**9, places=4, allow_nan=False, allow_infinity=False)),
        # Ints among floats make a mixed column (value by value), converted as a single set converts them.
        "ratio": _maybe(st.one_of(finite, st.integers(-2**53, 2**53))),
        "weight": _maybe(small_float),
        "flag": _maybe(st.booleans()),
        "when": _maybe(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=_zones())),
        "title": _maybe(st.text(max_size=12)),
        "blob": _maybe(st.binary(max_size=12)),
        "key": _maybe(st.uuids()),
        "link": _maybe(st.sampled_from(["https://example.com/a?b=c#d", "mailto:someone@example.com", "file:///tmp/x"])),
        "tags": _maybe(st.lists(st.one_of(st.integers(-1000, 1000), st.text(max_size=5)), max_size=3)),
        "color": _maybe(st.one_of(st.builds(Color, small_float, small_float, small_float, small_float),
                                  st.tuples(small_float, small_float, small_float, small_float),
                                  st.builds(PlainColor, small_float, small_float, small_float, small_float))),
        "spot": _maybe(st.builds(Tagged, st.integers(-128, 127), point, st.booleans())),
        "point": _maybe(st.one_of(point, st.tuples(finite, finite))),
        "digest": _maybe(st.binary(min_size=1, max_size=8)),
        "anything": _maybe(st.one_of(st.integers(-10, 10), st.text(max_size=3), st.booleans(), finite)),
    }
    return st.lists(st.fixed_dictionaries(values), min_size=1, max_size=12)


def _same(left, right):
    """Equal in value and in type, all the way into tuples and lists."""
    if type(left) is not type(right):
        return False
    if isinstance(left, (tuple, list)):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    return left == right


def _dicts(objects):
    return [{name: obj[name] for name in NAMES} for obj in objects]


def _insert_both_ways(model, rows):
    """The rows inserted by columns and one by one, each into its own store:
    (in-context values, values fetched after a save) of each."""
    results = []
    for by_columns in (True, False):
        with amber.open(None, model) as store:
            with store.context() as ctx:
                if by_columns:
                    assert ctx.insert_many("Row", NAMES, [(seq, *(row[name] for name in NAMES[1:])) for seq, row in enumerate(rows)]) \
                        == len(rows)
                    inserted = ctx.inserted
                else:
                    inserted = [ctx.insert("Row", seq=seq, **row) for seq, row in enumerate(rows)]
                in_context = _dicts(inserted)
                ctx.save()
            with store.context() as ctx:
                fetched = [{name: obj[name] for name in STORED} for obj in ctx.fetch("Row", sort=["seq"], decode=True)]
        results.append((in_context, fetched))
    return results


def test_every_type_inserts_by_columns_as_one_by_one(model):
    """A seeded run of the differential test, large enough for every path."""
    rng = random.Random(1234)
    strategy_free_rows = []
    Color, Point, Tagged = (model.struct_type(name) for name in ("Color", "Point", "Tagged"))
    for seq in range(300):
        def maybe(make):
            return None if rng.random() < 0.2 else make()
        strategy_free_rows.append({
            "small": maybe(lambda: rng.randint(-32768, 32767)), "medium": maybe(lambda: rng.randint(-2**31, 2**31 - 1)),
            "big": maybe(lambda: rng.randint(-2**63, 2**63 - 1)),
            "price": maybe(lambda: Decimal(rng.randint(-10**8, 10**8)) / 100),
            "ratio": maybe(lambda: rng.uniform(-1e9, 1e9)), "weight": maybe(lambda: rng.uniform(-100, 100)),
            "flag": maybe(lambda: rng.random() < 0.5),
            "when": maybe(lambda: datetime(2000, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=rng.randint(0, 10**15))),
            "title": maybe(lambda: rng.choice(["", "plain", "crème brûlée 🍮", "x" * 40]) + str(seq)),
            "blob": maybe(lambda: rng.randbytes(rng.randint(0, 9))), "key": maybe(lambda: uuid.UUID(int=rng.getrandbits(128))),
            "link": maybe(lambda: f"https://example.com/{seq}"), "tags": maybe(lambda: [seq, {"k": str(seq)}]),
            "color": maybe(lambda: Color(rng.random(), 0.5, 0.25, 1.0)),
            "spot": maybe(lambda: Tagged(rng.randint(-128, 127), Point(rng.random(), -1.0), rng.random() < 0.5)),
            "point": maybe(lambda: (rng.random(), rng.random())), "digest": maybe(lambda: rng.randbytes(4)),
            "anything": maybe(lambda: rng.choice([1, "one", True, 1.5])),
        })
    (columns_context, columns_fetched), (single_context, single_fetched) = _insert_both_ways(model, strategy_free_rows)
    assert len(columns_context) == 300
    assert all(map(_same, columns_context, single_context))
    assert all(map(_same, columns_fetched, single_fetched))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_rows_insert_by_columns_as_one_by_one(model, data):
    rows = data.draw(_row_strategy(model))
    (columns_context, columns_fetched), (single_context, single_fetched) = _insert_both_ways(model, rows)
    for mine, theirs in zip(columns_context + columns_fetched, single_context + single_fetched):
        assert _same(mine, theirs), (mine, theirs)


def _kind(model, name, values):
    """The column type ColumnFiller chooses for `values` of attribute `name`
    (the value-by-value path, which may raise for these values, is not run)."""
    target = ffi.new("amber_column *")
    entity = model.entity("Row")
    return _common._columns.fill(target[0], values, entity.attribute(name), "Row", [])


def test_columns_of_one_type_take_the_typed_path(model, monkeypatch):
    monkeypatch.setattr(_common._columns, "_values", lambda target, *rest: None)
    Color, Point = model.struct_type("Color"), model.struct_type("Point")
    moment = datetime(2024, 1, 1, tzinfo=timezone.utc)
    typed = {
        "small": ([1, None, 3], lib.AMBER_VALUE_INT), "ratio": ([1.5, None], lib.AMBER_VALUE_DOUBLE),
        "flag": ([True, False, None], lib.AMBER_VALUE_BOOL), "title": (["a", "é", None], lib.AMBER_VALUE_STRING),
        "link": (["https://x.org"], lib.AMBER_VALUE_URI), "blob": ([b"", b"\x00"], lib.AMBER_VALUE_BINARY),
        "when": ([moment, None], lib.AMBER_VALUE_DATE), "key": ([uuid.uuid4()], lib.AMBER_VALUE_UUID),
        "price": ([Decimal("1.25"), None], lib.AMBER_VALUE_DECIMAL),
        "color": ([Color(1, 2, 3, 4), (1.0, 2.0, 3.0, 4.0), PlainColor(0.5, 0, 0, 1), None], lib.AMBER_VALUE_CUSTOM),
        "point": ([Point(1.0, 2.0), {"x": 0.0, "y": 1.0}], lib.AMBER_VALUE_CUSTOM),
        "digest": ([b"\x01\x02", b"\x03"], lib.AMBER_VALUE_CUSTOM),  # an opaque class's bytes
        "big": ([None, None], lib.AMBER_VALUE_INT),  # all nil: a masked column
    }
    for name, (values, kind) in typed.items():
        assert _kind(model, name, values) == kind, name
    by_value = {
        "big": [2**70, 1],  # beyond int64: refused value by value, as a single insert refuses it
        "ratio": [1.5, 2],  # ints among floats: each converted as a single set converts it
        "when": [moment, datetime(2024, 1, 1)],  # a naive datetime: refused as a single insert refuses it
        "price": [Decimal("NaN")],
        "title": ["\ud800"],  # a lone surrogate is not UTF-8
        "blob": [bytearray(b"x")],  # not exactly bytes
        "tags": [[1, 2], {"a": 1}],  # plist values
        "point": [Color(1, 2, 3, 4)],  # a struct of another class keeps its class (and is refused)
        "anything": [1, "one"],
    }
    for name, values in by_value.items():
        assert _kind(model, name, values) == lib.AMBER_COLUMN_VALUES, name


def _refusal(call):
    with pytest.raises(Exception) as caught:
        call()
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize("name, bad", [
    ("small", 40000), ("big", 2**70), ("small", 1.5), ("blob", "text, not bytes"), ("title", b"bytes, not text"),
    ("when", datetime(2024, 1, 1)), ("price", Decimal("Infinity")), ("title", "\udfff"), ("flag", 2),
    ("spot", (1, 2)), ("point", (1.0, 2.0, 3.0)), ("point", "not a point"), ("color", (1e300, 0.0, 0.0, 0.0)),
    ("link", "not a uri with spaces"),
])
def test_refusals_are_those_of_single_inserts(model, name, bad):
    """A bad value in row 2 of a column: the same exception as a single insert
    (the row number aside, and the place for the C API's reading errors), and
    nothing inserted."""
    with amber.open(None, model) as store, store.context() as ctx:
        single = _refusal(lambda: ctx.insert("Row", **{name: bad}))
        assert not ctx.has_changes
        good = {"small": 1, "big": 1, "blob": b"", "title": "", "when": datetime(2024, 1, 1, tzinfo=timezone.utc),
                "price": Decimal(1), "flag": True, "spot": (1, (0.0, 0.0), True), "point": (0.0, 0.0),
                "color": (0.0, 0.0, 0.0, 0.0), "link": "https://example.com"}[name]
        column = [good, good, bad, good]
        for call in (lambda: ctx.insert_many("Row", [name], [(value,) for value in column]),
                     lambda: ctx.insert_columns("Row", {name: column})):
            kind, message = _refusal(call)
            assert kind is single[0]
            if issubclass(kind, amber.Error) and "in row 0" not in single[1]:
                # Refused by the C API while reading the column (a URI that does not read back as given):
                # named by column, attribute and row rather than by value index.
                assert f"Row.{name}" in message and "row 2" in message, message
            else:
                assert message == single[1].replace("in row 0", "in row 2")
            assert not ctx.has_changes and ctx.inserted == []


def test_refusals_name_the_attribute_and_row(model):
    with amber.open(None, model) as store, store.context() as ctx:
        with pytest.raises(amber.ValueClassError, match=r"Row.small in row 3: expected Integer 16, given Integer 40000"):
            ctx.insert_columns("Row", {"title": ["a", "b", "c", "d"], "small": [1, 2, 3, 40000]})
        with pytest.raises(amber.ValueClassError, match=r"Row.medium in row 1: expected Integer 32, given Double 2.5"):
            ctx.insert_columns("Row", {"medium": [1, 2.5]})
        assert not ctx.has_changes


def test_insert_columns_takes_a_mapping_of_columns(model):
    with amber.open(None, model) as store, store.context() as ctx:
        assert ctx.insert_columns("Row", {"seq": range(3), "title": (f"t{n}" for n in range(3)), "ratio": [0.5, None, 2.5]}) == 3
        assert [(row.seq, row.title, row.ratio) for row in ctx.inserted] == [(0, "t0", 0.5), (1, "t1", None), (2, "t2", 2.5)]
        assert ctx.insert_columns("Row", {"seq": [], "title": []}) == 0
        assert ctx.insert_columns("Row", {}) == 0
        with pytest.raises(ValueError, match=r"Row: columns of different lengths \(seq: 2, title: 1\)"):
            ctx.insert_columns("Row", {"seq": [1, 2], "title": ["a"]})
        with pytest.raises(amber.NotFoundError, match="titel"):
            ctx.insert_columns("Row", {"titel": ["a"]})
        assert len(ctx.inserted) == 3


def test_struct_columns_pack_as_single_values_do(model):
    """pack_many is pack applied to each value, at C speed where it can be."""
    Tagged, Point, Color = (model.struct_type(name) for name in ("Tagged", "Point", "Color"))
    codecs = {name: model._codec(name) for name in ("Tagged", "Point", "Color")}
    samples = {
        "Color": [Color(0.1, 0.2, 0.3, 0.4), (1, 2, 3, 4), [0.5, 0.5, 0.5, 0.5], PlainColor(1e-40, -0.0, 3.4e38, 1)],
        "Point": [Point(1.5, -2.5), {"x": 1.0, "y": 2.0}, (3, 4)],
        "Tagged": [Tagged(1, Point(0.5, 1.5), True), (-128, (0.0, 0.0), 0)],
    }
    for name, values in samples.items():
        codec = codecs[name]
        assert codec.pack_many(values) == b"".join(map(codec.pack, values)), name
        assert codec.pack_many([]) == b""
    with pytest.raises(TypeError, match="Color: expected 4 fields, given 3"):
        codecs["Color"].pack_many([(1.0, 2.0, 3.0, 4.0), (1.0, 2.0, 3.0)])
    with pytest.raises(TypeError, match=r"Tagged.tag"):
        codecs["Tagged"].pack_many([(300, (0.0, 0.0), True)])
