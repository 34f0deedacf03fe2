"""Contexts: fetch, sort, count, change tracking, rollback, all-or-nothing saves."""
import threading
from decimal import Decimal

import pytest

import amber


def fill(ctx):
    ctx.insert_many("Book", ["title", "pages", "price"], [
        ("Dune", 412, Decimal("9.99")), ("Emma", 474, None), ("L'Étranger", 159, Decimal("8.50")),
        ("Dune Messiah", 256, Decimal("100.5")),
    ])
    ctx.save()


def test_fetch_with_predicate_sort_limit_and_count(context):
    fill(context)
    titles = [b.title for b in context.fetch("Book", "title CONTAINS[cd] %@", "dune", sort=["-price"])]
    assert titles == ["Dune Messiah", "Dune"]
    assert [b.title for b in context.fetch("Book", sort=["pages"], limit=2, offset=1)] == ["Dune Messiah", "Dune"]
    assert [b.title for b in context.fetch("Book", "title ==[cd] \"l'etranger\" OR title BEGINSWITH 'x'")] == ["L'Étranger"]
    assert context.count("Book", "price > %@", 10) == 1
    assert context.count("Book") == 4


def test_the_same_object_comes_back(context):
    fill(context)
    first = context.fetch("Book", "title == 'Dune'")[0]
    first.pages = 1
    again = context.fetch("Book", "title == 'Dune'")[0]
    assert again is first and again.pages == 1
    assert context.object(first.uri) is first


def test_change_tracking_and_rollback(context):
    fill(context)
    dune, emma = context.fetch("Book", "title IN {'Dune', 'Emma'}", sort=["title"])
    dune.pages = 500
    context.delete(emma)
    new = context.insert("Book", title="New")
    assert context.has_changes
    assert context.updated == [dune] and context.deleted == [emma] and context.inserted == [new]
    context.rollback()
    assert not context.has_changes
    assert dune.pages == 412
    assert context.count("Book") == 4


def test_a_context_manager_rolls_back_on_an_exception(store):
    with store.context() as ctx:
        fill(ctx)
    with pytest.raises(RuntimeError):
        with store.context() as ctx:
            ctx.fetch("Book", "title == 'Dune'")[0].pages = 1
            ctx.insert("Book", title="Never saved")
            raise RuntimeError("boom")
    with store.context() as ctx:
        assert ctx.count("Book") == 4
        assert ctx.fetch("Book", "title == 'Dune'")[0].pages == 412


def test_validation_errors_carry_every_problem_and_keep_the_changes(context):
    bad = context.insert("Book", title="", pages=0)
    context.insert("Book", title="x", price=Decimal("-1"))
    with pytest.raises(amber.ValidationError) as error:
        context.save()
    problems = error.value.problems
    assert [(p.place, p.rule) for p in problems] == [("Book.title", "minLength"), ("Book.pages", "minValue"), ("Book.price", "minValue")]
    assert problems[0].message == "0 characters, fewer than the minimum 1"
    assert problems[1].message == "0 is less than the minimum 1"
    assert problems[2].message == "-1 is less than the minimum 0"
    assert problems[0].object_uri == problems[1].object_uri == bad.uri != problems[2].object_uri
    assert context.object(problems[2].object_uri) is context.inserted[1]
    assert str(problems[1]) == f"{bad.uri}: Book.pages: 0 is less than the minimum 1"
    assert context.count("Book", include_pending=False) == 0 and len(context.inserted) == 2  # nothing written
    bad.title, bad.pages = "fixed", 10
    context.inserted[1].price = Decimal("1")
    context.save()
    assert context.count("Book") == 2


def test_uniqueness_is_a_validation_error(context):
    fill(context)
    context.insert("Book", title="Dune")
    with pytest.raises(amber.ValidationError, match=r"uniqueness constraint violated: another Book already has title = \"Dune\""):
        context.save()


def test_one_save_reports_uniqueness_and_validation_problems_together(context):
    fill(context)
    short = context.insert("Book", title="Short", pages=0)
    twin = context.insert("Book", title="Dune")
    with pytest.raises(amber.ValidationError) as error:
        context.save()
    assert [(p.object_uri, p.rule) for p in error.value.problems] == [(short.uri, "minValue"), (twin.uri, "uniqueness")]
    assert error.value.problems[1].place == "Book(title)"
    short.pages, twin.title = 1, "Children of Dune"
    context.save()
    assert context.count("Book") == 6


def test_a_model_that_does_not_bind_lists_its_problems():
    with pytest.raises(amber.ModelError) as error:
        amber.Model.from_json('{"entities": [{"name": "Book", "attributes": ['
                              '{"name": "title", "type": "string", "minLength": 5, "maxLength": 2}, {"name": "pages", "type": "integer16", "minValue": 9, "maxValue": 1}]}]}').bind()
    assert [p.place for p in error.value.problems] == ["Book.title", "Book.pages"]
    assert all(p.rule == "" and p.object_uri == "" and p.message for p in error.value.problems)


def test_insert_many_is_all_or_nothing(context):
    with pytest.raises(amber.ValueClassError, match="Book.pages in row 1: expected Integer 16"):
        context.insert_many("Book", ["title", "pages"], [("a", 1), ("b", 99999), ("c", 3)])
    assert not context.has_changes


def test_predicate_errors_give_the_position(context):
    with pytest.raises(amber.PredicateError, match="predicate, position 10: expected a value or attribute name") as error:
        context.fetch("Book", "title == ")
    assert error.value.origin == "position 10"
    assert context.fetch("Book", "title == %@", "x' OR 1=1 --") == []


def test_misuse_raises_and_never_crashes(store, model):
    ctx = store.context()
    book = ctx.insert("Book", title="t")
    errors = []

    def elsewhere():
        try:
            ctx.count("Book")
        except amber.MisuseError as error:
            errors.append(error)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "belongs to another thread" in errors[0].message

    ctx.close()
    with pytest.raises(amber.MisuseError, match="the context is closed"):
        ctx.count("Book")
    with pytest.raises(amber.MisuseError, match="the context is closed"):
        book.title = "x"
    other = store.context()
    store.close()
    with pytest.raises(amber.MisuseError, match="the context is closed: its store was closed"):
        other.fetch("Book")
    with pytest.raises(amber.MisuseError, match="store is closed"):
        store.context()


def test_closed_means_closed(tmp_path, model):
    # A store does not close over unsaved changes (nothing is closed then); once closed, every context and
    # object of it says so, including values a fetch cached in the objects.
    store = amber.open(tmp_path / "closing.amber", model)
    with store.context() as ctx:
        fill(ctx)
    reader, writer = store.context(), store.context()
    fetched = reader.fetch("Book", sort=["title"])
    first = fetched[0].title
    writer.insert("Book", title="Unsaved")
    with pytest.raises(amber.MisuseError, match=r"cannot close: 1 of its contexts holds unsaved changes \(1 inserted"):
        store.close()
    assert fetched[0].title == first and writer.has_changes  # nothing closed
    reader.close()
    with pytest.raises(amber.MisuseError, match="the context is closed"):
        fetched[0].title
    store.close(discard=True)
    with pytest.raises(amber.MisuseError, match="its store was closed"):
        writer.save()
    with pytest.raises(amber.MisuseError, match="the store is closed"):
        store.context()
    # Leaving a `with` on an exception drops what was not saved rather than hide the exception.
    with pytest.raises(KeyError):
        with amber.open(tmp_path / "closing.amber", model) as again:
            again.context().insert("Book", title="Dropped")
            raise KeyError("the caller's own error")
    with amber.open(tmp_path / "closing.amber", model) as again, again.context() as ctx:
        assert ctx.count("Book", "title == 'Dropped'") == 0 and ctx.count("Book", "title == 'Unsaved'") == 0


def test_an_existing_store_opens_with_the_model_it_carries(tmp_path, model):
    path = tmp_path / "books.amber"
    with amber.open(path, model) as store:
        with store.context() as ctx:
            fill(ctx)
    with amber.open(path, registry=model.registry) as store:
        with store.context() as ctx:
            assert ctx.count("Book") == 4
            assert '"name": "Book"' in store.model.to_json()
    other = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [{"name": "title", "type": "integer64"}]}]})
    with pytest.raises(amber.ModelError, match="Book.title: the store has string, required, the model has integer64, optional"):
        amber.open(path, other, migrate=False)
    with pytest.raises(amber.MigrationError, match="Book.title: type string to integer64: cannot be inferred"):
        amber.open(path, other)
