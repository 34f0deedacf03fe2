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
    with amber.open(tmp_path / "books.amber", amber.Model.from_dict(MODEL)) as opened:
        yield opened


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
