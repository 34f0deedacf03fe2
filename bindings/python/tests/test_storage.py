"""A disk that fills up: a storage error that says so, nothing lost."""

import os
import subprocess

import pytest

import amber

NOTES = {"entities": [{"name": "Note", "attributes": [{"name": "text", "type": "string"}]}]}


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs of its own (root only: mounting needs it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small disk needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here")
    yield disk
    subprocess.run(["umount", "--lazy", str(disk)], check=True)


def fill(path):
    """Writes zeros to `path` until the disk is full."""
    try:
        with open(path, "wb") as filler:
            while True:
                filler.write(bytes(4096))
                filler.flush()
    except OSError:
        pass


def test_a_full_disk_is_a_storage_error_and_the_changes_stay(small_disk):
    store = amber.open(small_disk / "notes.amber", amber.Model.from_dict(NOTES))
    ctx = store.context()
    ctx.insert("Note", text="first")
    ctx.save()
    fill(small_disk / "filler")
    for index in range(200):
        ctx.insert("Note", text="x" * 2000 + str(index))
    with pytest.raises(amber.StorageError, match="the disk is full: nothing was written, and the context keeps its changes") as caught:
        ctx.save()
    assert isinstance(caught.value, amber.StoreError) and isinstance(caught.value, OSError)
    assert ctx.has_changes and store.context().count("Note") == 1
    os.remove(small_disk / "filler")
    ctx.save()
    assert store.context().count("Note") == 201
    # 201 notes fill most of the 512 KiB disk in the log: there is no room to fold them into the file as well.
    with pytest.raises(amber.StorageError, match="every save is safe in the write-ahead log"):
        store.close()


def test_a_store_that_cannot_be_made_leaves_nothing(small_disk):
    fill(small_disk / "filler")
    with pytest.raises(amber.StorageError, match="no store was made"):
        amber.open(small_disk / "new.amber", amber.Model.from_dict(NOTES))
    assert os.listdir(small_disk) == ["filler"]


def test_closing_on_a_full_disk_says_the_log_stays_beside_the_file(small_disk):
    path = small_disk / "notes.amber"
    store = amber.open(path, amber.Model.from_dict(NOTES))
    with store.context() as ctx:
        ctx.insert_many("Note", ["text"], [("x" * 2000 + str(index),) for index in range(100)])
    fill(small_disk / "filler")  # the saves are in the log; folding them into the file needs room
    with pytest.raises(amber.StorageError, match=r"the disk is full: every save is safe in the write-ahead log beside the file"):
        store.close()
    with pytest.raises(amber.MisuseError):
        store.context()  # closed all the same
    assert sorted(os.listdir(small_disk)) == ["filler", "notes.amber", "notes.amber-shm", "notes.amber-wal"]
    os.remove(small_disk / "filler")
    store = amber.open(path, amber.Model.from_dict(NOTES))
    assert store.context().count("Note") == 100  # nothing was lost
    store.close()
    assert os.listdir(small_disk) == ["notes.amber"]  # folded once there was room
