"""Batch changes by predicate from Python (Context.batch_update and
batch_delete): updates checked against a plain Python reference over random
rows, predicates and arithmetic (an overflow refusing the whole batch);
exact decimal arithmetic; rules, uniqueness and attributes a batch cannot
set, refused with nothing changed; delete rules; the objects a context
holds, other contexts after a merge, and the store's history."""
import decimal
import os
import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import amber
from conftest import store_url

ROWS = {"entities": [{"name": "Row", "attributes": [
    {"name": "n", "type": "integer32"},
    {"name": "big", "type": "integer64"},
    {"name": "small", "type": "integer16"},
    {"name": "ratio", "type": "double"},
]}]}

INT_RANGES = {"big": (-2**63, 2**63 - 1), "small": (-2**15, 2**15 - 1)}


@pytest.fixture(scope="module")
def rows_model():
    return amber.Model.from_dict(ROWS, amber.Registry())


# The differential test: random rows, random predicates on `n` (and on the changing
# attributes themselves), add/subtract/multiply/set on integers and doubles, with sort,
# limit and offset; after each batch every row is compared with the reference.

def predicates(rows: int):
    """(predicate, arguments, test of a row dict) for the reference."""
    value = st.integers(-2, rows + 2)
    return st.one_of(
        st.just((None, (), lambda row: True)),
        value.map(lambda k: ("n < %@", (k,), lambda row: row["n"] < k)),
        value.map(lambda k: ("n >= %@", (k,), lambda row: row["n"] >= k)),
        value.map(lambda k: ("n == %@", (k,), lambda row: row["n"] == k)),
        value.map(lambda k: ("n != %@", (k,), lambda row: row["n"] != k)),
        st.tuples(value, value).map(lambda ab: ("n >= %@ AND n <= %@", ab, lambda row: ab[0] <= row["n"] <= ab[1])),
        st.tuples(value, value).map(lambda ab: ("n < %@ OR n > %@", ab, lambda row: row["n"] < ab[0] or row["n"] > ab[1])),
        st.lists(value, max_size=5).map(lambda ks: ("n IN %@", (ks,), lambda row: row["n"] in ks)),
        value.map(lambda k: ("NOT (n < %@)", (k,), lambda row: not row["n"] < k)),
        st.integers(-3000, 3000).map(lambda k: ("small > %@", (k,), lambda row: row["small"] > k)),
        st.floats(-50, 50).map(lambda k: ("ratio <= %@", (k,), lambda row: row["ratio"] <= k)),
    )


def assignments():
    """(keyword, attribute, operand): what one batch update does to one attribute."""
    integer = st.tuples(st.sampled_from(["add", "subtract", "multiply", "set"]), st.sampled_from(["big", "small"]),
                        st.integers(-400, 400))
    real = st.tuples(st.sampled_from(["add", "subtract", "multiply", "set"]), st.just("ratio"),
                     st.floats(-8, 8, allow_nan=False).map(lambda x: round(x, 3)))
    return st.lists(st.one_of(integer, real), min_size=1, max_size=3, unique_by=lambda a: a[1])


def applied(keyword: str, old, operand):
    return {"set": lambda: operand, "add": lambda: old + operand, "subtract": lambda: old - operand,
            "multiply": lambda: old * operand}[keyword]()


@st.composite
def scenarios(draw):
    count = draw(st.integers(0, 25))
    big = st.one_of(st.integers(-10**6, 10**6), st.integers(-2**63, 2**63 - 1))  # near the limits too
    rows = [{"n": n, "big": draw(big), "small": draw(st.integers(-2000, 2000)),
             "ratio": draw(st.floats(-100, 100, allow_nan=False))} for n in range(count)]
    draw(st.randoms()).shuffle(rows)  # inserted in any order: `n` is not the primary key
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        predicate = draw(predicates(count))
        ordered = draw(st.sampled_from([None, "n", "-n"]))
        limit = draw(st.integers(1, count + 1)) if ordered and draw(st.booleans()) else None
        offset = draw(st.integers(0, count)) if ordered and draw(st.booleans()) else 0
        steps.append((predicate, ordered, limit, offset, draw(assignments())))
    return rows, steps


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_batch_updates_match_a_python_reference(rows_model, scenario):
    rows, steps = scenario
    with amber.open(None, rows_model) as store:
        ctx = store.context()
        held = [ctx.insert("Row", **row) for row in rows]  # held all along: each batch refreshes them
        ctx.save()
        uri = {obj.n: obj.uri for obj in held}
        reference = {row["n"]: dict(row) for row in rows}
        for (predicate, arguments, test), ordered, limit, offset, changes in steps:
            matched = [row for row in sorted(reference.values(), key=lambda row: row["n"], reverse=ordered == "-n")
                       if test(row)]
            if ordered:
                matched = matched[offset:None if limit is None else offset + limit]
            new = {row["n"]: {name: applied(keyword, row[name], operand) for keyword, name, operand in changes}
                   for row in matched}
            overflowing = sorted({uri[n] for n, values in new.items() for name, value in values.items()
                                  if name in INT_RANGES and not INT_RANGES[name][0] <= value <= INT_RANGES[name][1]})
            keywords = {}
            for keyword, name, operand in changes:
                keywords.setdefault(keyword, {})[name] = operand
            call = lambda: ctx.batch_update("Row", predicate, *arguments, sort=[ordered] if ordered else None,
                                            limit=limit, offset=offset, **keywords)
            if overflowing:
                with pytest.raises(amber.ValidationError) as refused:
                    call()
                assert sorted({problem.object_uri for problem in refused.value.problems}) == overflowing  # each named
                assert all(problem.place in ("Row.big", "Row.small") for problem in refused.value.problems)
            else:
                assert sorted(call()) == sorted(uri[n] for n in new)
                for n, values in new.items():
                    reference[n].update(values)
            fetched = {obj.n: obj.to_dict() for obj in ctx.fetch("Row")}
            assert fetched == reference
            assert {obj.n: obj.to_dict() for obj in held} == reference
        assert not ctx.has_changes  # a batch writes to the store, not into the context's pending changes
        with store.context() as fresh:
            assert {obj.n: obj.to_dict() for obj in fresh.fetch("Row")} == reference


# The Book model of the remaining tests.

LIBRARY = {"entities": [
    {"name": "Author", "attributes": [
        {"name": "name", "type": "string"},
        {"name": "bookCount", "type": "integer64", "derived": "books.@count"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True}]},
    {"name": "Shelf", "attributes": [{"name": "label", "type": "string"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "shelf", "toMany": True,
                        "deleteRule": "deny"}]},
    {"name": "Book", "attributes": [
        {"name": "title", "type": "string", "optional": False},
        {"name": "subtitle", "type": "string"},
        {"name": "pages", "type": "integer16", "minValue": 1},
        {"name": "price", "type": "decimal"},
        {"name": "read", "type": "boolean", "default": False},
        {"name": "note", "type": "string", "transient": True},
        {"name": "shout", "type": "string", "derived": "uppercase:(title)"}],
     "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                       {"name": "shelf", "destination": "Shelf", "inverse": "books"}],
     "uniquenessConstraints": [["title"]]}]}


@pytest.fixture
def store(tmp_path):
    with amber.open(store_url(tmp_path, None), amber.Model.from_dict(LIBRARY, amber.Registry())) as opened:
        yield opened


@pytest.fixture
def books(store):
    """Five saved books (pages 100…500, prices 1.25…5.25) in a context the test uses."""
    ctx = store.context()
    made = [ctx.insert("Book", title=f"Book {i}", pages=100 * i, price=Decimal(f"{i}.25")) for i in range(1, 6)]
    ctx.save()
    yield ctx, made
    ctx.close()


def state(store) -> dict:
    """Every book's stored values, read through a new context."""
    with store.context() as ctx:
        return {book.title: (book.subtitle, book.pages, book.price, book.read) for book in ctx.fetch("Book")}


def test_set_copy_add_and_the_ids_returned(store, books):
    ctx, made = books
    changed = ctx.batch_update("Book", "pages >= %@", 300, set={"read": True}, copy={"subtitle": "title"},
                               add={"pages": 7})
    assert sorted(changed) == sorted(book.uri for book in made[2:])
    assert all(isinstance(uri, str) and ctx.object(uri) is book for uri, book in zip(sorted(changed), made[2:]))
    assert [(book.subtitle, book.pages, book.read) for book in made] == [
        (None, 100, False), (None, 200, False), ("Book 3", 307, True), ("Book 4", 407, True), ("Book 5", 507, True)]
    assert ctx.batch_update("Book", "pages > %@", 10_000, set={"read": True}) == []
    assert ctx.batch_update("Book", "title == %@", "Book 1", subtract={"pages": 99}) == [made[0].uri]
    assert made[0].pages == 1
    # Arguments, sort, limit and offset select as for fetch; variables too.
    changed = ctx.batch_update("Book", sort=["-pages"], limit=2, offset=1, set={"subtitle": "mid"})
    assert sorted(changed) == sorted([made[2].uri, made[3].uri])
    assert [book.subtitle for book in made] == [None, None, "mid", "mid", "Book 5"]
    assert ctx.batch_update("Book", "title == $T", variables={"T": "Book 2"}, multiply={"pages": 2}) == [made[1].uri]
    assert made[1].pages == 400


def test_an_integer16_overflow_is_refused_with_nothing_changed(store, books):
    ctx, made = books
    before = state(store)
    with pytest.raises(amber.ValidationError) as refused:
        ctx.batch_update("Book", "pages >= %@", 300, multiply={"pages": 100})  # 30000 fits, 40000 and 50000 do not
    assert sorted(problem.object_uri for problem in refused.value.problems) == sorted(book.uri for book in made[3:])
    assert all(problem.place == "Book.pages" for problem in refused.value.problems)
    assert refused.value.origin == "Book.pages"
    # An operand the attribute cannot hold is refused before any row is read, as obj.pages = 40000 is.
    with pytest.raises(amber.ValueClassError, match="Book.pages") as operand:
        ctx.batch_update("Book", add={"pages": 40_000})
    assert operand.value.origin == "Book.pages"
    with pytest.raises(amber.ValueClassError, match="Book.pages"):
        ctx.batch_update("Book", add={"pages": 2**70})  # beyond 64 bits: refused in Python, as a set is
    with pytest.raises(amber.ValueClassError, match="Book.pages"):
        ctx.batch_update("Book", multiply={"pages": 1.5})  # a float for an integer: never rounded
    assert state(store) == before
    assert [book.pages for book in made] == [100, 200, 300, 400, 500]


def test_decimal_arithmetic_is_exact(store):
    rng = random.Random(37)
    context = decimal.Context(prec=60)  # more than enough: every result below needs at most 38 digits
    ctx = store.context()
    prices = {f"Book {i}": Decimal(rng.randrange(1, 10**9)).scaleb(-rng.randrange(0, 6)) for i in range(40)}
    for title, price in prices.items():
        ctx.insert("Book", title=title, price=price)
    ctx.save()
    for factor, term in [(Decimal("1.1"), Decimal("0.01")), (Decimal("0.075"), Decimal("-3.333")),
                         (Decimal("12345.678901"), Decimal("1E-6")), (Decimal(-3), Decimal("0.1"))]:
        assert len(ctx.batch_update("Book", multiply={"price": factor})) == 40
        assert len(ctx.batch_update("Book", add={"price": term})) == 40
        prices = {title: context.add(context.multiply(price, factor), term) for title, price in prices.items()}
        assert {book.title: book.price for book in ctx.fetch("Book")} == prices
    assert Decimal("0.1") + Decimal("0.2") == Decimal("0.3")  # what a double would not give
    ctx.batch_update("Book", "title == 'Book 0'", set={"price": Decimal("0.1")})
    ctx.batch_update("Book", "title == 'Book 0'", add={"price": Decimal("0.2")})
    assert ctx.fetch("Book", "title == 'Book 0'")[0].price == Decimal("0.3")
    prices["Book 0"] = Decimal("0.3")
    # A result needing more than 38 digits is refused, nothing changed; so is an operand that needs more.
    # SQLite's decimal arithmetic stops at what a double-width integer holds, so it refuses every product
    # here; PostgreSQL's numeric is exact, so it refuses exactly those wider than 38 digits.
    before = state(store)
    factor = Decimal("1.0000000000000000000000000000000000001")  # 38 digits
    wider = sum(len(context.multiply(price, factor).as_tuple().digits) > 38 for price in prices.values())
    with pytest.raises(amber.ValidationError) as refused:
        ctx.batch_update("Book", multiply={"price": factor})
    assert {problem.place for problem in refused.value.problems} == {"Book.price"}
    on_server = os.environ.get("AMBER_TEST_STORE", "").startswith("postgres")
    assert len(refused.value.problems) == (wider if on_server else 40) and wider >= 30
    with pytest.raises(amber.ValueClassError, match="has 39 significant digits; a decimal holds at most 38"):
        ctx.batch_update("Book", multiply={"price": Decimal("1.00000000000000000000000000000000000001")})  # 39 digits
    assert state(store) == before
    ctx.close()


def test_a_broken_rule_is_refused_naming_the_attribute(store, books):
    ctx, made = books
    before = state(store)
    with pytest.raises(amber.ValidationError) as refused:
        ctx.batch_update("Book", subtract={"pages": 250})  # minValue 1: two books would go below it
    problems = refused.value.problems
    assert {(problem.place, problem.rule) for problem in problems} == {("Book.pages", "minValue")}
    assert sorted(problem.object_uri for problem in problems) == sorted(book.uri for book in made[:2])
    assert "Book.pages" in str(refused.value)
    with pytest.raises(amber.ValueClassError, match="required") as required:  # refused before any row is read
        ctx.batch_update("Book", "pages < 200", set={"title": None})
    assert required.value.origin == "Book.title"
    with pytest.raises(amber.ValidationError) as copied:  # nil from the rows: refused per object
        ctx.batch_update("Book", "pages < 200", copy={"title": "subtitle"})
    assert [(problem.place, problem.rule, problem.object_uri) for problem in copied.value.problems] == [
        ("Book.title", "required", made[0].uri)]
    assert state(store) == before


def test_uniqueness_is_refused(store, books):
    ctx, made = books
    before = state(store)
    with pytest.raises(amber.ValidationError) as refused:
        ctx.batch_update("Book", "pages <= 200", set={"title": "Same"})
    assert [(problem.place, problem.rule) for problem in refused.value.problems] == [("Book(title)", "uniqueness")]
    ctx.batch_update("Book", "pages == 100", set={"title": "Unique"})  # one object: no clash
    before["Unique"] = before.pop("Book 1")
    assert state(store) == before
    assert made[0].title == "Unique" and made[0].shout == "UNIQUE"  # derived values are computed anew


def test_attributes_a_batch_cannot_set_are_refused(store, books):
    ctx, made = books
    before = state(store)
    for changes, place in [({"set": {"note": "x"}}, "Book.note"),  # transient
                           ({"set": {"shout": "X"}}, "Book.shout"),  # derived
                           ({"copy": {"subtitle": "note"}}, "Book.note"),  # copied from a transient
                           ({"set": {"pages": 5}, "add": {"pages": 1}}, "Book.pages")]:  # set twice
        with pytest.raises(amber.ValueClassError) as refused:
            ctx.batch_update("Book", **changes)
        assert isinstance(refused.value, ValueError) and refused.value.origin == place, refused.value
    with pytest.raises(amber.ValueClassError, match="derived"):
        ctx.batch_update("Author", set={"bookCount": 3})
    with pytest.raises(amber.ValueClassError, match="given String"):
        ctx.batch_update("Book", set={"pages": "many"})
    with pytest.raises(amber.ValueClassError, match="at least one attribute"):
        ctx.batch_update("Book")
    # Names are looked up as for objects: the nearest name is suggested.
    with pytest.raises(amber.NotFoundError, match="did you mean pages"):
        ctx.batch_update("Book", add={"pagez": 1})
    with pytest.raises(amber.NotFoundError, match="did you mean Book"):
        ctx.batch_update("Bok", add={"pages": 1})
    with pytest.raises(amber.UnknownKeyPathError, match="did you mean pages"):
        ctx.batch_update("Book", "pagez > 1", add={"pages": 1})
    with pytest.raises(amber.PredicateError, match="position"):
        ctx.batch_update("Book", "pages >", add={"pages": 1})
    with pytest.raises(amber.ArgumentError, match="must be a mapping"):
        ctx.batch_update("Book", set=[("pages", 1)])
    with pytest.raises(amber.ArgumentError, match="attribute name"):
        ctx.batch_update("Book", set={1: 2})
    with pytest.raises(amber.ArgumentError, match="attribute name"):
        ctx.batch_update("Book", copy={"subtitle": 3})
    assert state(store) == before


def test_held_objects_see_the_new_values_and_keep_their_own(store, books):
    ctx, made = books
    fetched = ctx.fetch("Book", sort=["pages"])  # values cached in the objects by the fetch
    assert fetched == made and fetched[0].pages == 100
    made[1].subtitle = "mine"  # set here, not saved: kept through the batch
    ctx.batch_update("Book", set={"subtitle": "theirs"}, add={"pages": 1})
    assert [book.pages for book in fetched] == [101, 201, 301, 401, 501]
    assert [book.subtitle for book in fetched] == ["theirs", "mine", "theirs", "theirs", "theirs"]
    assert ctx.has_changes and ctx.updated == [made[1]]
    ctx.save()
    assert state(store)["Book 2"] == ("mine", 201, Decimal("2.25"), False)


def test_other_contexts_see_the_changes_after_merging(store, books):
    ctx, made = books
    other = store.context()
    theirs = other.fetch("Book", sort=["pages"])
    assert theirs[4].price == Decimal("5.25")
    ctx.batch_update("Book", "price > %@", Decimal(3), multiply={"price": Decimal("0.8")})
    assert theirs[4].price == Decimal("5.25")  # not merged yet
    other.merge_saved_changes()
    assert [book.price for book in theirs] == [Decimal("1.25"), Decimal("2.25"), Decimal("2.6"), Decimal("3.4"), Decimal("4.2")]
    ctx.batch_delete("Book", "pages > 400")
    other.merge_saved_changes()
    assert [book.title for book in other.fetch("Book", sort=["pages"])] == ["Book 1", "Book 2", "Book 3", "Book 4"]
    other.close()


def test_the_history_records_a_batch(store, books):
    ctx, made = books
    ctx.name, ctx.author = "batch", "alice"
    mark = store.history_token()
    changed = ctx.batch_update("Book", "pages > 300", add={"pages": 1}, set={"read": True})
    (transaction,) = store.history(after=mark)
    assert (transaction.context, transaction.author) == ("batch", "alice")
    assert sorted((change.kind, change.object, sorted(change.keys)) for change in transaction.changes) == \
        sorted(("updated", uri, ["pages", "read"]) for uri in changed)
    mark = store.history_token()
    deleted = ctx.batch_delete("Book", "read == %@", True)
    (transaction,) = store.history(after=mark)
    assert sorted((change.kind, change.object) for change in transaction.changes) == sorted(("deleted", uri) for uri in deleted)
    assert sorted(deleted) == sorted(changed)


def test_batch_delete_nullifies_the_other_side(store):
    ctx = store.context()
    ada = ctx.insert("Author", name="Ada")
    kept, gone, also_gone = (ctx.insert("Book", title=title, pages=pages) for title, pages in [("Kept", 10), ("Gone", 20), ("Also", 30)])
    for book in (kept, gone, also_gone):
        book.author = ada
    ctx.save()
    uris = {gone.uri, also_gone.uri}
    assert ada.bookCount == 3
    deleted = ctx.batch_delete("Book", "pages >= %@", 20)
    assert sorted(deleted) == sorted(uris)
    assert list(ada.books) == [kept] and ada.bookCount == 1  # the held author's link and its derived count
    for uri in uris:
        with pytest.raises(amber.NotFoundError):
            ctx.object(uri)
    with pytest.raises(amber.MisuseError):
        gone.title = "again"  # a deleted object left the context
    assert ctx.batch_delete("Book", "pages > 1000") == []
    with store.context() as fresh:
        (author,) = fresh.fetch("Author")
        assert [book.title for book in author.books] == ["Kept"] and author.bookCount == 1
        assert [book.title for book in fresh.fetch("Book")] == ["Kept"]
    assert store.check() == []
    ctx.close()


def test_batch_delete_refused_by_a_deny_rule(store, books):
    ctx, made = books
    shelf = ctx.insert("Shelf", label="A")
    made[0].shelf = shelf
    ctx.save()
    with pytest.raises(amber.ValidationError) as refused:
        ctx.batch_delete("Shelf")
    assert [(problem.place, problem.rule) for problem in refused.value.problems] == [("Shelf.books", "deny")]
    assert refused.value.origin == "Shelf.books"
    assert [s.label for s in ctx.fetch("Shelf")] == ["A"] and made[0].shelf is shelf
    made[0].shelf = None
    ctx.save()
    uri = shelf.uri
    assert ctx.batch_delete("Shelf") == [uri]
    assert ctx.fetch("Shelf") == []
    with pytest.raises(amber.PredicateError):
        ctx.batch_delete("Book", "pages >")
    with pytest.raises(amber.NotFoundError, match="did you mean Book"):
        ctx.batch_delete("Bok")
