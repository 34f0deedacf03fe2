"""Objects as Python objects, inserts and their refusals, and values through every path."""
import os
from datetime import datetime, timezone
from decimal import Decimal

import pytest

import amber
from conftest import filled
from amber import _values, ffi
from conftest import BOOKS


def test_an_object_reads_and_writes_as_attributes_and_items(context):
    book = context.insert("Book")  # no values: the defaults
    assert book.entity == "Book" and book.available is True
    book["title"] = "Dune"
    assert book.title == "Dune" and book["title"] == "Dune"
    assert repr(book).startswith("<amber.Object Book amber://") and book.uri in repr(book)
    values = book.to_dict()
    assert list(values) == [attribute["name"] for attribute in BOOKS["entities"][0]["attributes"]]
    assert values["title"] == "Dune" and values["pages"] is None
    with pytest.raises(AttributeError):
        book._nothing
    with pytest.raises(amber.NotFoundError, match="Book.titel: no such attribute; did you mean title?"):
        book.titel


def test_values_set_one_by_one(context):
    book = context.insert("Book", title="t", pages=1, rating=1.0, available=True)
    moment = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    book.pages, book.rating, book.weight, book.available, book.published = None, 2.5, 0.5, False, moment
    assert (book.pages, book.rating, book.weight, book.available, book.published) == (None, 2.5, 0.5, False, moment)
    context.save()
    assert context.count("Book", "available == %@ AND rating > %@ AND pages == %@", False, 2.0, None) == 1
    with pytest.raises(ValueError, match="NaN cannot be stored as a Decimal"):
        book.price = Decimal("NaN")
    with pytest.raises(TypeError, match="datetime values must be timezone-aware"):
        book.tags = [datetime(2024, 1, 1)]
    with pytest.raises(TypeError, match="set value is not plist-like"):
        book.tags = [{1, 2}]


def test_insert_many_refusals_name_the_attribute(context):
    assert context.insert_many("Book", ["title"], []) == 0
    with pytest.raises(TypeError, match="Book: a row has 1 values for 2 attributes"):
        context.insert_many("Book", ["title", "pages"], [("a",)])
    with pytest.raises(ValueError, match="Book.price: NaN cannot be stored as a Decimal"):
        context.insert_many("Book", ["title", "price"], [("a", Decimal("NaN"))])
    with pytest.raises(TypeError, match="Book.spot: Tagged: expected 3 fields, given 2"):
        context.insert_many("Book", ["title", "spot"], [("a", (1, 2))])
    assert not context.has_changes


def test_struct_values_pack_only_what_fits(model, context):
    Tagged = model.struct_type("Tagged")
    book = context.insert("Book", title="t", spot={"tag": 1, "at": (0.5, 1.5), "ok": True})
    assert book.spot == Tagged(1, (0.5, 1.5), True)
    with pytest.raises(TypeError, match="Tagged: no field 'extra'"):
        book.spot = {"tag": 1, "at": (0.0, 0.0), "ok": True, "extra": 0}
    with pytest.raises(TypeError, match="Tagged: field 'ok' is missing"):
        book.spot = {"tag": 1, "at": (0.0, 0.0)}
    with pytest.raises(TypeError, match="Point: expected a Point named tuple, a tuple or a dict, given int"):
        book.spot = (1, 2, True)


def test_from_c_refuses_an_unknown_value_type():
    value = ffi.new("amber_value *")
    value.type = 99
    with pytest.raises(TypeError, match="unknown amber value type 99"):
        _values.from_c(value, lambda name: None)


def test_every_prefetched_column_reads_nulls(context):
    context.insert("Book", title="t", available=None)
    context.save()
    book, = context.fetch("Book")
    assert "pages" in filled(book)  # read with the fetch
    assert [book[name] for name in ("pages", "rating", "published", "key", "available")] == [None] * 5


def test_decode_reads_transformed_struct_values_with_the_fetch(plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    model = amber.Model.from_dict({"entities": [{"name": "Swatch", "attributes": [
        {"name": "name", "type": "string"},
        {"name": "color", "type": "transformable", "valueClass": "Color", "transformer": "ColorToData"}]}]}, registry)
    Color = model.struct_type("Color")
    with amber.open(None, model) as store:
        with store.context() as ctx:
            ctx.insert_many("Swatch", ["name", "color"], [("sand", (0.5, 0.25, 0.125, 1.0)), (None, None)])
            ctx.save()
        with store.context() as ctx:
            swatches = ctx.fetch("Swatch", decode=True)
            # Each object's row of fetched values reaches the color's position: decoded with the fetch.
            assert all("color" in filled(swatch) for swatch in swatches)
            assert sorted((swatch.name or "", swatch.color) for swatch in swatches) == [
                ("", None), ("sand", Color(0.5, 0.25, 0.125, 1.0))]


def test_the_primary_key_comes_with_the_first_save(store):
    with store.context() as ctx:
        book = ctx.insert("Book", title="Dune")
        with pytest.raises(amber.MisuseError, match="not saved yet and has no primary key") as error:
            book.primary_key
        assert error.value.code == amber.lib.AMBER_E_UNAVAILABLE
        ctx.save()
        key = book.primary_key
        assert isinstance(key, int) and book.uri.endswith(f"/p{key}")
        ctx.insert("Book", title="Emma")
        ctx.save()
    with store.context() as ctx:
        dune, emma = ctx.fetch("Book", sort=["title"])
        assert dune.primary_key == key and emma.primary_key != key
        assert ctx.object(f"{dune.uri.rsplit('/', 1)[0]}/p{emma.primary_key}") is emma


def test_fetched_values_live_in_slots_until_a_set_or_a_rollback(store):
    with store.context() as ctx:
        ctx.insert("Book", title="First", pages=10)
        ctx.save()
    with store.context() as ctx:
        book, = ctx.fetch("Book")
        assert {"title", "pages"} <= set(filled(book))
        assert (book.title, book["pages"]) == ("First", 10)
        book.pages = 11  # a set empties every slot: values are read afresh from the library
        assert filled(book) == []
        assert (book.title, book.pages) == ("First", 11)
        again, = ctx.fetch("Book")  # the same object, its slots filled with its current (pending) values
        assert again is book and book.pages == 11 and "pages" in filled(book)
        ctx.rollback()
        assert filled(book) == []
        assert book.pages == 10
