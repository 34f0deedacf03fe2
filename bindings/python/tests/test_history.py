"""Stores opened by URL, and a store's history from Python: exactly the
changes each save made, with the saving context's names; reading after a
token, purging, tokens of other stores and text that is no token; saves of
a store without history; and a second store on the file merging what the
first saved."""
import copy
import dataclasses
import datetime
import os
import uuid

import pytest

import amber
from amber import errors, lib

MODEL = {"entities": [
    {"name": "Book", "attributes": [{"name": "title", "type": "string"}, {"name": "pages", "type": "integer32"}],
     "relationships": [{"name": "tags", "destination": "Tag", "inverse": "books", "toMany": True}]},
    {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "tags", "toMany": True}]},
]}

UTC = datetime.timezone.utc


@pytest.fixture
def model():
    return amber.Model.from_dict(MODEL, amber.Registry())


def titles(store):
    with store.context() as ctx:
        return sorted(book.title for book in ctx.fetch("Book"))


def at(token, sequence):
    """The token of the same store at another transaction."""
    return f"{token.rsplit('/', 1)[0]}/{sequence}"


def save_book(store, title):
    with store.context() as ctx:
        ctx.insert("Book", title=title, pages=1)


# Opening by URL


def test_memory_url_opens_a_new_store_each_time(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with amber.open("memory:", model) as first, amber.open("memory:", model) as second:
        save_book(first, "Dune")
        assert titles(first) == ["Dune"] and titles(second) == []
        assert first.path == "memory:" and repr(first) == "<amber.Store memory:>"
    assert os.listdir(tmp_path) == []  # nothing written to disk


def test_a_path_and_a_file_url_name_the_same_store(model, tmp_path):
    path = tmp_path / "my books.amber"  # a space: percent-encoded in the URL
    url = path.as_uri()
    assert url.startswith("file:///") and "%20" in url
    with amber.open(str(path), model) as store:
        save_book(store, "Dune")
    with amber.open(url, model) as store:
        assert titles(store) == ["Dune"] and store.path == url
        save_book(store, "Emma")
    assert os.listdir(tmp_path) == ["my books.amber"]
    with amber.open(path, model) as store:  # a pathlib.Path, as before
        assert titles(store) == ["Dune", "Emma"]
    with amber.open(str(path)) as store:  # an existing store with its own model
        assert titles(store) == ["Dune", "Emma"]


def test_a_colon_before_the_first_slash_makes_a_url(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(amber.StoreURLError, match="scheme a") as refused:
        amber.open("a:b.amber", model)
    assert refused.value.origin == "scheme a"
    assert os.listdir(tmp_path) == []
    with amber.open("./a:b.amber", model) as store:
        save_book(store, "Dune")
    with amber.open(tmp_path / "a:b.amber", model) as store:  # a pathlib.Path is always a path
        assert titles(store) == ["Dune"]


def test_an_unknown_scheme_is_named_and_nothing_is_created(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(amber.StoreURLError, match="mysql") as refused:
        amber.open("mysql://x", model)
    error = refused.value
    assert error.origin == "scheme mysql" and error.code == lib.AMBER_E_INVALID_URL
    assert isinstance(error, amber.StoreError) and isinstance(error, ValueError) and isinstance(error, amber.Error)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("url, origin", [("memory:x", "x"), ("file://host/books.amber", "host host"),
                                         ("file:///tmp/books.amber?mode=ro", "?mode=ro"), ("", "path")])
def test_text_that_names_no_store_is_refused(model, url, origin):
    with pytest.raises(amber.StoreURLError) as refused:
        amber.open(url, model)
    assert refused.value.origin == origin


# The history of one store


def test_each_save_records_exactly_its_changes_with_the_context_names(model):
    with amber.open("memory:", model) as store:
        start = store.history_token()
        assert start.endswith("/0") and store.history() == []
        ctx = store.context()
        ctx.name, ctx.author = "import", "alice"
        before = datetime.datetime.now(UTC)
        dune = ctx.insert("Book", title="Dune", pages=1)
        emma = ctx.insert("Book", title="Emma", pages=2)
        ctx.save()
        dune.pages = 10
        dune.title = "Dune!"
        ctx.save()
        ctx.author = None  # the name stays
        ctx.delete(emma)
        ctx.save()
        ctx.name = None
        ctx.insert("Tag", name="classic").books = {dune}  # links through the join table: relinked
        ctx.save()
        after = datetime.datetime.now(UTC)

        inserted, updated, deleted, linked = store.history()
        assert [t.token for t in (inserted, updated, deleted, linked)] == [at(start, n) for n in (1, 2, 3, 4)]
        assert store.history_token() == linked.token
        for transaction in (inserted, updated, deleted, linked):
            assert transaction.timestamp.tzinfo is not None and transaction.timestamp.utcoffset() == datetime.timedelta(0)
            assert before - datetime.timedelta(seconds=1) <= transaction.timestamp <= after + datetime.timedelta(seconds=1)
            assert transaction.recorded
        assert inserted.timestamp <= updated.timestamp <= deleted.timestamp <= linked.timestamp
        assert [(t.context, t.author) for t in (inserted, updated, deleted, linked)] == [
            ("import", "alice"), ("import", "alice"), ("import", None), (None, None)]
        assert [t.relinked for t in (inserted, updated, deleted, linked)] == [False, False, False, True]

        assert inserted.changes == (
            amber.HistoryChange("inserted", "Book", dune.primary_key, dune.uri, (), 1),
            amber.HistoryChange("inserted", "Book", emma.primary_key, emma.uri, (), 1))
        (change,) = updated.changes
        assert (change.kind, change.entity, change.key, change.object) == ("updated", "Book", dune.primary_key, dune.uri)
        assert sorted(change.keys) == ["pages", "title"] and change.version == 2
        (change,) = deleted.changes
        assert (change.kind, change.entity, change.key, change.keys) == ("deleted", "Book", emma.primary_key, ())
        assert [(c.kind, c.entity) for c in linked.changes] == [("inserted", "Tag")]
        ctx.close()


def test_history_objects_are_immutable(model):
    with amber.open("memory:", model) as store:
        save_book(store, "Dune")
        (transaction,) = store.history()
        with pytest.raises(dataclasses.FrozenInstanceError):
            transaction.author = "mallory"
        with pytest.raises(dataclasses.FrozenInstanceError):
            transaction.changes[0].keys = ("title",)
        assert isinstance(transaction.changes, tuple) and isinstance(transaction.changes[0].keys, tuple)
        assert hash(transaction) == hash(store.history()[0]) and transaction == store.history()[0]


def test_context_names_are_kept_together(model):
    with amber.open("memory:", model) as store, store.context() as ctx:
        assert (ctx.name, ctx.author) == (None, None)
        ctx.author = "alice"
        ctx.name = "sync"
        assert (ctx.name, ctx.author) == ("sync", "alice")
        ctx.insert("Book", title="Dune", pages=1)
        ctx.save()
        ctx.name = "sync 2"
        ctx.insert("Book", title="Emma", pages=1)
        ctx.save()
        assert [(t.context, t.author) for t in store.history()] == [("sync", "alice"), ("sync 2", "alice")]
        with pytest.raises(amber.ArgumentError, match="Context.author must be a str"):
            ctx.author = 42
        assert (ctx.name, ctx.author) == ("sync 2", "alice")


def test_reading_after_a_token_gives_only_later_transactions(model):
    with amber.open("memory:", model) as store:
        save_book(store, "Dune")
        token = store.history_token()
        assert store.history(after=token) == []
        save_book(store, "Emma")
        save_book(store, "Fox")
        later = store.history(token)
        assert [t.changes[0].key for t in later] == [2, 3]
        assert len(store.history()) == 3 and store.history(after=at(token, 0)) == store.history()
        assert store.history(after=later[0].token) == later[1:]


def test_purged_transactions_cannot_be_read(model):
    with amber.open("memory:", model) as store:
        for title in ("Dune", "Emma", "Fox"):
            save_book(store, title)
        first, second, third = (t.token for t in store.history())
        store.purge_history(second)
        assert [t.token for t in store.history(after=second)] == [third]
        with pytest.raises(amber.HistoryError, match="purged") as refused:
            store.history(after=first)
        assert refused.value.code == lib.AMBER_E_HISTORY and isinstance(refused.value, amber.StoreError)
        store.purge_history(second)  # again: nothing more to purge
        with pytest.raises(amber.HistoryError):
            store.purge_history(at(third, 9))  # later than the history
        assert titles(store) == ["Dune", "Emma", "Fox"]  # purging the history deletes no object


def test_tokens_of_another_store_or_past_the_history_are_refused(model):
    with amber.open("memory:", model) as store, amber.open("memory:", model) as other:
        save_book(store, "Dune")
        save_book(other, "Emma")
        foreign = other.history_token()
        with pytest.raises(amber.HistoryError, match="belongs to the store"):
            store.history(after=foreign)
        with pytest.raises(amber.HistoryError, match="belongs to the store"):
            store.purge_history(foreign)
        with pytest.raises(amber.HistoryError, match="ends at 1"):
            store.history(after=at(store.history_token(), 5))
        assert len(store.history()) == 1  # nothing purged


@pytest.mark.parametrize("text", ["garbage", "", "x/1", "3B1A2F6D-F56A-414F-AE11-BD3983EB8D9E/-1"])
def test_text_that_is_no_token_is_a_value_error(model, text):
    with amber.open("memory:", model) as store:
        with pytest.raises(amber.ValueClassError, match="expected a history token") as refused:
            store.history(after=text)
        assert refused.value.code == lib.AMBER_E_INVALID_VALUE and isinstance(refused.value, ValueError)
        with pytest.raises(amber.ValueClassError, match="expected a history token"):
            store.purge_history(text)


def test_a_token_must_be_a_str(model):
    with amber.open("memory:", model) as store:
        with pytest.raises(amber.ArgumentError, match="after must be a history token"):
            store.history(after=1)
        with pytest.raises(amber.ArgumentError, match="through must be a history token"):
            store.purge_history(None)


def test_a_store_without_history_records_only_that_saves_happened(model, tmp_path):
    with amber.open(tmp_path / "quiet.amber", model, history=False) as store:
        ctx = store.context()
        ctx.name, ctx.author = "import", "alice"
        book = ctx.insert("Book", title="Dune", pages=1)
        ctx.save()
        book.pages = 2
        ctx.save()
        ctx.close()
        transactions = store.history()
        assert len(transactions) == 2 and store.history_token() == transactions[-1].token
        assert [(t.recorded, t.changes) for t in transactions] == [(False, ())] * 2
        assert [(t.context, t.author) for t in transactions] == [("import", "alice")] * 2  # names are kept still
    with amber.open(tmp_path / "quiet.amber", model) as store:  # history again from here on
        save_book(store, "Emma")
        assert [t.recorded for t in store.history()] == [False, False, True]
        assert [c.kind for c in store.history()[-1].changes] == ["inserted"]


def test_a_closed_store_is_misuse(model):
    store = amber.open("memory:", model)
    store.close()
    with pytest.raises(amber.MisuseError):
        store.history_token()
    with pytest.raises(amber.MisuseError):
        store.history()


def test_every_new_code_has_its_exception():
    assert errors._BY_CODE[lib.AMBER_E_INVALID_URL] is amber.StoreURLError
    assert errors._BY_CODE[lib.AMBER_E_UNSUPPORTED] is amber.UnsupportedError
    assert errors._BY_CODE[lib.AMBER_E_HISTORY] is amber.HistoryError
    assert errors._BY_CODE[lib.AMBER_E_SERVER] is amber.ServerError
    assert all(issubclass(cls, amber.StoreError)
               for cls in (amber.StoreURLError, amber.UnsupportedError, amber.HistoryError, amber.ServerError))


# Two stores on one file


def test_a_second_store_merges_exactly_what_the_first_saved(model, tmp_path):
    path = tmp_path / "shared.amber"
    with amber.open(path.as_uri(), model) as a, amber.open(str(path), model) as b:
        writer = a.context()
        writer.name, writer.author = "writer", "alice"
        dune = writer.insert("Book", title="Dune", pages=1)
        emma = writer.insert("Book", title="Emma", pages=2)
        writer.save()

        reader = b.context()
        held = {book.title: book for book in reader.fetch("Book")}
        reports = []
        reader.add_observer(reports.append)
        token = b.history_token()
        assert token == a.history_token()

        dune.pages, dune.title = 10, "Dune!"
        writer.delete(emma)
        writer.insert("Book", title="Fox", pages=3)
        writer.save()
        assert reports == []  # nothing until the reader merges

        (transaction,) = b.history(after=token)
        assert transaction == a.history(after=token)[0]
        assert (transaction.context, transaction.author) == ("writer", "alice")
        assert sorted((c.kind, c.key) for c in transaction.changes) == [
            ("deleted", emma.primary_key), ("inserted", 3), ("updated", dune.primary_key)]

        reader.merge_saved_changes()
        (report,) = reports
        assert report.event == "merged" and report.updated == []
        assert [(book.title, book.pages) for book in report.inserted] == [("Fox", 3)]  # heard, read from the history's keys
        assert report.deleted == [held["Emma"]]
        (refreshed,) = report.refreshed
        assert refreshed.object is held["Dune"] and sorted(refreshed.keys) == ["pages", "title"]
        assert (held["Dune"].title, held["Dune"].pages) == ("Dune!", 10)
        assert sorted(book.title for book in reader.fetch("Book")) == ["Dune!", "Fox"]
        reader.close()
        writer.close()


def _postgres_server() -> str:
    """The test server's URL (the test command starts one); skipped without it, except in CI, where it fails."""
    url = os.environ.get("AMBER_TEST_POSTGRES")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("AMBER_TEST_POSTGRES names no server: the test command starts one")
        pytest.skip("no PostgreSQL server: set AMBER_TEST_POSTGRES (the test command does)")
    return url


def test_a_postgresql_url_opens_a_shared_store_and_names_what_is_wrong(model):
    server = _postgres_server()
    url = f"{server}?schema=py_url_{uuid.uuid4().hex[:12]}"
    with amber.open(url, model) as store, store.context() as ctx:
        ctx.insert("Book", title="Dune", pages=412)
        ctx.save()
    # Another connection to the same schema finds what was saved, exactly.
    with amber.open(url, model) as again, again.context() as ctx:
        assert [(book.title, book.pages) for book in ctx.fetch("Book")] == [("Dune", 412)]
    with pytest.raises(amber.ServerError) as refused:
        amber.open(server.replace("/amber", "/no_such_db"), model)
    assert refused.value.origin == "08001" and "no_such_db" in str(refused.value)
    assert isinstance(refused.value, amber.StoreError)
    with pytest.raises(amber.StoreURLError) as named:
        amber.open(server.replace("amber@", "amber:hunter2@") + "?schema=Bad-Name", model)
    assert named.value.origin == "schema=Bad-Name" and "hunter2" not in str(named.value)


def test_a_postgresql_store_migrates_when_opened_with_a_new_model(model):
    url = f"{_postgres_server()}?schema=py_migrate_{uuid.uuid4().hex[:12]}"
    with amber.open(url, model) as store, store.context() as ctx:
        ctx.insert("Book", title="Dune", pages=412)
        ctx.insert("Book", title="Kindred", pages=264)
        ctx.save()
    grown = copy.deepcopy(MODEL)
    book = next(entity for entity in grown["entities"] if entity["name"] == "Book")
    book["attributes"].append({"name": "shelf", "type": "string", "optional": False, "default": "new"})
    steps = []
    new_model = amber.Model.from_dict(grown, amber.Registry())
    assert amber.migration_plan(url, new_model) == ['add Book.shelf (default "new")']
    with amber.open(url, new_model, progress=lambda step, done, total: steps.append(step)) as store, store.context() as ctx:
        assert sorted((b.title, b.pages, b.shelf) for b in ctx.fetch("Book")) == [("Dune", 412, "new"), ("Kindred", 264, "new")]
        assert "copy Book" in steps
    # Without migrating, the old model is refused naming the difference; a change that cannot be inferred changes nothing.
    with pytest.raises(amber.ModelError):
        amber.open(url, model, migrate=False)
    book["attributes"][-1]["type"] = "integer32"
    book["attributes"][-1]["default"] = 1
    with pytest.raises(amber.MigrationError, match="Book.shelf"):
        amber.open(url, amber.Model.from_dict(grown, amber.Registry()))
    with amber.open(url, new_model) as store, store.context() as ctx:
        assert ctx.count("Book") == 2
