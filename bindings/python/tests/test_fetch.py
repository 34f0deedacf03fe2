"""Context.fetch reads values through one batch (amber_context_fetch_batch):
the batch is freed before fetch returns, whatever happens, and its columns
read every kind of value: empty ones, struct values nested or not, bytes of
opaque classes."""
import json
import threading

import pytest

import amber
import amber.context as context_module
from amber import _common, _values, ffi, lib
from conftest import filled


class RecordingLibrary:
    """The C library, with every batch a fetch makes and its object handles recorded."""

    def __init__(self):
        self.batches = []
        self.handles = []

    def __getattr__(self, name):
        return getattr(lib, name)

    def amber_context_fetch_batch(self, out, values, objects, count, *rest):
        status = lib.amber_context_fetch_batch(out, values, objects, count, *rest)
        if status == lib.AMBER_OK:
            self.batches.append(ffi.cast("amber_batch *", out[0]))
            self.handles += ffi.unpack(objects[0], count[0]) if count[0] else []
        return status


@pytest.fixture
def recording(monkeypatch):
    library = RecordingLibrary()
    monkeypatch.setattr(context_module, "lib", library)
    return library


def object_status(handle):
    return lib.amber_object_state(ffi.new("uint32_t *"), handle)


def test_every_batch_is_freed_when_fetch_returns(context, recording):
    context.insert_many("Book", ["title", "pages", "cover"], [(f"book {n}", n + 1, bytes([n])) for n in range(50)])
    context.save()
    kept = []
    for round in range(40):
        decode = round % 2 == 1
        kept.append(context.fetch("Book", "pages > %@", round, decode=decode))
        assert context.fetch("Book", "title == 'none'", decode=decode) == []  # an empty result has a batch too
    assert len(recording.batches) == 80
    # Each batch is already freed: freeing it again finds no such handle.
    assert [lib.amber_batch_free(batch) for batch in recording.batches] == [lib.AMBER_E_INVALID_HANDLE] * 80
    assert [len(books) for books in kept] == [50 - round for round in range(40)]
    assert kept[0][3].cover == bytes([3])  # the values outlive their batch: they were copied out of it


def test_a_failed_read_frees_the_batch_and_releases_every_handle(context, recording, monkeypatch):
    context.insert_many("Book", ["title"], [("a",), ("b",)])
    context.save()

    class Failing:
        def columns(self, *arguments):
            raise RuntimeError("cannot read")

    monkeypatch.setattr(context_module, "_reader", Failing())
    try:
        context.fetch("Book")
    except RuntimeError as error:
        assert str(error) == "cannot read"
    else:
        pytest.fail("the fetch did not fail")
    assert lib.amber_batch_free(recording.batches[0]) == lib.AMBER_E_INVALID_HANDLE
    assert len(recording.handles) == 2
    assert [object_status(handle) for handle in recording.handles] == [lib.AMBER_E_INVALID_HANDLE] * 2
    assert len(context._objects) == 0


@pytest.mark.parametrize("decode", [False, True])
def test_a_fetch_on_another_thread_is_refused(context, decode):
    context.insert("Book", title="t")
    context.save()
    errors = []

    def elsewhere():
        try:
            context.fetch("Book", decode=decode)
        except amber.MisuseError as error:
            errors.append(error)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert len(errors) == 1 and errors[0].code == lib.AMBER_E_WRONG_THREAD
    assert "belongs to another thread" in errors[0].message
    assert [book.title for book in context.fetch("Book", decode=decode)] == ["t"]  # still usable on its own thread


def test_empty_strings_and_bytes_among_others_and_alone():
    model = amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [
        {"name": "n", "type": "integer32"}, {"name": "text", "type": "string"}, {"name": "data", "type": "binary"}]}]},
        amber.Registry())
    with amber.open(None, model) as store:
        with store.context() as ctx:
            ctx.insert_many("Note", ["n", "text", "data"], [(1, "", b""), (2, "é", b"\x00"), (3, "", b"")])
            ctx.save()
        with store.context() as ctx:
            rows = [(note.text, note.data) for note in ctx.fetch("Note", sort=["n"])]
            assert rows == [("", b""), ("é", b"\x00"), ("", b"")]
            # Every value of the batch empty: nothing to read from its arena.
            assert [(note.text, note.data) for note in ctx.fetch("Note", "n != 2")] == [("", b""), ("", b"")]


def test_an_entity_with_nothing_to_read_with_the_fetch():
    registry = amber.Registry()

    @registry.transformer("Reverse", input="String", output="String")
    class Reverse:
        def forward(self, text):
            return text[::-1]

        def reverse(self, text):
            return text[::-1]

    model = amber.Model.from_dict({"entities": [{"name": "Secret", "attributes": [
        {"name": "word", "type": "transformable", "valueClass": "String", "transformer": "Reverse"}]}]}, registry)
    with amber.open(None, model) as store:
        with store.context() as ctx:
            ctx.insert_many("Secret", ["word"], [("amber",), ("resin",)])
            ctx.save()
        with store.context() as ctx:
            lazy = ctx.fetch("Secret", sort=["word"])  # no attribute is prefetched: no batch, objects only
            assert [filled(secret) for secret in lazy] == [[], []]
            assert sorted(secret.word for secret in lazy) == ["amber", "resin"]
            assert ctx.fetch("Secret", "word == 'none'") == []
        with store.context() as ctx:
            assert sorted(secret.word for secret in ctx.fetch("Secret", decode=True)) == ["amber", "resin"]


def test_struct_values_nested_or_not_and_opaque_bytes_read_with_the_fetch():
    registry = amber.Registry()
    registry.declare_struct("Point", [("x", "double"), ("y", "double")])
    registry.declare_struct("Tagged", [("tag", "int8"), ("at", "Point"), ("ok", "bool")])
    registry.declare_opaque("Blob", 4)
    registry.register_transformer("TaggedToData", "Tagged", "Binary", lambda value: json.dumps(value).encode(),
                                  lambda data: (lambda t: (t[0], tuple(t[1]), t[2]))(json.loads(data)))
    registry.register_transformer("BlobToData", "Blob", "Binary", bytes, bytes)
    model = amber.Model.from_dict({"entities": [{"name": "Holder", "attributes": [
        {"name": "n", "type": "integer32"},
        {"name": "tagged", "type": "transformable", "valueClass": "Tagged", "transformer": "TaggedToData"},
        {"name": "blob", "type": "transformable", "valueClass": "Blob", "transformer": "BlobToData"}]}]}, registry)
    Tagged, Point = registry.struct_type("Tagged"), registry.struct_type("Point")
    rows = [(1, Tagged(-3, Point(1.5, -2.0), True), b"\x01\x02\x03\x04"), (2, None, None), (3, (7, (0.0, 0.5), False), b"abcd")]
    with amber.open(None, model) as store:
        with store.context() as ctx:
            ctx.insert_many("Holder", ["n", "tagged", "blob"], rows)
            ctx.save()
        for decode in (False, True):
            with store.context() as ctx:
                holders = ctx.fetch("Holder", sort=["n"], decode=decode)
                assert [len(filled(holder)) for holder in holders] == [3 if decode else 1] * 3
                assert [(holder.tagged, holder.blob) for holder in holders] == [
                    (Tagged(-3, Point(1.5, -2.0), True), b"\x01\x02\x03\x04"), (None, None), (Tagged(7, Point(0.0, 0.5), False), b"abcd")]
                assert type(holders[0].tagged) is model.struct_type("Tagged")
                assert type(holders[0].tagged.at) is model.struct_type("Point")


def test_a_value_of_an_unknown_type_is_refused():
    values = ffi.new("amber_value[]", 2)
    values[0].type = lib.AMBER_VALUE_INT
    values[1].type = 99
    with pytest.raises(TypeError, match="unknown amber value type 99"):
        _common._reader.columns(values, 2, 1, lambda name: None)


def test_a_values_array_it_cannot_read_by_its_layout_is_refused():
    class Wider(_values.BatchReader):
        FIELDS = {**_values.BatchReader.FIELDS, "type": (("type",), "q")}  # int32_t read as 8 bytes

    with pytest.raises(ImportError, match=r"amber_value.type \(4 bytes at offset 0 of \d+\) cannot be read"):
        Wider()


def test_a_limit_below_one_is_refused_not_read_as_no_limit(context):
    for title in ("A", "B", "C"):
        context.insert("Book", title=title)
    context.save()
    assert len(context.fetch("Book", limit=2)) == 2 and len(context.fetch("Book", limit=None)) == 3
    # C reads 0 and below as "no limit": from Python they would have fetched every object.
    for bad in (0, -1, 1.5, True):
        with pytest.raises(amber.ArgumentError, match="limit"):
            context.fetch("Book", limit=bad)
