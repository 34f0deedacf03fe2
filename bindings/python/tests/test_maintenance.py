"""Store maintenance from Python: check (a sound store, a damaged file),
backup (a whole store at a new path, never over a file), vacuum, checkpoint,
the durability option, and a store closed normally leaving only its file."""
import os
import shutil

import pytest

import amber

NOTES = {"entities": [{"name": "Note", "attributes": [
    {"name": "body", "type": "string"},
    {"name": "number", "type": "integer64"},
]}]}


def fill(store, count, first=0):
    with store.context() as ctx:
        ctx.insert_many("Note", ["body", "number"], [("x" * 1000, first + i) for i in range(count)])


@pytest.fixture
def path(tmp_path):
    return tmp_path / "notes.amber"


def test_a_sound_store_has_no_problems(path):
    with amber.open(path, amber.Model.from_dict(NOTES)) as store:
        fill(store, 500)
        assert store.check() == []
        assert amber.check_file(path) == []


def test_backup_is_a_whole_store_and_never_replaces_a_file(path, tmp_path):
    copy = tmp_path / "copy.amber"
    with amber.open(path, amber.Model.from_dict(NOTES)) as store:
        fill(store, 300)
        pending = store.context()
        pending.insert("Note", number=-1)  # not saved: not in the backup
        store.backup(copy)
        assert not os.path.exists(f"{copy}-wal")
        with pytest.raises(amber.DestinationExistsError) as refused:
            store.backup(copy)
        assert isinstance(refused.value, FileExistsError) and isinstance(refused.value, amber.StoreError)
        assert refused.value.origin == str(copy) and "a file is already there" in str(refused.value)
        with pytest.raises(amber.StoreError, match="unable to open"):
            store.backup(tmp_path / "no-such-folder" / "x.amber")
        # A name taken by a dangling link passes the first look but not the final link:
        # refused, and the whole copy made meanwhile is removed.
        os.symlink(tmp_path / "nowhere", tmp_path / "dangling.amber")
        with pytest.raises(amber.DestinationExistsError):
            store.backup(tmp_path / "dangling.amber")
        assert sorted(os.listdir(tmp_path)) == ["copy.amber", "dangling.amber", "notes.amber", "notes.amber-shm", "notes.amber-wal"]
        pending.rollback()
    with amber.open(copy) as restored:  # opens with the model it carries
        ctx = restored.context()
        assert ctx.count("Note") == 300
        assert ctx.count("Note", "number == -1") == 0
        assert restored.check() == []


def test_vacuum_shrinks_the_file_and_keeps_every_object(path):
    with amber.open(path, amber.Model.from_dict(NOTES)) as store:
        fill(store, 2000)
        store.checkpoint()
        full = os.path.getsize(path)
        with store.context() as ctx:
            for note in ctx.fetch("Note", "number >= 50"):
                ctx.delete(note)
        store.checkpoint()
        assert os.path.getsize(f"{path}-wal") == 0
        assert os.path.getsize(path) == full
        store.vacuum()
        assert os.path.getsize(path) < full / 10
        ctx = store.context()
        assert sorted(note.number for note in ctx.fetch("Note")) == list(range(50))
        fill(store, 5, first=100)
        assert ctx.count("Note") == 55


def test_closing_leaves_only_the_store_file(path):
    store = amber.open(path, amber.Model.from_dict(NOTES))
    fill(store, 100)
    assert os.path.exists(f"{path}-wal")
    store.close()
    assert os.listdir(path.parent) == ["notes.amber"]


def test_check_reports_damage_without_raising(path, tmp_path):
    with amber.open(path, amber.Model.from_dict(NOTES)) as store:
        fill(store, 2000)
    damaged = tmp_path / "damaged.amber"
    shutil.copy(path, damaged)
    with open(damaged, "r+b") as file:
        file.seek(8 * 4096)
        file.write(bytes((i * 7919) % 251 for i in range(4096)))
    assert amber.check_file(damaged) != []
    with open(damaged, "r+b") as file:
        file.write(b"\x00" * 100)  # the header: not SQLite any more
    assert any("not a database" in problem for problem in amber.check_file(damaged))
    with pytest.raises(amber.StoreError, match="no such file"):
        amber.check_file(tmp_path / "missing.amber")


def test_durability_option(path):
    with amber.open(path, amber.Model.from_dict(NOTES), durability="full") as store:
        fill(store, 3)
        assert store.context().count("Note") == 3
    with pytest.raises(amber.ArgumentError, match="durability is 'fsync'"):
        amber.open(path, amber.Model.from_dict(NOTES), durability="fsync")


def test_maintenance_on_a_closed_store_is_misuse(path):
    store = amber.open(path, amber.Model.from_dict(NOTES))
    store.close()
    for call in (store.check, store.vacuum, store.checkpoint, lambda: store.backup(path.parent / "b.amber")):
        with pytest.raises(amber.MisuseError):
            call()


def test_in_memory_store_backs_up_to_a_file(tmp_path):
    with amber.open(None, amber.Model.from_dict(NOTES)) as store:
        fill(store, 7)
        store.checkpoint()  # nothing to do in memory
        store.backup(tmp_path / "from-memory.amber")
    with amber.open(tmp_path / "from-memory.amber") as restored:
        assert restored.context().count("Note") == 7
