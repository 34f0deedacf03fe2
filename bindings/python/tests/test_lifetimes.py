"""Every C handle Python owns is freed when its Python object goes away, and
exactly once: close() frees at once, the finalizer then does nothing, and a
finalizer never raises. Whether a handle is live is asked of the C API
itself, which reports a freed handle as AMBER_E_INVALID_HANDLE."""
import gc
import sys
import threading

import pytest

import amber
from amber import _common, ffi, lib

NOTES = {"entities": [{"name": "Note", "attributes": [
    {"name": "title", "type": "string"}, {"name": "pages", "type": "integer32"}]}]}


def registry_status(handle):
    size, alignment, count = ffi.new("size_t *"), ffi.new("size_t *"), ffi.new("size_t *")
    status = lib.amber_registry_struct_layout(size, alignment, ffi.NULL, count, 0, handle, b"NoSuchClass")
    return lib.AMBER_OK if status == lib.AMBER_E_NOT_FOUND else status


def model_status(handle):
    return lib.amber_model_entity(ffi.new("amber_entity **"), handle, b"Note")


def store_status(handle):
    out = ffi.new("amber_context **")
    status = lib.amber_context_new(out, handle)
    if status == lib.AMBER_OK:
        lib.amber_context_free(out[0])
    return status


def context_status(handle):
    return lib.amber_context_has_changes(ffi.new("int32_t *"), handle)


def object_status(handle):
    return lib.amber_object_state(ffi.new("uint32_t *"), handle)


def raw(owner):
    """A copy of the handle that owns nothing, to ask the C API about it after the owner is gone."""
    handle = owner._handle
    return ffi.cast(ffi.typeof(handle), handle)


@pytest.fixture
def unraisable(monkeypatch):
    """Exceptions raised in finalizers (which Python only reports): there must be none."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    yield seen
    gc.collect()
    assert [f"{report.exc_type.__name__}: {report.exc_value}" for report in seen] == []


def test_each_owner_frees_its_handle_when_nothing_holds_it(unraisable):
    registry = amber.Registry()
    model = amber.Model.from_dict(NOTES, registry).bind()
    store = amber.open(None, model)
    context = store.context()
    note = context.insert("Note", title="t")
    handles = [(registry_status, raw(registry)), (model_status, raw(model)), (store_status, raw(store)),
               (context_status, raw(context)), (object_status, raw(note))]

    # Each holds the next (an object its context, a context its store, a store its
    # model, a model its registry): dropping them in any order frees nothing early.
    del registry, model, store, context
    assert [status(handle) for status, handle in handles] == [lib.AMBER_OK] * 5
    del note  # no cycles: reference counting frees them all now, without a garbage collection
    assert [status(handle) for status, handle in handles] == [lib.AMBER_E_INVALID_HANDLE] * 5


def test_close_frees_at_once_and_never_twice(unraisable):
    registry = amber.Registry()
    store = amber.open(None, amber.Model.from_dict(NOTES, registry))
    context = store.context()
    note = context.insert("Note", title="t")
    handles = [(object_status, raw(note)), (context_status, raw(context)), (store_status, raw(store))]
    store.close(discard=True)  # closes its open contexts first (dropping the note), which frees their objects' handles
    assert [status(handle) for status, handle in handles] == [lib.AMBER_E_INVALID_HANDLE] * 3
    store.close()
    context.close()
    registry.close()
    registry.close()
    with pytest.raises(amber.MisuseError, match="its store was closed"):
        note.title = "x"
    # A closed registry stays closed: a model cannot bind against it (nor, silently, against the shared one).
    with pytest.raises(amber.MisuseError, match="released"):
        amber.Model.from_dict(NOTES, registry).bind()
    del note, context, store, registry  # the finalizers find nothing left to free


def test_the_shared_registry_is_never_freed():
    shared = amber.shared_registry()
    shared.close()
    assert registry_status(shared._handle) == lib.AMBER_OK
    assert amber.shared_registry() is shared


def test_an_object_nobody_holds_releases_its_handle(context):
    context.insert_many("Book", ["title", "pages"], [("a", 1), ("b", 2)])
    context.save()
    a = context.fetch("Book", "title == 'a'")[0]
    assert context.fetch("Book", "title == 'a'")[0] is a  # one Python object per handle while it lives
    handle = raw(a)
    del a
    assert object_status(handle) == lib.AMBER_E_INVALID_HANDLE
    assert len(context._objects) == 0
    again = context.fetch("Book", "title == 'a'")[0]
    assert again.pages == 1 and object_status(raw(again)) == lib.AMBER_OK


def test_pending_changes_outlive_the_handles(store):
    with store.context() as ctx:
        ctx.insert_many("Book", ["title", "pages"], [("a", 1), ("b", 2)])
        ctx.save()
    with store.context() as ctx:
        ctx.insert("Book", title="new")
        ctx.fetch("Book", "title == 'a'")[0].pages = 7
        ctx.delete(ctx.fetch("Book", "title == 'b'")[0])
        assert len(ctx._objects) == 0  # every handle above is released already
        assert [book.title for book in ctx.inserted] == ["new"]
        assert [book.title for book in ctx.updated] == ["a"]
        assert len(ctx.deleted) == 1
        ctx.save()
    with store.context() as ctx:
        assert [(book.title, book.pages) for book in ctx.fetch("Book", sort=["title"])] == [("a", 7), ("new", None)]


def test_an_object_dropped_on_another_thread_is_left_to_its_context(store, unraisable):
    context = store.context()
    holder = [context.insert("Book", title="t")]
    handle = raw(holder[0])
    thread = threading.Thread(target=holder.clear)  # the finalizer runs there: the C API refuses, quietly
    thread.start()
    thread.join()
    assert not holder and object_status(handle) == lib.AMBER_OK
    context.close()
    assert object_status(handle) == lib.AMBER_E_INVALID_HANDLE


def test_a_context_and_its_objects_in_a_garbage_cycle(store, unraisable):
    context = store.context()
    book = context.insert("Book", title="t")
    context.cycle = [book, context]
    handles = [(object_status, raw(book)), (context_status, raw(context))]
    del context, book
    assert [status(handle) for status, handle in handles] == [lib.AMBER_OK] * 2
    gc.collect()
    assert [status(handle) for status, handle in handles] == [lib.AMBER_E_INVALID_HANDLE] * 2


def test_a_registry_with_python_transformers_is_freed():
    registry = amber.Registry()
    registry.register_transformer("Shout", "String", "String", str.upper, str.lower)
    live = len(_common._kept_for_library)
    del registry  # the library lets the transformer go only once the registry handle is freed
    assert len(_common._kept_for_library) == live - 1


def test_an_object_keeps_its_context_open(store):
    def make():
        return store.context().insert("Book", title="t")

    book = make()
    assert book.title == "t" and book._context._owns
