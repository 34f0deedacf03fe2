"""Migration from Python: opening a store with another model migrates it
(plan, progress, backup, refusal that changes nothing, cancelling from the
progress callback, re-encoding through Python transformers), and a process
killed in the middle of a migration leaves the old store intact."""
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import amber

V1 = {"entities": [{"name": "Book", "attributes": [
    {"name": "title", "type": "string", "optional": False},
    {"name": "pages", "type": "integer16"},
    {"name": "code", "type": "string"},
]}]}


def v2():
    """V1 with an attribute added, one renamed and an integer widened."""
    return {"entities": [{"name": "Book", "attributes": [
        {"name": "title", "type": "string", "optional": False},
        {"name": "pages", "type": "integer64"},
        {"name": "isbn", "type": "string", "renamingIdentifier": "code"},
        {"name": "subtitle", "type": "string", "default": "-"},
    ]}]}


def fill(path, count=3):
    with amber.open(path, amber.Model.from_dict(V1)) as store:
        ctx = store.context()
        for i in range(count):
            ctx.insert("Book", title=f"b{i}", pages=i, code=f"c{i}")
        ctx.save()


def digest(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def test_opening_with_another_model_migrates(tmp_path):
    path = tmp_path / "books.amber"
    fill(path)
    plan = amber.migration_plan(path, amber.Model.from_dict(v2()))
    assert plan == ['Book.pages: widen integer16 to integer64', 'rename Book.code to Book.isbn', 'add Book.subtitle (default "-")']
    seen = []
    with amber.open(path, amber.Model.from_dict(v2()), progress=lambda step, done, total: seen.append((step, done, total))) as store:
        books = sorted(store.context().fetch("Book"), key=lambda b: b.title)
        assert [(b.title, b.pages, b.isbn, b.subtitle) for b in books] == [
            ("b0", 0, "c0", "-"), ("b1", 1, "c1", "-"), ("b2", 2, "c2", "-")]
    assert ("copy Book", 0, 3) in seen and ("copy Book", 3, 3) in seen  # the total known from the start
    backups = [name for name in os.listdir(tmp_path) if name.endswith(".backup")]
    assert len(backups) == 1
    # The backup is the old store: it opens with the old model and has every book.
    with amber.open(tmp_path / backups[0], amber.Model.from_dict(V1), migrate=False) as old:
        assert sorted(b.code for b in old.context().fetch("Book")) == ["c0", "c1", "c2"]
    assert amber.migration_plan(path, amber.Model.from_dict(v2())) == []


def test_refused_migration_changes_nothing(tmp_path):
    path = tmp_path / "books.amber"
    fill(path)
    before = digest(path)
    changed = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [
        {"name": "title", "type": "integer64"}, {"name": "pages", "type": "integer16"}, {"name": "code", "type": "string"}]}]})
    with pytest.raises(amber.MigrationError) as caught:
        amber.migration_plan(path, changed)
    assert caught.value.problems == ["Book.title: type string to integer64: cannot be inferred"]
    with pytest.raises(amber.MigrationError):
        amber.open(path, changed)
    assert digest(path) == before
    assert isinstance(caught.value, amber.StoreError)
    with pytest.raises(amber.ModelError, match="different model"):
        amber.open(path, amber.Model.from_dict(v2()), migrate=False)


def test_the_dry_run_refuses_what_the_migration_refuses_every_problem_at_once(tmp_path):
    path = tmp_path / "books.amber"
    fill(path)
    with amber.open(path, amber.Model.from_dict({**V1, "entities": [{**V1["entities"][0], "extensible": True}]})) as store:
        with store.context() as ctx:
            ctx.insert("Book", title="odd", shelf=5)  # an extended attribute named like one the next model adds, of another type
    before = digest(path)
    stricter = amber.Model.from_dict({"entities": [{"name": "Book", "extensible": True, "attributes": [
        {"name": "title", "type": "string", "optional": False},
        {"name": "pages", "type": "integer16"},
        {"name": "code", "type": "string"},
        {"name": "n", "type": "integer64", "optional": False},
        {"name": "shelf", "type": "string"}]}]})
    with pytest.raises(amber.MigrationError) as planned:
        amber.migration_plan(path, stricter)
    with pytest.raises(amber.MigrationError) as opened:
        amber.open(path, stricter)
    assert planned.value.problems == opened.value.problems and len(planned.value.problems) == 2
    assert any(problem.startswith("Book.n: required, but object amber://") for problem in planned.value.problems)
    assert any(problem.startswith("Book.shelf of amber://") and "its extended value 5 cannot become the attribute's" in problem
               for problem in planned.value.problems)
    assert digest(path) == before


def test_an_extended_attribute_becomes_a_modelled_one(tmp_path):
    path = tmp_path / "books.amber"
    loose = amber.Model.from_dict({"entities": [{"name": "Book", "extensible": True, "attributes": [{"name": "title", "type": "string"}]}]})
    with amber.open(path, loose) as store, store.context() as ctx:
        ctx.insert("Book", title="A", shelf="S1", floor=1)
        ctx.insert("Book", title="B", shelf=2)
    modelled = amber.Model.from_dict({"entities": [{"name": "Book", "extensible": True, "attributes": [
        {"name": "title", "type": "string"}, {"name": "shelf", "type": "string"}]}]})
    with pytest.raises(amber.MigrationError) as caught:  # 2 is no string: named, and nothing changes
        amber.migration_plan(path, modelled)
    assert len(caught.value.problems) == 1 and "its extended value 2 cannot become the attribute's" in caught.value.problems[0]
    with amber.open(path, loose) as store, store.context() as ctx:
        ctx.fetch("Book", "title == 'B'")[0].shelf = "S2"
    assert "Book.shelf: takes the extended attribute shelf of 2 objects (each value checked)" in amber.migration_plan(path, modelled)
    with amber.open(path, modelled) as store, store.context() as ctx:
        books = ctx.fetch("Book", sort=["title"])
        assert [book.shelf for book in books] == ["S1", "S2"]
        assert [book.extended_keys() for book in books] == [["floor"], []]


def test_removing_stored_data_needs_consent(tmp_path):
    path = tmp_path / "books.amber"
    fill(path)
    before = digest(path)
    smaller = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [
        {"name": "title", "type": "string"}, {"name": "pages", "type": "integer16"}]}]})
    assert "removes stored data: Book.code: 3 values (needs consent: data removal allowed)" in amber.migration_plan(path, smaller)
    with pytest.raises(amber.MigrationError) as caught:
        amber.open(path, smaller)
    assert caught.value.problems[0] == "Book.code: 3 values would be removed"
    assert "allow_data_removal=True" in caught.value.problems[1]
    assert digest(path) == before and not [name for name in os.listdir(tmp_path) if name.endswith(".backup")]
    with amber.open(path, smaller, allow_data_removal=True) as store, store.context() as ctx:
        assert ctx.count("Book") == 3


def test_an_exception_in_the_progress_callback_cancels(tmp_path):
    path = tmp_path / "books.amber"
    fill(path)

    class Stop(Exception):
        pass

    def progress(step, done, total):
        raise Stop(step)

    with pytest.raises(amber.MigrationError, match="cancelled") as caught:
        amber.open(path, amber.Model.from_dict(v2()), progress=progress, backup=False)
    assert isinstance(caught.value.__cause__, Stop)
    with amber.open(path, amber.Model.from_dict(V1)) as store:  # still the old model
        assert len(store.context().fetch("Book")) == 3
    # Ctrl-C stays Ctrl-C.
    def interrupt(step, done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        amber.open(path, amber.Model.from_dict(v2()), progress=interrupt, backup=False)


def test_a_new_transformer_chain_reencodes_through_python(tmp_path):
    registry = amber.Registry()
    registry.register_transformer("Latin1", "String", "Binary", lambda s: s.encode("latin-1"), lambda b: b.decode("latin-1"))
    registry.register_transformer("Utf16", "String", "Binary", lambda s: s.encode("utf-16-le"), lambda b: b.decode("utf-16-le"))

    def model(chain):
        return amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [
            {"name": "n", "type": "integer64"},
            {"name": "text", "type": "transformable", "valueClass": "String", "transformer": chain}]}]}, registry)

    path = tmp_path / "notes.amber"
    texts = [f"café {i}" for i in range(500)]
    with amber.open(path, model(["Latin1"])) as store:
        ctx = store.context()
        for i, text in enumerate(texts):
            ctx.insert("Note", n=i, text=text)
        ctx.save()
    assert amber.migration_plan(path, model(["Utf16"])) == [
        "Note.text: re-encode every stored value, from String via Latin1 to String via Utf16"]
    with amber.open(path, model(["Utf16"])) as store:
        notes = sorted(store.context().fetch("Note"), key=lambda note: note.n)
        assert [note.text for note in notes] == texts
    import sqlite3
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT text FROM Note WHERE n = 1").fetchone()[0] == "café 1".encode("utf-16-le")


CHILD = textwrap.dedent("""
    import sys, time, amber
    path, model = sys.argv[1], amber.Model.from_dict({model!r})
    def progress(step, done, total):
        print(step, done, total, flush=True)
        time.sleep(30)  # the parent kills us here, inside the migration's transaction
    amber.open(path, model, progress=progress, backup=False)
""")


def test_a_kill_during_migration_leaves_the_old_store_intact(tmp_path):
    path = tmp_path / "books.amber"
    fill(path, count=2000)
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(model=v2()), str(path)], stdout=subprocess.PIPE,
                             env=os.environ.copy())
    line = child.stdout.readline()  # the migration is under way
    assert line.startswith(b"copy Book"), line
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with amber.open(path, amber.Model.from_dict(V1), migrate=False) as store:
        books = store.context().fetch("Book")
        assert len(books) == 2000 and sorted(b.code for b in books)[:2] == ["c0", "c1"]
    # And the migration can run afterwards.
    with amber.open(path, amber.Model.from_dict(v2())) as store:
        assert len(store.context().fetch("Book", "subtitle == %@", "-")) == 2000
