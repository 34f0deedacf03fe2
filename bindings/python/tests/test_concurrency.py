"""Several contexts, threads and connections on one store: saves wait for
each other, and a save kept waiting past the busy timeout raises BusyError
with every pending change kept."""
import sqlite3
import threading
import time

import pytest

import amber

COUNTERS = {"entities": [
    {"name": "Counter", "attributes": [{"name": "name", "type": "string"}, {"name": "value", "type": "integer64"}]},
]}


def counters():
    return amber.Model.from_dict(COUNTERS, amber.Registry())


def write(store, name, saves):
    with store.context() as ctx:
        counter = ctx.insert("Counter", name=name, value=0)
        for step in range(1, saves + 1):
            counter.value = step
            ctx.insert("Counter", name=f"{name}-{step}", value=-1)
            ctx.save()


def test_contexts_on_threads_and_two_connections_wait_for_each_other(tmp_path):
    path = tmp_path / "shared.amber"
    model = counters()
    shared = amber.open(path, model)
    errors = []

    def run(target, name):
        try:
            write(target, name, 100)
        except amber.Error as error:  # reported below, with the others
            errors.append(error)

    # Two threads share one store; a third writes through a second connection to the same file.
    threads = [threading.Thread(target=run, args=(shared, f"t{i}")) for i in range(2)]
    threads.append(threading.Thread(target=run, args=(amber.open(path, model), "other")))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with shared.context() as ctx:
        assert ctx.count("Counter", "value == -1") == 300
        assert sorted(c.value for c in ctx.fetch("Counter", "value >= 0")) == [100, 100, 100]


def test_a_save_blocked_past_the_timeout_raises_busy_and_keeps_its_changes(tmp_path):
    path = tmp_path / "busy.amber"
    store = amber.open(path, counters(), busy_timeout=0.2)
    ctx = store.context()
    counter = ctx.insert("Counter", name="kept", value=1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(amber.BusyError) as caught:
        ctx.save()
    assert time.monotonic() - started >= 0.15
    assert isinstance(caught.value, amber.StoreError) and not isinstance(caught.value, amber.ValidationError)
    assert "retrying may succeed" in str(caught.value)
    assert ctx.has_changes and counter.name == "kept"
    blocker.execute("COMMIT")
    blocker.close()
    ctx.save()
    with store.context() as fresh:
        assert [c.name for c in fresh.fetch("Counter")] == ["kept"]


def test_busy_timeout_must_not_be_negative(tmp_path):
    with pytest.raises(ValueError, match="busy_timeout"):
        amber.open(tmp_path / "x.amber", counters(), busy_timeout=-1)


def shapes(path):
    model = amber.Model.from_dict({"entities": [{"name": "Shape", "attributes": [
        {"name": "color", "type": "string"}, {"name": "size", "type": "integer64"}]}]}, amber.Registry())
    return amber.open(path, model)


def test_merges_keep_what_was_set_here(tmp_path):
    """The seed's case: red → blue here; others save green, blue, red; still blue here."""
    store = shapes(tmp_path / "merge.amber")
    with store.context() as setup:
        setup.insert("Shape", color="red", size=1)
        setup.save()
    here, there = store.context(), store.context()
    mine, theirs = here.fetch("Shape")[0], there.fetch("Shape")[0]
    mine.color = "blue"
    for size, saved in enumerate(["green", "blue", "red"], start=2):
        theirs.color, theirs.size = saved, size
        there.save()
        here.merge_saved_changes()
        assert (mine.color, mine.size) == ("blue", size)
    here.save()
    with store.context() as fresh:
        assert [(s.color, s.size) for s in fresh.fetch("Shape")] == [("blue", 4)]
    # refresh(merge_changes=False) drops what was set here; a conflict is reported until refreshed.
    mine.color = "white"
    here.refresh(mine, merge_changes=False)
    assert mine.color == "blue" and not here.has_changes
    theirs.size = 5
    with pytest.raises(amber.ValidationError, match=r"was changed in the store .*size: read 4, stored 4, here 5"):
        there.save()
    there.refresh(theirs)
    there.save()
    # Automatic merging: a fetch sees the save of another connection to the file.
    here.automatically_merges_changes = True
    assert here.automatically_merges_changes
    with shapes(tmp_path / "merge.amber").context() as elsewhere:
        shape = elsewhere.fetch("Shape")[0]
        shape.size = 6
        elsewhere.save()
    assert mine.size == 4  # nothing merged yet: neither their size 5 nor the other connection's 6
    here.count("Shape")
    assert mine.size == 6


@pytest.mark.parametrize("policy, expected", [
    (amber.MergePolicy.STORE_WINS, ("green", 2, 10)),
    (amber.MergePolicy.OBJECT_WINS, ("blue", 2, 10)),
    (amber.MergePolicy.OVERWRITE, ("blue", 2, 1)),
])
def test_merge_policies_settle_conflicts_per_key(tmp_path, policy, expected):
    """Here: color blue, size 2. There, saved first: color green, weight 10."""
    model = amber.Model.from_dict({"entities": [{"name": "Shape", "attributes": [
        {"name": "color", "type": "string"}, {"name": "size", "type": "integer64"},
        {"name": "weight", "type": "integer64"}]}]}, amber.Registry())
    store = amber.open(tmp_path / "policies.amber", model)
    with store.context() as setup:
        setup.insert("Shape", color="red", size=1, weight=1)
        setup.save()
    here, there = store.context(), store.context()
    mine, theirs = here.fetch("Shape")[0], there.fetch("Shape")[0]
    assert here.merge_policy is amber.MergePolicy.ERROR
    mine.color, mine.size = "blue", 2
    theirs.color, theirs.weight = "green", 10
    there.save()
    with pytest.raises(amber.ValidationError) as caught:
        here.save()
    assert 'color: read "red", stored "green", here "blue"' in str(caught.value)
    assert here.has_changes and mine.color == "blue"
    here.merge_policy = policy
    assert here.merge_policy is policy
    here.save()
    assert (mine.color, mine.size, mine.weight) == expected and not here.has_changes
    with store.context() as fresh:
        assert [(s.color, s.size, s.weight) for s in fresh.fetch("Shape")] == [expected]
    with pytest.raises(ValueError, match="7 is not a valid MergePolicy"):
        here.merge_policy = 7
