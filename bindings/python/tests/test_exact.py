"""Exact or refused, from Python: every value reads back after save and
reopen as it was set (type and value), or the set raises an amber.Error
naming the attribute and nothing changes. Hypothesis draws the values; a
plain statement (`_must_refuse`) says which must be refused."""
import math
import struct
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amber

MODEL = {"entities": [{"name": "Sample", "attributes": [
    {"name": "seq", "type": "integer64"},
    {"name": "i16", "type": "integer16"},
    {"name": "i64", "type": "integer64"},
    {"name": "ratio", "type": "double"},
    {"name": "when", "type": "date"},
    {"name": "name", "type": "string"},
    {"name": "blob", "type": "binary"},
    {"name": "price", "type": "decimal"},
    {"name": "archived", "type": "transformable"},
    {"name": "json", "type": "transformable", "transformer": "JSON"},
]}]}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

dates = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999),
                     timezones=st.just(timezone.utc))
floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 0.0, 1.0, 1e308, 5e-324])
ints = st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | st.sampled_from([2 ** 63 - 1, -(2 ** 63), 2 ** 63, 2 ** 64 + 1])
keys = st.text(max_size=4) | st.sampled_from(["$date", "$binary", "$uuid", "$float", "$dictionary"])
scalars = st.none() | st.booleans() | ints | floats | st.text(max_size=6) | st.binary(max_size=6) | dates | st.uuids()
plists = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3)
                      | st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=2)
                      | st.tuples(inner, inner), max_leaves=8)
# Any sign, up to 38 digits (leading and trailing zeros too) and any written exponent a decimal holds.
decimals = st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
    lambda d: len(d.as_tuple().digits) <= 38 and -100 < d.as_tuple().exponent < 100) | st.builds(
    lambda sign, digits, exponent: Decimal((sign, tuple(digits), exponent)),
    st.integers(0, 1), st.lists(st.integers(0, 9), min_size=1, max_size=38), st.integers(-128, 100))


def _date_kept(value: datetime) -> bool:
    """Whether a date, a double count of seconds since 2001, holds `value` to the microsecond (the plain statement)."""
    seconds = (value - _EPOCH) / timedelta(seconds=1)
    kept = (seconds - 978307200.0) + 978307200.0
    try:
        return datetime.fromtimestamp(kept, timezone.utc) == value
    except (OverflowError, ValueError):
        return False


def _bad_item(value) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int):
        return not -(2 ** 63) <= value < 2 ** 63
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, datetime):
        return not _date_kept(value)
    if isinstance(value, tuple):
        return True
    if isinstance(value, list):
        return any(map(_bad_item, value))
    if isinstance(value, dict):
        return any(not isinstance(key, str) for key in value) or any(map(_bad_item, value.values()))
    return False


def _must_refuse(name: str, value) -> bool:
    if name in ("i16",):
        return not -(2 ** 15) <= value < 2 ** 15
    if name in ("i64",):
        return not -(2 ** 63) <= value < 2 ** 63
    if name == "ratio":
        return isinstance(value, float) and math.isnan(value)
    if name == "when":
        return not _date_kept(value)
    if name in ("archived", "json"):
        if isinstance(value, float) and math.isnan(value):
            return True  # a stored attribute refuses NaN
        if name == "json" and isinstance(value, float) and math.isinf(value):
            return True  # JSON holds no infinity (the JSON transformer refuses it when the save encodes)
        return _bad_item(value)
    return False


def _same(a, b) -> bool:
    """Equal in type and value: 1.0 is not 1, -0.0 is not 0.0, NaN is NaN, dict order aside."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return a == b


@pytest.fixture(scope="module")
def model():
    return amber.Model.from_dict(MODEL)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.fixed_dictionaries({
    "i16": st.integers(-(2 ** 16), 2 ** 16), "i64": ints, "ratio": floats, "when": dates,
    "name": st.text(max_size=8), "blob": st.binary(max_size=8), "archived": plists, "json": plists,
}), min_size=1, max_size=6))
def test_values_read_back_exactly_after_reopen_or_are_refused_naming_the_attribute(model, tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("exact") / "exact.amber"
    expected = []
    with amber.open(path, model) as store:
        with store.context() as ctx:
            for seq, row in enumerate(rows):
                obj = ctx.insert("Sample", seq=seq)
                kept = {}
                for name, value in row.items():
                    if _must_refuse(name, value):
                        with pytest.raises(amber.Error) as refused:
                            setattr(obj, name, value)
                            ctx.save()  # the JSON transformer refuses infinity when it encodes
                        assert f"Sample.{name}" in str(refused.value), str(refused.value)
                        if getattr(obj, name) is not None:  # refused at save: take it back
                            setattr(obj, name, None)
                        continue
                    setattr(obj, name, value)
                    kept[name] = value
                expected.append(kept)
    with amber.open(path, model) as store:
        with store.context() as ctx:
            fetched = sorted(ctx.fetch("Sample"), key=lambda o: o.seq)
            decoded = sorted(ctx.fetch("Sample", decode=True), key=lambda row: row["seq"])
            assert len(fetched) == len(expected)
            for obj, values, row in zip(fetched, expected, decoded):
                for name, value in values.items():
                    want = 0.0 if name == "ratio" and value == 0 else value  # a REAL column holds one zero (docs/values.md)
                    assert _same(getattr(obj, name), want), (name, value, getattr(obj, name))
                    assert _same(row[name], want), (name, value, row[name])


@settings(max_examples=200, deadline=None)
@given(value=decimals)
def test_decimals_read_back_with_their_digits(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("decimal") / "d.amber"
    with amber.open(path, amber.Model.from_dict(MODEL)) as store:
        with store.context() as ctx:
            ctx.insert("Sample", seq=0, price=value)
    with amber.open(path) as store:
        with store.context() as ctx:
            back = ctx.fetch("Sample")[0].price
            assert _same(back, value), (value, back)  # the digits and the exponent: 12.30 stays 12.30
            assert ctx.count("Sample", "price == %@", value) == 1  # == compares numbers: 12.3 finds 12.30


def test_decimals_that_cannot_be_kept_exactly_are_refused(tmp_path):
    with amber.open(tmp_path / "d.amber", amber.Model.from_dict(MODEL)) as store:
        with store.context() as ctx:
            obj = ctx.insert("Sample", seq=0)
            for bad in [Decimal("1" * 39), Decimal("1E-129"), Decimal("1E+200"), Decimal("NaN"), Decimal("-Infinity")]:
                with pytest.raises(amber.ValueClassError, match="Sample.price"):
                    obj.price = bad
            # The error says which limit the number broke.
            for bad, limit in [(Decimal("1" * 39), "39 significant digits; a decimal holds at most 38"),
                               (Decimal("1E-129"), "exponent is -129"), (Decimal("1E+200"), "exponent is 200")]:
                with pytest.raises(amber.ValueClassError, match=limit):
                    obj.price = bad
            obj.price = Decimal("-0.00")
            assert str(obj.price) == "-0.00"


def test_the_reported_changes_are_gone(tmp_path):
    """The values the issue found changed in silence, each now exact or refused."""
    with amber.open(tmp_path / "r.amber", amber.Model.from_dict(MODEL)) as store:
        with store.context() as ctx:
            obj = ctx.insert("Sample", seq=1)
            obj.archived = [1.0, 2 ** 63 - 1, -0.0, {"b": 1, "a": 2}, {"$date": "not a date"}]
            obj.json = {"x": [1.0, 1]}
            for bad, message in [({1: "a"}, "keys must be str"), ([2 ** 64 + 1], "does not fit in 64 bits"),
                                 ([float("nan")], "NaN"), ([1e400], "infinity"), ((1, 2), "tuple")]:
                with pytest.raises(amber.ValueClassError, match=message) as refused:
                    obj.archived = bad
                assert refused.value.origin == "Sample.archived"
            with pytest.raises(amber.ValueClassError, match="Sample.ratio.*NaN"):
                obj.ratio = float("nan")
            with pytest.raises(amber.ValueClassError, match="Sample.when.*cannot be held exactly"):
                obj.when = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)
            with pytest.raises(amber.ValueClassError, match="Sample.when.*cannot be held exactly"):
                obj.when = datetime(3000, 1, 1, 0, 0, 0, 123457, tzinfo=timezone.utc)
            obj.when = datetime(3000, 1, 1, 0, 0, 0, 125000, tzinfo=timezone.utc)  # a fraction the double holds
            with pytest.raises(amber.ValueClassError, match="Sample.i64.*64 bits"):
                obj.i64 = 2 ** 64 + 1
    with amber.open(tmp_path / "r.amber") as store:
        with store.context() as ctx:
            obj = ctx.fetch("Sample")[0]
            assert _same(obj.archived, [1.0, 2 ** 63 - 1, -0.0, {"a": 2, "b": 1}, {"$date": "not a date"}])
            assert _same(obj.json, {"x": [1.0, 1]})
            assert obj.when == datetime(3000, 1, 1, 0, 0, 0, 125000, tzinfo=timezone.utc)


def test_a_transformer_that_loses_a_value_or_is_interrupted_writes_nothing(tmp_path):
    registry = amber.Registry()
    registry.register_transformer("Vanishes", "String", "Binary", lambda value: None, lambda data: data.decode())
    interrupt = {"now": False, "calls": 0}

    def forward(value):
        interrupt["calls"] += 1
        if interrupt["now"]:
            raise KeyboardInterrupt
        return value.encode()
    registry.register_transformer("Bytes", "String", "Binary", forward, lambda data: data.decode())
    model = amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [
        {"name": "seq", "type": "integer64"},
        {"name": "lost", "type": "transformable", "valueClass": "String", "transformer": "Vanishes"},
        {"name": "text", "type": "transformable", "valueClass": "String", "transformer": "Bytes"}]}]}, registry)
    with amber.open(tmp_path / "t.amber", model) as store:
        ctx = store.context()
        note = ctx.insert("Note", seq=1, lost="kept")
        with pytest.raises(amber.ValidationError, match='Note.lost: transformer "Vanishes".*returned nil for a String value'):
            ctx.save()
        note.lost = None
        note.text = "first"
        ctx.save()
        note.text = "second"
        interrupt["now"] = True
        with pytest.raises(KeyboardInterrupt):  # Ctrl-C stays Ctrl-C, and the save it cut short wrote nothing
            ctx.save()
        # With many values to encode, the save stops at the interrupted one: no Python code runs for the rest.
        others = [ctx.insert("Note", seq=n, text=f"n{n}") for n in range(2, 500)]
        interrupt["calls"] = 0
        with pytest.raises(KeyboardInterrupt):
            ctx.save()
        assert interrupt["calls"] == 1
        for other in others:
            ctx.delete(other)
        interrupt["now"] = False
        assert store.context().fetch("Note")[0].text == "first"
        assert note.text == "second"  # the pending change is kept
        ctx.rollback()


def test_deleted_objects_and_unknown_names_answer_as_they_should(tmp_path):
    with amber.open(tmp_path / "d.amber", amber.Model.from_dict(MODEL)) as store:
        ctx = store.context()
        obj = ctx.insert("Sample", seq=1, name="x")
        ctx.save()
        ctx.delete(obj)
        assert obj.name == "x"  # a pending deletion can still be read (undo, observers)
        ctx.delete(obj)  # and deleting again before the save does nothing
        ctx.save()
        with pytest.raises(amber.MisuseError, match="deleted, and the deletion saved"):
            obj.name
        with pytest.raises(amber.MisuseError, match="deleted, and the deletion saved"):
            ctx.delete(obj)
        with pytest.raises(amber.UnknownKeyPathError, match="Sample.nmae: no such attribute; did you mean name") as unknown:
            ctx.fetch("Sample", "seq > 0 AND nmae == 'x'")
        assert unknown.value.origin == "position 13"
        assert isinstance(unknown.value, amber.PredicateError) and isinstance(unknown.value, amber.NotFoundError)


def test_struct_classes_reach_python_transformers_as_named_tuples_after_the_registry_closes(tmp_path):
    registry = amber.Registry()
    seen = []

    def forward(point):
        seen.append(point)
        return f"{point.x},{point.y}"

    def reverse(text):
        x, y = map(float, text.split(","))
        return (x, y)
    registry.register_transformer("PointToText", "Point", "String", forward, reverse)
    model = amber.Model.from_dict({
        "valueClasses": [{"name": "Point", "kind": "struct", "fields": [{"name": "x", "type": "double"}, {"name": "y", "type": "double"}]}],
        "entities": [{"name": "Pin", "attributes": [
            {"name": "at", "type": "transformable", "valueClass": "Point", "transformer": "PointToText"}]}]}, registry)
    with amber.open(tmp_path / "p.amber", model) as store:
        registry.close()  # the docstring's promise: models bound with it keep working
        with store.context() as ctx:
            ctx.insert("Pin", at=(1.5, -2.0))
        with store.context() as ctx:
            pin, = ctx.fetch("Pin")
            assert pin.at == (1.5, -2.0) and type(pin.at).__name__ == "Point"
    assert len(seen) == 1 and seen[0].x == 1.5 and type(seen[0]).__name__ == "Point"


def test_a_transformer_can_be_replaced_explicitly_as_a_notebook_cell_run_again_does(tmp_path):
    registry = amber.Registry()

    @registry.transformer("Shout", input="String", output="String")
    class Shout:
        def forward(self, text): return text.upper()
        def reverse(self, text): return text

    with pytest.raises(amber.ModelError, match='transformer "Shout"'):
        registry.register_transformer("Shout", "String", "String", str.lower, str.lower)

    @registry.transformer("Shout", input="String", output="String", replace=True)
    class Louder:
        def forward(self, text): return text.upper() + "!"
        def reverse(self, text): return text

    model = amber.Model.from_dict({"entities": [{"name": "Line", "attributes": [
        {"name": "text", "type": "transformable", "valueClass": "String", "transformer": "Shout"}]}]}, registry)
    with amber.open(tmp_path / "s.amber", model) as store:
        with store.context() as ctx:
            ctx.insert("Line", text="hi")
        registry.register_transformer("Shout", "String", "String", lambda t: t + "?", lambda t: t, replace=True)
        with store.context() as ctx:  # a model bound before keeps the transformer it bound
            ctx.insert("Line", text="ho")
        with store.context() as ctx:
            assert sorted(line.text for line in ctx.fetch("Line")) == ["HI!", "HO!"]
    with pytest.raises(amber.ModelError, match="JSON"):
        registry.register_transformer("JSON", "String", "String", str, str, replace=True)  # built-ins stay
