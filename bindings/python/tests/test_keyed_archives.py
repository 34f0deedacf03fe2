"""Keyed archives (what Core Data's secure unarchiver stores) read through
Amber's built-in archive transformer: archives this test writes with the
standard plistlib module (an encoder Amber does not share) read back as the
values archived, for any plist-like value Hypothesis draws; a class Amber
does not read is named."""
import datetime
import plistlib
import uuid

from hypothesis import given, settings, strategies as st

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
