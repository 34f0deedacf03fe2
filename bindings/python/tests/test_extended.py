"""Extended attributes from Python: an extensible entity's objects take names
the model does not know, as attributes and items; values of every native
type read back exactly after reopening (a Hypothesis property); predicates
on them agree with the same test done in Python; they are tracked, undone
and merged per key; bad names and unstorable values raise naming the key."""
import datetime
import decimal
import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amber
from conftest import store_url
from amber._values import kept_seconds

MODEL = {"entities": [
    {"name": "Book", "extensible": True, "attributes": [{"name": "title", "type": "string"}]},
    {"name": "Shelf", "attributes": [{"name": "label", "type": "string"}]},
]}

UTC = datetime.timezone.utc

# Values whose Python type and value survive the C boundary exactly.
scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-2**63, max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(max_size=32),
    st.uuids(),
    st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30), timezones=st.just(UTC))
    # As a date reads back (seconds since 2001 in a double), and only those that then hold still.
    .map(lambda d: datetime.datetime.fromtimestamp(kept_seconds(d.timestamp()), UTC))
    .filter(lambda d: datetime.datetime.fromtimestamp(kept_seconds(d.timestamp()), UTC) == d),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**12, max_value=10**12).map(lambda d: d.normalize()),
)
keys = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,12}", fullmatch=True).filter(lambda k: k.lower() != "title")


@pytest.fixture
def model():
    return amber.Model.from_dict(MODEL)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(values=st.dictionaries(keys, scalars, max_size=6))
def test_values_read_back_exactly(tmp_path_factory, model, values):
    folder = tmp_path_factory.mktemp("extended")
    url = store_url(folder, folder / "x.amber")
    with amber.open(url, model) as store, store.context() as ctx:
        book = ctx.insert("Book", title="t")
        for key, value in values.items():
            book[key] = value
        ctx.save()
    with amber.open(url, model) as store, store.context() as ctx:
        book = ctx.fetch("Book")[0]
        assert book.extended_keys() == sorted(values)
        for key, value in values.items():
            read = book[key]
            assert type(read) is type(value) and read == value, (key, value, read)


def test_attributes_items_and_errors(model):
    with amber.open(None, model) as store, store.context() as ctx:
        assert store.model.entity("Book").extensible and not store.model.entity("Shelf").extensible
        book = ctx.insert("Book", title="Dune")
        book.shelf = "B2"
        book["copies"] = 3
        assert (book.shelf, book["copies"], book.nothing) == ("B2", 3, None)
        assert book.to_dict() == {"title": "Dune", "shelf": "B2", "copies": 3}
        book.copies = None
        assert book.extended_keys() == ["shelf"]
        with pytest.raises(amber.ValueClassError) as clash:
            book["Title"] = "x"
        assert "Book.Title" in str(clash.value) and "clashes with the modelled title" in str(clash.value)
        with pytest.raises(amber.ValueClassError) as name:
            book["2nd"] = 1
        assert "Book.2nd" in str(name.value)
        deep = 1
        for _ in range(40):
            deep = [deep]
        with pytest.raises(amber.ValueClassError):
            book["nested"] = deep
        assert book.extended_keys() == ["shelf"]
        shelf = ctx.insert("Shelf")
        with pytest.raises(amber.NotFoundError):
            shelf.colour = "red"
        with pytest.raises(amber.NotFoundError):
            shelf.colour
        assert shelf.extended_keys() == []


def test_predicates_agree_with_python(tmp_path, model):
    rng = random.Random(12)
    words = ["abc", "abd", "Bob", "bébé", "zed"]
    with amber.open(store_url(tmp_path, None), model) as store, store.context() as ctx:
        samples = []
        for index in range(250):
            values = {}
            if rng.random() < 0.8:
                values["level"] = rng.randint(-50, 50)
            if rng.random() < 0.8:
                values["tag"] = rng.choice(words)
            if rng.random() < 0.8:
                values["due"] = datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(days=rng.randint(0, 60))
            if rng.random() < 0.8:
                values["price"] = decimal.Decimal(rng.randint(0, 4000)) / 100
            ctx.insert("Book", title=f"b{index:03d}", **values)
            samples.append((f"b{index:03d}", values))
        ctx.save()
        cutoff = datetime.datetime(2026, 1, 20, tzinfo=UTC)
        cases = [
            ("level > %@", [10], lambda v: v.get("level", -99) > 10),
            ("level == nil", [], lambda v: "level" not in v),
            ("tag BEGINSWITH[c] 'a'", [], lambda v: v.get("tag", "").lower().startswith("a")),
            ("tag IN %@", [["Bob", "zed"]], lambda v: v.get("tag") in ("Bob", "zed")),
            ("due < %@", [cutoff], lambda v: "due" in v and v["due"] < cutoff),
            ("price >= %@", [decimal.Decimal("12.5")], lambda v: v.get("price", -1) >= decimal.Decimal("12.5")),
            ("level < 0 AND tag == 'abc'", [], lambda v: v.get("level", 0) < 0 and v.get("tag") == "abc"),
        ]
        for predicate, arguments, test in cases:
            expected = sorted(title for title, values in samples if test(values))
            assert expected, predicate
            fetched = sorted(book.title for book in ctx.fetch("Book", predicate, *arguments))
            assert fetched == expected, predicate
            assert ctx.count("Book", predicate, *arguments) == len(expected)
        ordered = [book.level for book in ctx.fetch("Book", "level != nil", sort=["-level"])]
        assert ordered == sorted(ordered, reverse=True)


def test_undo_and_merge_per_key(tmp_path, model):
    with amber.open(store_url(tmp_path, tmp_path / "m.amber"), model) as store, store.context() as ctx, store.context() as other:
        book = ctx.insert("Book", title="Dune")
        book.shelf = "A1"
        ctx.save()
        ctx.enable_undo()
        book.shelf = "B2"
        book.copies = 2
        assert ctx.undo()
        assert book.extended_keys() == ["shelf"] and book.shelf == "B2"
        theirs = other.fetch("Book")[0]
        theirs.note = "signed"
        other.save()
        ctx.refresh(book)
        assert (book.shelf, book.note) == ("B2", "signed")
        ctx.save()
        reports = []
        other.add_observer(reports.append)
        other.merge_saved_changes()
        assert (theirs.shelf, theirs.note) == ("B2", "signed")
        assert reports[-1].refreshed[0].keys == ("shelf",)


def test_plain_uuid_and_string_keys(model):
    code = uuid.uuid4()
    with amber.open(None, model) as store, store.context() as ctx:
        ctx.insert("Book", title="a", code=code)
        ctx.insert("Book", title="b", code=str(code))
        ctx.save()
        assert [b.title for b in ctx.fetch("Book", "code == %@", code)] == ["a"]
        assert [b.title for b in ctx.fetch("Book", "code == %@", str(code))] == ["b"]


def test_insert_with_extended_keys_is_one_undo_step_and_all_or_nothing(model):
    with amber.open(None, model) as store, store.context() as ctx:
        ctx.enable_undo()
        book = ctx.insert("Book", title="Dune", shelf="B2", copies=2)
        assert (book.shelf, book.copies) == ("B2", 2)
        assert ctx.undo()
        assert ctx.inserted == [] and not ctx.undo()
        with pytest.raises(amber.ValueClassError):
            ctx.insert("Book", title="Emma", shelf="C3", Title="clash")
        assert ctx.inserted == []
        ctx.save()
        assert ctx.count("Book") == 0


def test_pending_changes_list_extended_keys_as_the_save_does(tmp_path, model):
    with amber.open(tmp_path / "p.amber", model) as store, store.context() as ctx:
        book = ctx.insert("Book", title="Dune", shelf="S1")
        ctx.save()
        ctx.enable_undo()
        saved = []
        ctx.add_observer(saved.append)
        book.shelf = "S2"
        book.copies = 3
        book.title = "Dune Messiah"
        pending = ctx.pending_changes()
        assert [(change.object, change.keys) for change in pending.updated] == [(book, ("title", "copies", "shelf"))]
        ctx.save()
        assert saved[-1].updated[0].keys == pending.updated[0].keys
        # Undoing the group that changed one makes it pending again, and it is listed.
        ctx.undo()  # the title
        ctx.undo()  # copies
        ctx.undo()  # the shelf
        assert book.shelf == "S1" and ctx.pending_changes().updated[0].keys == ("title", "copies", "shelf")
