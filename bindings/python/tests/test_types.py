"""Every attribute type round-trips through a save and a fetch in a fresh context."""
import threading
import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

import amber
from conftest import filled

VALUES = {
    "title": "Crème brûlée 🍮",
    "pages": 32767,
    "copies": -2147483648,
    "isbn13": 9780141439587,
    "price": Decimal("12345678901234567890.123456789012345678"),
    "rating": 0.1 + 0.2,
    "weight": 1.5,
    "available": False,
    "published": datetime(2024, 3, 1, 12, 30, 0, 250000, tzinfo=timezone.utc),
    "cover": b"\x00\x01\xff\x00",
    "key": uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
    "link": "https://example.com/a?b=c#d",
    "tags": ["classic", {"stars": 5, "seen": datetime(2020, 1, 1, tzinfo=timezone.utc), "raw": b"\x01",
                         "id": uuid.UUID(int=7)}, [1.5, None, True]],
}


def test_every_type_round_trips(store):
    with store.context() as ctx:
        ctx.insert("Book", **VALUES)
        ctx.save()
    with store.context() as ctx:
        book, = ctx.fetch("Book")
        for name, value in VALUES.items():
            assert book[name] == value, name
            assert type(book[name]) is type(value), name
        assert book.published.tzinfo is not None


@pytest.mark.parametrize("decode", [False, True])
def test_every_type_reads_the_same_one_by_one_and_with_a_fetch(store, decode):
    """Each value read alone (amber_object_get) and with a fetch (the batch's
    columns), in a column of one type and in one that mixes it with nulls."""
    with store.context() as ctx:
        full = ctx.insert("Book", **VALUES)
        sparse = ctx.insert("Book", title="only a title")
        one_by_one = [full.to_dict(), sparse.to_dict()]  # nothing cached yet: every value is read alone
        assert {name: one_by_one[0][name] for name in VALUES} == VALUES
        ctx.save()
    with store.context() as ctx:
        alone, = ctx.fetch("Book", "title == %@", VALUES["title"], decode=decode)
        both = ctx.fetch("Book", sort=["title"], decode=decode)
        assert [book.title for book in both] == [VALUES["title"], "only a title"]
        # decode=True reads the transformed value (tags) with the others; without, it stays for later.
        assert len(filled(alone)) == len(alone._entity.everything if decode else alone._entity.prefetched)
        for book, expected in [(alone, one_by_one[0]), (both[0], one_by_one[0]), (both[1], one_by_one[1])]:
            fetched = book.to_dict()
            assert fetched == expected
            assert [type(value) for value in fetched.values()] == [type(value) for value in expected.values()]
        assert both[1].to_dict() == {**{name: None for name in VALUES}, "title": "only a title", "available": True, "spot": None}


def test_dates_keep_their_zone_meaning(context):
    paris = timezone(timedelta(hours=1))
    moment = datetime(2024, 3, 1, 13, 30, tzinfo=paris)
    book = context.insert("Book", title="t", published=moment)
    assert book.published == moment
    with pytest.raises(TypeError, match="timezone-aware"):
        book.published = datetime(2024, 3, 1)


def test_struct_values_are_named_tuples(model, context):
    Tagged = model.struct_type("Tagged")
    Point = model.struct_type("Point")
    book = context.insert("Book", title="t")
    book.spot = (3, (1.5, -2.0), True)
    assert book.spot == Tagged(tag=3, at=Point(1.5, -2.0), ok=True)
    assert book.spot.at.y == -2.0
    book.spot = {"tag": -1, "at": {"x": 0.0, "y": 1.0}, "ok": False}
    assert book.spot == Tagged(-1, Point(0.0, 1.0), False)
    with pytest.raises(TypeError, match="Tagged: expected 3 fields, given 2"):
        book.spot = (1, 2)
    with pytest.raises(TypeError, match="Tagged.tag"):
        book.spot = (1000, (0.0, 0.0), True)


def test_wrong_types_are_refused_and_change_nothing(context):
    book = context.insert("Book", title="t", pages=10)
    with pytest.raises(amber.ValueClassError, match=r"Book.pages: expected Integer 16, given Integer 40000") as error:
        book.pages = 40000
    assert error.value.origin == "Book.pages"
    with pytest.raises(amber.ValueClassError, match="Book.title: expected String, given Integer 5"):
        book.title = 5
    with pytest.raises(amber.ValueClassError, match="Book.price: expected Decimal, given String"):
        book.price = "free"
    with pytest.raises(TypeError, match="cannot store a set"):
        book.tags = {1, 2}
    assert book.pages == 10 and book.title == "t"


def test_unknown_attribute_suggests_the_nearest_name(context):
    book = context.insert("Book", title="t")
    with pytest.raises(amber.NotFoundError, match="Book.titel: no such attribute; did you mean title?"):
        book.titel = "x"
    with pytest.raises(amber.NotFoundError, match="Bok: no such entity; did you mean Book?"):
        context.insert("Bok")
