"""Observers and live queries from Python: reports counted exactly with their
keys, failing and interrupting callbacks, and a live query sectioned by month
whose index changes, applied to a copy of its old results, equal a fresh
fetch after each of 150 random steps in two contexts."""
import datetime
import random
import threading
import time

import pytest

import amber
from conftest import store_url

BOOKS = {"entities": [{"name": "Book", "attributes": [
    {"name": "title", "type": "string"},
    {"name": "pages", "type": "integer64"},
    {"name": "published", "type": "date"}]}]}

BASE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


@pytest.fixture
def store(tmp_path):
    with amber.open(store_url(tmp_path, tmp_path / "observed.amber"), amber.Model.from_dict(BOOKS, amber.Registry())) as opened:
        yield opened


def test_reports_after_save_merge_and_refresh(store):
    with store.context() as here, store.context() as there:
        reports = []
        token = here.add_observer(reports.append)
        a = here.insert("Book", title="A", pages=1, published=BASE)
        b = here.insert("Book", title="B", pages=2, published=BASE)
        assert reports == []
        here.save()
        assert len(reports) == 1
        report = reports[0]
        assert report.event == "saved" and report.inserted == [a, b] and report.updated == [] and report.deleted == []
        here.save()
        assert len(reports) == 1  # nothing to save: nothing reported

        a.pages = 10
        here.delete(b)
        pending = here.pending_changes()
        assert pending.event == "pending" and pending.updated == [amber.Change(a, ("pages",))] and pending.deleted == [b]
        here.save()
        assert reports[-1].updated == [amber.Change(a, ("pages",))] and reports[-1].deleted == [b]

        theirs = there.fetch("Book")[0]
        theirs.title = "A2"
        there.save()
        here.merge_saved_changes()
        assert reports[-1].event == "merged" and reports[-1].refreshed == [amber.Change(a, ("title",))]
        assert reports[-1].refreshed[0].object.title == "A2"  # read inside the report: not a stale cached value

        here.remove_observer(token)
        with pytest.raises(amber.NotFoundError):
            here.remove_observer(token)
        a.pages = 11
        here.save()
        assert len(reports) == 3


def test_a_failing_observer_is_reported_after_the_save(store):
    with store.context() as here, store.context() as there:
        told = []
        here.add_observer(lambda report: 1 / 0)
        here.add_observer(told.append)
        here.insert("Book", title="A", pages=1)
        with pytest.raises(amber.ObserverError) as raised:
            here.save()
        assert "the save is written" in str(raised.value)
        assert "observer 1: ZeroDivisionError: division by zero" in str(raised.value)  # what it raised, in the message
        assert isinstance(raised.value.__cause__, ZeroDivisionError)
        assert len(told) == 1 and not here.has_changes and there.count("Book") == 1


def test_keyboard_interrupt_in_an_observer_propagates_as_itself(store):
    with store.context() as here:
        def interrupt(report):
            raise KeyboardInterrupt
        here.add_observer(interrupt)
        here.insert("Book", title="A", pages=1)
        with pytest.raises(KeyboardInterrupt):
            here.save()
        assert not here.has_changes  # the save was written before the observer ran


def _month(value):
    return datetime.datetime(value.year, value.month, 1, tzinfo=datetime.timezone.utc)


def _sections(books):
    """A fresh fetch sectioned by month, as (month, [objects])."""
    sections = []
    for book in books:
        month = _month(book.published)
        if sections and sections[-1][0] == month:
            sections[-1][1].append(book)
        else:
            sections.append((month, [book]))
    return sections


def test_live_query_changes_applied_to_the_old_results_equal_a_fresh_fetch(store):
    rng = random.Random(1414)

    def day():
        return BASE + datetime.timedelta(days=rng.randrange(120) * 4)

    with store.context() as here, store.context() as there:
        serial = 0
        for _ in range(30):
            serial += 1
            here.insert("Book", title=f"b{serial}", pages=rng.randrange(30), published=day())
        here.save()
        copy = []
        counts = {"calls": 0, "move": 0, "section": 0}

        def apply(changes):
            counts["calls"] += 1
            for change in sorted((c for c in changes if c.kind in ("delete", "move")), key=lambda c: c.old, reverse=True):
                del copy[change.old[0]][1][change.old[1]]
            for change in sorted((c for c in changes if c.kind == "section_delete"), key=lambda c: c.old, reverse=True):
                assert copy[change.old[0]][1] == []
                del copy[change.old[0]]
                counts["section"] += 1
            sections = query.sections
            for change in sorted((c for c in changes if c.kind == "section_insert"), key=lambda c: c.new):
                copy.insert(change.new[0], (sections[change.new[0]].value, []))
                counts["section"] += 1
            for change in sorted((c for c in changes if c.kind in ("insert", "move")), key=lambda c: c.new):
                copy[change.new[0]][1].insert(change.new[1], query.object_at(*change.new))
            counts["move"] += sum(c.kind == "move" for c in changes)

        with here.live_query("Book", "pages > %@", 10, sort=["-published", "title"], section_key="published",
                             section_unit="month", on_change=apply) as query:
            copy[:] = [(s.value, query.objects[s.start:s.start + s.count]) for s in query.sections]
            assert copy == _sections(here.fetch("Book", "pages > %@", 10, sort=["-published", "title"]))
            for _ in range(150):
                context = rng.choice([here, there])
                books = context.fetch("Book")
                action = rng.randrange(4) if books else 0
                if action == 0:
                    serial += 1
                    context.insert("Book", title=f"b{serial}", pages=rng.randrange(30), published=day())
                elif action == 1:
                    context.delete(rng.choice(books))
                elif action == 2:
                    rng.choice(books).pages = rng.randrange(30)
                else:
                    rng.choice(books).published = day()
                context.save()
                if context is there:
                    here.merge_saved_changes()
                fresh = here.fetch("Book", "pages > %@", 10, sort=["-published", "title"])
                assert copy == _sections(fresh)
                assert query.objects == fresh and len(query) == len(fresh)
            assert counts["calls"] > 50 and counts["move"] > 5 and counts["section"] > 0


def test_live_query_misuse(store):
    with store.context() as here:
        with pytest.raises(amber.ValueClassError, match="first sort key"):
            here.live_query("Book", sort=["title"], section_key="pages")
        with pytest.raises(ValueError, match="section_unit"):
            here.live_query("Book", sort=["published"], section_key="published", section_unit="week")
        query = here.live_query("Book", sort=["title"])
        assert len(query) == 0 and [s.count for s in query.sections] == [0]
        with pytest.raises(IndexError):
            query[0]
        query.close()
        with pytest.raises(amber.MisuseError):
            len(query)


def test_callbacks_are_let_go_when_removed_or_closed(store):
    from amber import _common
    with store.context() as here:
        before = len(_common._kept_for_library)
        token = here.add_observer(lambda report: None)
        query = here.live_query("Book", sort=["title"], on_change=lambda changes: None)
        assert len(_common._kept_for_library) == before + 2
        here.remove_observer(token)
        query.close()
        assert len(_common._kept_for_library) == before
        here.add_observer(lambda report: None)
    assert len(_common._kept_for_library) == before  # freed with its context


def test_observing_a_closed_context_is_misuse(store):
    here = store.context()
    here.close()
    with pytest.raises(amber.MisuseError):
        here.add_observer(lambda report: None)
    with pytest.raises(amber.MisuseError):
        here.live_query("Book", sort=["title"])


def test_a_context_whose_observer_refers_to_it_is_collected(store):
    import gc
    from amber import _common
    gc.collect()  # earlier tests' garbage (cycles through tracebacks) must not be counted as this test's
    before = len(_common._kept_for_library)

    def watch():
        ctx = store.context()
        ctx.add_observer(lambda report: ctx.count("Book"))
        query = ctx.live_query("Book", sort=["title"], on_change=lambda changes: len(query))
        assert len(_common._kept_for_library) == before + 2
    watch()
    gc.collect()
    assert len(_common._kept_for_library) == before


def test_a_nested_failing_call_does_not_swallow_an_earlier_callback_exception(store):
    with store.context() as here:
        def interrupt(report):
            raise KeyboardInterrupt

        def nested(report):
            with pytest.raises(amber.NotFoundError):
                here.remove_observer(12345)  # a failing C call inside a callback
        here.add_observer(interrupt)
        here.add_observer(nested)
        here.insert("Book", title="A", pages=1)
        with pytest.raises(KeyboardInterrupt):
            here.save()


def test_waiting_wakes_when_another_thread_saves(store):
    with store.context() as reader:
        assert reader.wait_for_saved_changes(0.05) is False
        failures = []

        def save_elsewhere():
            time.sleep(0.1)
            try:
                with store.context() as writer:
                    writer.insert("Book", title="Waited", pages=1, published=BASE)
                    writer.save()
            except amber.Error as error:  # pragma: no cover - reported below
                failures.append(error)

        saver = threading.Thread(target=save_elsewhere)
        started = time.monotonic()
        saver.start()
        assert reader.wait_for_saved_changes(30.0) is True
        assert time.monotonic() - started < 20, "woke by the save, not the timeout"
        saver.join()
        assert failures == []
        reader.merge_saved_changes()
        assert [book.title for book in reader.fetch("Book")] == ["Waited"]
        assert reader.wait_for_saved_changes(0.03) is False
        with pytest.raises(ValueError, match="timeout"):
            reader.wait_for_saved_changes(-1)
