"""Fetches see the context's own changes, as Core Data's do: the newcomer's
program (insert_many then fetch and count; change then fetch by the new
value), the store's answer alone with include_pending=False, Context.filter
on a list of objects, and a Hypothesis differential: a fetch with unsaved
changes equals the store's answer once they are saved."""
import sys
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import amber
from conftest import store_url

TITLES = ["Dune", "dune", "Emma", "Émile", "Ulysses", "Beloved", "b"]


def titles(objects):
    return [book.title for book in objects]


def test_the_newcomers_program_sees_its_own_changes(context):
    context.insert_many("Book", ["title", "pages"], [(f"B{n}", n + 1) for n in range(20)])
    assert context.count("Book") == 20
    assert len(context.fetch("Book")) == 20
    assert titles(context.fetch("Book", "pages > %@", 18, sort=["title"])) == ["B18", "B19"]
    assert context.count("Book", include_pending=False) == 0
    context.save()

    first = context.fetch("Book", "title == %@", "B0")[0]
    first.title = "zzz"
    assert context.fetch("Book", "title == %@", "B0") == []
    assert context.fetch("Book", "title == %@", "zzz") == [first]
    assert context.fetch("Book", "title == %@", "B0", include_pending=False) == [first]
    assert context.fetch("Book", sort=["-title"], limit=1) == [first]

    assert len(context.fetch("Book", limit=sys.maxsize, offset=1)) == 19  # no overflow: a huge limit is none

    context.delete(first)
    assert context.count("Book") == 19
    assert context.count("Book", include_pending=False) == 19  # the store's rows, less those deleted here
    added = context.insert("Book", title="A new one", pages=3)
    assert titles(context.fetch("Book", sort=["title"], limit=2)) == ["A new one", "B1"]
    assert context.fetch("Book", "pages == 3")[0:2] == [context.fetch("Book", "title == 'B2'")[0], added]


def test_filter_judges_any_list_in_memory(context):
    books = [context.insert("Book", title=title, pages=index + 1) for index, title in enumerate(TITLES)]
    assert titles(context.filter(books, "title BEGINSWITH[cd] %@", "e", sort=["title"])) == ["Emma", "Émile"]
    # Text sorts by its UTF-8 bytes, as the stores sort it: "dune" > "Emma" > "Dune".
    assert titles(context.filter(books, "pages <= 3", sort=["-title"], offset=1, limit=1)) == ["Emma"]
    assert context.filter(books) == books
    assert context.filter([]) == []
    # Transient attributes may be tested in memory (a fetch cannot).
    assert len(context.filter(books, "spot == nil")) == len(books)
    with pytest.raises(amber.UnknownKeyPathError, match="titel"):
        context.filter(books, "titel == 'Dune'")
    with pytest.raises(amber.PredicateError, match="cannot compare"):
        context.filter(books, "title < 3")
    with pytest.raises(amber.ArgumentError, match=r"objects\[1\]"):
        context.filter([books[0], "Dune"])


def test_an_object_of_another_context_is_refused(store, context):
    other = store.context()
    try:
        stranger = other.insert("Book", title="Elsewhere")
        with pytest.raises(amber.MisuseError, match="another context"):
            context.filter([stranger])
    finally:
        other.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_fetch_with_pending_changes_equals_the_stores_answer_once_saved(model, tmp_path, data):
    rows = data.draw(st.lists(st.tuples(st.sampled_from(TITLES), st.integers(1, 9), st.sampled_from([None, "1.5", "2.50", "10"])),
                              min_size=1, max_size=12, unique_by=lambda row: row[0]))
    with amber.open(store_url(tmp_path, None), model) as store:
        with store.context() as context:
            # A store on a file or a server outlives one example: start from an empty one.
            for book in context.fetch("Book"):
                context.delete(book)
            context.save()
            for title, pages, price in rows:
                context.insert("Book", title=title, pages=pages, price=None if price is None else Decimal(price))
            context.save()
            books = context.fetch("Book", include_pending=False)
            for book in books:
                action = data.draw(st.sampled_from(["keep", "pages", "price", "delete"]))
                if action == "pages":
                    book.pages = data.draw(st.integers(1, 9))
                elif action == "price":
                    book.price = Decimal(data.draw(st.sampled_from(["0.5", "2.5", "20"])))
                elif action == "delete":
                    context.delete(book)
            taken = {book.title for book in books}
            for title in data.draw(st.lists(st.sampled_from([t + "!" for t in TITLES]), max_size=4, unique=True)):
                if title not in taken:
                    context.insert("Book", title=title, pages=data.draw(st.integers(1, 9)))
            questions = []
            for _ in range(6):
                predicate = data.draw(st.sampled_from(["pages > %@", "pages <= %@ OR price > 2", "price >= %@", "title CONTAINS[c] 'e'"]))
                argument = data.draw(st.integers(0, 9))
                arguments = (argument,) if "%@" in predicate else ()
                sort = data.draw(st.sampled_from([["title"], ["-pages", "title"], ["price", "-title"]]))
                limit = data.draw(st.sampled_from([None, 1, 3]))
                answer = titles(context.fetch("Book", predicate, *arguments, sort=sort, limit=limit))
                questions.append((predicate, arguments, sort, limit, answer, context.count("Book", predicate, *arguments)))
            context.save()
        with store.context() as reader:
            for predicate, arguments, sort, limit, answer, counted in questions:
                assert titles(reader.fetch("Book", predicate, *arguments, sort=sort, limit=limit, include_pending=False)) == answer
                assert reader.count("Book", predicate, *arguments, include_pending=False) == counted


def apply(mirror, changes, query):
    """Applies a live query's index changes to a copy of its old results, as LiveQuery documents."""
    removals = sorted((c.old for c in changes if c.kind in ("delete", "move")), reverse=True)
    for _, row in removals:
        del mirror[row]
    for _, row in sorted(c.new for c in changes if c.kind in ("insert", "move")):
        mirror.insert(row, query[row])


def test_live_queries_show_unsaved_changes_when_processed(context):
    import random
    rng = random.Random(46)
    context.insert_many("Book", ["title", "pages"], [(f"B{n:03}", rng.randint(1, 50)) for n in range(30)])
    context.save()
    seen = []
    current = context.live_query("Book", "pages > 20", sort=["title"], on_change=lambda changes: seen.append(changes))
    saved = context.live_query("Book", "pages > 20", sort=["title"], include_pending=False)
    mirror = list(current)
    stored = list(saved)
    serial = 30
    for step in range(80):
        books = context.fetch("Book")  # deleted books are left out; those deleted in this step are dropped here
        for _ in range(rng.randint(1, 4)):
            choice = rng.randrange(4)
            if choice == 0:
                serial += 1
                context.insert("Book", title=f"B{serial:03}", pages=rng.randint(1, 50))
            elif books:
                book = rng.choice(books)
                if choice == 1:
                    context.delete(book)
                    books.remove(book)
                elif choice == 2:
                    book.pages = rng.randint(1, 50)
                else:
                    serial += 1
                    book.title = f"R{serial:03}"
        before = len(seen)
        action = rng.randrange(8)
        if action == 0:
            context.save()
            stored = context.fetch("Book", "pages > 20", sort=["title"])
        elif action == 1:
            context.rollback()
            context.process_pending_changes()
        else:
            context.process_pending_changes()
        for changes in seen[before:]:
            apply(mirror, changes, current)
        fresh = context.fetch("Book", "pages > 20", sort=["title"])
        assert list(current) == fresh, f"step {step}"
        assert mirror == fresh, f"step {step}"
        assert list(saved) == stored, f"step {step}"  # follows saves only
    assert len(seen) > 40


def test_a_failing_on_change_is_reported_after_the_results_are_current(context):
    def refuse(changes):
        raise RuntimeError("no")

    query = context.live_query("Book", sort=["title"], on_change=refuse)
    book = context.insert("Book", title="A")
    with pytest.raises(amber.ObserverError, match="live queries show the pending changes"):
        context.process_pending_changes()
    assert list(query) == [book]
