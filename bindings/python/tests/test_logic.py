"""Model logic in code from Python: validators and lifecycle hooks defined on
a subclass of a generated class and put in use with Model.use."""
import datetime

import pytest

import amber
from conftest import LIBRARY_MODEL


@pytest.fixture
def hooked(library):
    """A Book class with model logic (and an Author one), and the calls its hooks saw."""
    calls: list[str] = []

    def record(hook, obj):
        calls.append(f"{hook} {obj.entity} {obj.title if obj.entity != 'Author' else obj.name}")

    class CheckedBook(library.Book):
        __slots__ = ()

        def awake_from_insert(self):
            record("awake_from_insert", self)
            self.pages = 1

        def awake_from_fetch(self):
            record("awake_from_fetch", self)

        def validate_value(self, key, value):
            if key == "title" and value == "":
                raise amber.ValidationProblem("must not be empty")

        def validate_for_insert(self):
            problems = []
            if (self.pages or 0) > 5000:
                problems.append(amber.ValidationProblem("more than 5000 pages", key="pages"))
            if self.title == "Untitled" and self.author is None:
                problems.append(amber.ValidationProblem("an untitled book needs an author"))
            if problems:
                raise ExceptionGroup("book problems", problems)

        def validate_for_delete(self):
            if self.inPrint:
                raise amber.ValidationProblem("a book in print cannot be deleted", key="inPrint")

        def will_save(self):
            record("will_save", self)
            if self.title == "explode":
                raise RuntimeError("this book explodes")
            if self.author is not None and self.author.born is None:
                self.author.born = datetime.datetime(1970, 1, 2, tzinfo=datetime.timezone.utc)

        def did_save(self):
            record("did_save", self)

        def prepare_for_deletion(self):
            record("prepare_for_deletion", self)
            if self.title == "keep":
                raise PermissionError("kept")

        def did_turn_into_fault(self):
            record("did_turn_into_fault", self)

    model = amber.Model.from_file(LIBRARY_MODEL)
    model.use([*library.CLASSES, CheckedBook])
    return model, CheckedBook, calls


def test_validators_report_every_problem_with_the_declared_rules(hooked, library):
    model, checked_book, _ = hooked
    with amber.open(None, model) as store:
        ctx = store.context()
        empty = ctx.insert(library.Book, title="", pages=9000)
        assert isinstance(empty, checked_book)  # the class in use, also through the generated class
        untitled = ctx.insert(library.Book, title="Untitled")
        nameless = ctx.insert(library.Author)
        with pytest.raises(amber.ValidationError) as failure:
            ctx.save()
        listed = sorted(f"{p.place} {p.rule} {p.message}" for p in failure.value.problems)
        assert listed == [
            "Author.name required a value is required, found nil",
            "Book validation an untitled book needs an author",
            "Book.pages validation more than 5000 pages",
            "Book.title validation must not be empty",
        ]
        assert len(ctx.inserted) == 3  # every change stays
        empty.title, empty.pages = "Dune", 412
        untitled.author = nameless
        nameless.name = "Frank"
        ctx.save()
        assert ctx.count(library.Book) == 2


def test_hooks_run_and_will_save_changes_are_saved_in_the_same_transaction(hooked, library):
    model, _, calls = hooked
    with amber.open(None, model) as store:
        ctx = store.context()
        author = ctx.insert(library.Author, name="Frank")
        book = ctx.insert(library.Book, title="Dune", author=author)
        assert book.pages == 1 and calls == ["awake_from_insert Book None"]  # before the caller's values
        calls.clear()
        ctx.save()
        assert calls == ["will_save Book Dune", "did_save Book Dune"]
        calls.clear()
        other = store.context()
        [reread] = other.fetch(library.Author)
        assert reread.born == datetime.datetime(1970, 1, 2, tzinfo=datetime.timezone.utc)
        held = other.fetch(library.Book)
        assert calls == ["awake_from_fetch Book Dune"]
        other.fetch(library.Book)
        assert calls == ["awake_from_fetch Book Dune"]  # once per object while it is held
        del held


def test_a_hook_that_raises_fails_the_save_keeping_every_change(hooked, library):
    model, _, _ = hooked
    with amber.open(None, model) as store:
        ctx = store.context()
        book = ctx.insert(library.Book, title="explode")
        with pytest.raises(amber.HookError) as failure:
            ctx.save()
        assert isinstance(failure.value.__cause__, RuntimeError) and failure.value.origin == "willSave"
        assert "this book explodes" in str(failure.value)
        assert ctx.inserted == [book] and store.context().count(library.Book) == 0
        book.title = "calm"
        ctx.save()
        assert store.context().count(library.Book) == 1


def test_prepare_for_deletion_refuses_and_validate_for_delete_reports(hooked, library):
    model, _, calls = hooked
    with amber.open(None, model) as store:
        ctx = store.context()
        author = ctx.insert(library.Author, name="Frank")
        dune = ctx.insert(library.Book, title="Dune", author=author, inPrint=True)
        ctx.insert(library.Book, title="keep", author=author)
        ctx.save()
        with pytest.raises(amber.HookError) as failure:
            ctx.delete(author)  # cascades to both books; one refuses
        assert isinstance(failure.value.__cause__, PermissionError)
        assert ctx.deleted == []
        ctx.delete(dune)
        with pytest.raises(amber.ValidationError) as refused:
            ctx.save()
        assert [p.place for p in refused.value.problems] == ["Book.inPrint"]
        calls.clear()
        ctx.rollback()
        assert calls == []  # only marked deleted: no values were dropped
        dune.title = "Dune Messiah"
        ctx.rollback()
        assert calls == ["did_turn_into_fault Book Dune"]  # the hook sees the values as rolled back


def test_sub_entities_run_their_parents_logic(hooked, library):
    model, checked_book, calls = hooked
    with amber.open(None, model) as store:
        ctx = store.context()
        novel = ctx.insert(library.Novel, title="")
        assert type(novel).__mro__[1] is library.Novel and not isinstance(novel, checked_book)
        assert calls == ["awake_from_insert Novel None"]
        with pytest.raises(amber.ValidationError) as failure:
            ctx.save()
        assert [p.place for p in failure.value.problems] == ["Novel.title"]
        ctx.rollback()


def test_hooks_that_cannot_fail_raise_once_their_call_is_done(library):
    class Loud(library.Chapter):
        __slots__ = ()

        def awake_from_insert(self):
            raise ValueError("loud insert")

        def did_save(self):
            raise ValueError("loud save")

    model = amber.Model.from_file(LIBRARY_MODEL)
    model.use([Loud])
    with amber.open(None, model) as store:
        ctx = store.context()
        with pytest.raises(ValueError, match="loud insert") as insert:
            ctx.insert(library.Chapter, heading="One")
        assert "after the call that ran it was done" in insert.value.__notes__[0]
        assert len(ctx.inserted) == 1  # the insert was done
        with pytest.raises(ValueError, match="loud save"):
            ctx.save()
        assert store.context().count(library.Chapter) == 1  # the save was written
        ctx.insert(library.Book, title="Quiet")  # no hook of its own, and no stale exception
        ctx.rollback()
