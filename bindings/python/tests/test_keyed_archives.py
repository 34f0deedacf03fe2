"""Keyed archives (what Core Data's secure unarchiver stores) read through
Amber's built-in archive transformer: archives this test writes with the
standard plistlib module (an encoder Amber does not share) read back as the
values archived, for any plist-like value Hypothesis draws; a class Amber
does not read is named; and what Amber saves in a store in Core Data's
layout is an archive plistlib reads as the value saved."""
import datetime
import plistlib
import sqlite3
import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import amber

UID = plistlib.UID
EPOCH_2001 = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)


def keyed_archive(value):
    """`value` as NSKeyedArchiver lays it out: $objects with $null first, containers by UID, a $class per archived object."""
    objects, classes = ["$null"], {}

    def class_uid(name):
        if name not in classes:
            objects.append({"$classname": name, "$classes": [name, "NSObject"]})
            classes[name] = UID(len(objects) - 1)
        return classes[name]

    def add(item):
        if item is None:
            return UID(0)
        if isinstance(item, (str, int, float, bytes)):  # bool is an int
            objects.append(item)
            return UID(len(objects) - 1)
        slot = len(objects)
        objects.append(None)
        if isinstance(item, datetime.datetime):
            archived = {"NS.time": (item - EPOCH_2001).total_seconds(), "$class": class_uid("NSDate")}
        elif isinstance(item, uuid.UUID):
            archived = {"NS.uuidbytes": item.bytes, "$class": class_uid("NSUUID")}
        elif isinstance(item, list):
            archived = {"NS.objects": [add(member) for member in item], "$class": class_uid("NSMutableArray")}
        elif isinstance(item, dict):
            archived = {"NS.keys": [add(key) for key in item], "NS.objects": [add(member) for member in item.values()],
                        "$class": class_uid("NSDictionary")}
        else:
            archived = {"text": add(str(item)), "$class": class_uid(type(item).__name__)}
        objects[slot] = archived
        return UID(slot)

    root = add(value)
    return plistlib.dumps({"$version": 100000, "$archiver": "NSKeyedArchiver", "$top": {"root": root}, "$objects": objects},
                          fmt=plistlib.FMT_BINARY)


scalars = (st.none() | st.booleans() | st.integers(min_value=-2**63, max_value=2**63 - 1) | st.text(max_size=20)
           | st.floats(allow_nan=False, allow_infinity=False) | st.binary(max_size=20) | st.uuids()
           | st.integers(min_value=-10**9, max_value=10**9).map(lambda s: EPOCH_2001 + datetime.timedelta(seconds=s)))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                      max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(values.filter(lambda value: value is not None))  # a nil root is no value: Core Data stores NULL
def test_archives_plistlib_wrote_read_back_as_their_values(value):
    archive = amber.Registry().transformer("AmberArchive")
    assert archive.reverse(keyed_archive(value)) == value


def test_a_class_amber_does_not_read_is_named():
    class Cover:
        pass
    archive = amber.Registry().transformer("AmberArchive")
    try:
        archive.reverse(keyed_archive(Cover()))
    except amber.TransformerError as error:
        assert "an archived Cover, which is not a property-list class Amber reads" in str(error)
    else:
        raise AssertionError("an archived Cover was read")


def unarchive(data):
    """An NSKeyedArchiver archive read with plistlib, its references resolved here: the reference for what Amber writes."""
    top = plistlib.loads(data)
    assert top["$archiver"] == "NSKeyedArchiver" and top["$version"] == 100000
    objects = top["$objects"]

    def read(uid):
        item = objects[uid.data]
        if uid.data == 0:
            return None
        if not isinstance(item, dict):
            return item
        name = objects[item["$class"].data]["$classname"]
        if name == "NSDate":
            return EPOCH_2001 + datetime.timedelta(seconds=item["NS.time"])
        if name == "NSUUID":
            return uuid.UUID(bytes=item["NS.uuidbytes"])
        if name == "NSNull":
            return None
        if name == "NSArray":
            return [read(member) for member in item["NS.objects"]]
        assert name == "NSDictionary", name
        return {read(key): read(member) for key, member in zip(item["NS.keys"], item["NS.objects"])}
    return read(top["$top"]["root"])


NOTES_MODEL = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic" sourceLanguage="Swift">
  <entity name="Note"><attribute name="info" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromDataTransformer"/></entity>
</model>"""


@pytest.fixture(scope="module")
def notes_store(tmp_path_factory):
    """A store in Core Data's layout (made with sqlite3) whose Note.info an imported model archives with Amber's archive transformer."""
    folder = tmp_path_factory.mktemp("notes")
    (folder / "Notes.xcdatamodel").mkdir()
    (folder / "Notes.xcdatamodel" / "contents").write_text(NOTES_MODEL)
    path = folder / "Notes.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(f"""
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Note', 0, 0);
            INSERT INTO Z_METADATA VALUES (1, '{str(uuid.uuid4()).upper()}', NULL);
            CREATE TABLE ZNOTE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZINFO BLOB);""")
    db.close()
    with amber.open(path, amber.Model.from_xcode(folder / "Notes.xcdatamodel")) as store:
        yield path, store


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values.filter(lambda value: value is not None))
def test_values_saved_in_a_core_data_store_are_archives_plistlib_reads(notes_store, value):
    path, store = notes_store
    with store.context() as ctx:
        note = ctx.insert("Note", info=value)
        ctx.save()
        key = note.primary_key
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        (data,) = db.execute("SELECT ZINFO FROM ZNOTE WHERE Z_PK = ?", (key,)).fetchone()
    db.close()
    assert data.startswith(b"bplist00")
    assert unarchive(data) == value
