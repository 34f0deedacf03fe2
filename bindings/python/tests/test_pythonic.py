"""Objects, contexts, stores and models that behave as Python users expect:
unknown names raise an AttributeError (and KeyError) subclass, so getattr
with a default and hasattr work; `in`, keys() and iteration list attribute
names; `with store.context()` saves on a clean exit and rolls back on an
exception, like sqlite3's `with connection:`; reprs say what things are;
a default that breaks its own rules does not bind."""
import pytest

import amber

MODEL = {"entities": [
    {"name": "Book", "attributes": [{"name": "title", "type": "string"}, {"name": "pages", "type": "integer32"}],
     "relationships": [{"name": "shelf", "destination": "Shelf", "inverse": "books"}]},
    {"name": "Shelf", "extensible": True, "attributes": [{"name": "label", "type": "string"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "shelf", "toMany": True}]},
]}


@pytest.fixture
def store(tmp_path):
    opened = amber.open(tmp_path / "books.amber", amber.Model.from_dict(MODEL))
    yield opened
    opened.close(discard=True)  # the tests leave changes unsaved


def test_unknown_names_are_attribute_and_key_errors(store):
    ctx = store.context()
    book = ctx.insert("Book", title="Dune")
    assert getattr(book, "titel", "fallback") == "fallback"
    assert not hasattr(book, "titel") and hasattr(book, "title")
    with pytest.raises(amber.UnknownNameError, match="did you mean title") as caught:
        book.titel
    assert isinstance(caught.value, (AttributeError, KeyError, amber.NotFoundError))
    with pytest.raises(KeyError):
        book["titel"]
    with pytest.raises(AttributeError):
        book.titel = "x"
    # On an extensible entity an unknown name is an extended key: it reads as None.
    shelf = ctx.insert("Shelf", label="A")
    assert getattr(shelf, "color", "fallback") is None


def test_in_keys_and_iteration_list_attribute_names(store):
    ctx = store.context()
    book = ctx.insert("Book", title="Dune", pages=412)
    assert "title" in book and "pages" in book and "titel" not in book and 3 not in book
    assert book.keys() == ["title", "pages"] and list(book) == ["title", "pages"]
    assert dict(zip(book, (book[name] for name in book))) == book.to_dict() == {"title": "Dune", "pages": 412}
    shelf = ctx.insert("Shelf", label="A")
    shelf["color"] = "red"
    assert list(shelf) == ["label", "color"] and "color" in shelf and "size" not in shelf


def test_with_context_saves_on_a_clean_exit_and_rolls_back_on_an_error(store):
    with store.context() as ctx:
        ctx.insert("Book", title="kept")
    with pytest.raises(RuntimeError):
        with store.context() as ctx:
            ctx.insert("Book", title="dropped")
            raise RuntimeError("boom")
    titles = [book.title for book in store.context().fetch("Book")]
    assert titles == ["kept"]
    # A save that fails at exit raises, and nothing is written.
    strict = amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [{"name": "text", "type": "string", "optional": False}]}]})
    with amber.open(None, strict) as memory:
        with pytest.raises(amber.ValidationError):
            with memory.context() as ctx:
                ctx.insert("Note")
        assert memory.context().fetch("Note") == []


def test_reprs_say_what_things_are(store):
    assert repr(store).startswith("<amber.Store ") and "books.amber" in repr(store)
    assert repr(store.model) == "<amber.Model Book, Shelf>"
    ctx = store.context()
    assert repr(ctx).endswith("no unsaved changes>")
    ctx.insert("Book", title="x")
    assert repr(ctx).endswith("with unsaved changes>")
    assert repr(amber.Model.from_dict(MODEL)) == "<amber.Model Book, Shelf, not bound yet>"


def test_a_default_that_breaks_its_own_rules_does_not_bind():
    model = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [
        {"name": "code", "type": "string", "default": "toolong", "maxLength": 4}]}]})
    with pytest.raises(amber.ModelError, match="Book.code: default value: 7 characters, more than the maximum 4"):
        model.bind()


def test_attribute_names_cannot_hide_the_object_api(tmp_path):
    """Attributes and relationships named like the Object API are items only;
    the API, and what the binding does with it (objects as predicate
    arguments, repr), keeps working."""
    model = amber.Model.from_dict({"entities": [
        {"name": "Thing", "attributes": [{"name": "uri", "type": "string"}, {"name": "entity", "type": "string"},
                                         {"name": "to_dict", "type": "integer32"}],
         "relationships": [{"name": "keys", "destination": "Thing", "inverse": "primary_key"},
                           {"name": "primary_key", "destination": "Thing", "inverse": "keys"}]}]})

    def check_reads(read):
        assert read.uri.startswith("amber://") and read.entity == "Thing" and callable(read.to_dict)
        assert read["uri"] == "http://example.com" and read["entity"] == "mine" and read["to_dict"] == 3
        assert read["keys"]["uri"] == "other" and read["keys"]["primary_key"].uri == read.uri
        assert read.to_dict() == {"uri": "http://example.com", "entity": "mine", "to_dict": 3}
        assert read.keys() == ["uri", "entity", "to_dict"] and "uri" in read
        assert repr(read) == f"<amber.Object Thing {read.uri}>"

    with amber.open(tmp_path / "things.amber", model) as store:
        ctx = store.context()
        thing = ctx.insert("Thing", uri="http://example.com", entity="mine", to_dict=3)
        other = ctx.insert("Thing", uri="other")
        thing["keys"] = other
        check_reads(thing)
        ctx.save()
        check_reads(store.context().fetch("Thing", "uri == %@", "http://example.com")[0])  # read through the fetch's slots
        with pytest.raises(amber.ReservedNameError, match=r'Thing.uri: "uri" is a name of the object\'s API.*obj\["uri"\] = value') as caught:
            thing.uri = "changed"
        assert isinstance(caught.value, AttributeError) and isinstance(caught.value, amber.MisuseError)
        assert thing["uri"] == "http://example.com" and not ctx.has_changes
        thing["uri"] = "changed"
        assert [t.uri for t in ctx.fetch("Thing", "SELF == %@", thing)] == [thing.uri]
        assert [t["uri"] for t in ctx.fetch("Thing", "SELF IN %@", [thing, other], sort=["uri"])] == ["changed", "other"]
        ctx.rollback()


BAD_CALLS = {
    "a predicate that is not text": lambda ctx, book: ctx.fetch("Book", 123),
    "a sort key that is not text": lambda ctx, book: ctx.fetch("Book", sort=[3]),
    "a limit that is not a number": lambda ctx, book: ctx.fetch("Book", limit="x"),
    "an entity name that is not text": lambda ctx, book: ctx.insert(None),
    "a row too short": lambda ctx, book: ctx.insert_many("Book", ["title", "pages"], [("a",)]),
    "a column that is no sequence": lambda ctx, book: ctx.insert_columns("Book", {"title": 5}),
    "columns of different lengths": lambda ctx, book: ctx.insert_columns("Book", {"title": ["a", "b"], "pages": [1]}),
    "model text that is not text": lambda ctx, book: amber.Model.from_json(5),
    "a model dict JSON cannot hold": lambda ctx, book: amber.Model.from_dict({"entities": {1, 2}}),
    "a path that is no path": lambda ctx, book: amber.open(123, amber.Model.from_dict(MODEL)),
    "a URI that is not text": lambda ctx, book: ctx.object(5),
    "deleting what is no object": lambda ctx, book: ctx.delete(5),
    "a struct field without a type": lambda ctx, book: amber.Registry().declare_struct("P", [("x",)]),
    "a transformer name that is not text": lambda ctx, book: amber.Registry().register_transformer(5, "String", "Binary", bytes, bytes),
    "an item name that is not text": lambda ctx, book: book[3],
    "setting an item whose name is not text": lambda ctx, book: book.__setitem__(3, 1),
    "a template name that is not text": lambda ctx, book: ctx.fetch_template(5),
    "a related object that is no object": lambda ctx, book: setattr(book, "shelf", "A"),
}


@pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_every_bad_argument_is_an_amber_error(store, call):
    """Bad arguments raise amber.ArgumentError (also a TypeError and a
    ValueError, as Python's own checks raise either) and change nothing."""
    ctx = store.context()
    book = ctx.insert("Book", title="Dune")
    ctx.save()
    with pytest.raises(amber.ArgumentError) as caught:
        call(ctx, book)
    assert isinstance(caught.value, (TypeError, ValueError)) and str(caught.value)
    assert not ctx.has_changes and ctx.count("Book") == 1


def test_an_index_past_the_end_of_a_live_query(store):
    ctx = store.context()
    ctx.insert("Book", title="Dune")
    ctx.save()
    query = ctx.live_query("Book")
    assert query[0].title == "Dune" and query[-1].title == "Dune"
    with pytest.raises(amber.IndexOutOfRangeError) as caught:
        query[1]
    assert isinstance(caught.value, IndexError) and isinstance(caught.value, amber.Error)
    assert [book.title for book in query] == ["Dune"]
