"""Undo and redo from Python: named groups, undo after save, the levels
limit, and a to-one relationship undone with its inverse."""
import pytest

import amber

LIBRARY = {"entities": [
    {"name": "Author", "attributes": [{"name": "name", "type": "string"}],
     "relationships": [{"name": "books", "destination": "Book", "toMany": True, "inverse": "author"}]},
    {"name": "Book", "attributes": [{"name": "title", "type": "string"}, {"name": "price", "type": "double"}],
     "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]},
]}


@pytest.fixture
def ctx(tmp_path):
    store = amber.open(tmp_path / "undo.amber", amber.Model.from_dict(LIBRARY, amber.Registry()))
    with store.context() as context:
        yield context


def test_undo_and_redo_sets_inserts_deletes_and_links(ctx):
    assert ctx.undo() is False  # undo not enabled: nothing to undo
    ctx.enable_undo()
    with ctx.undo_group("Add Book"):
        author = ctx.insert("Author", name="Le Guin")
        book = ctx.insert("Book", title="Lathe", price=9.5)
        book.author = author
    assert ctx.undo_action_name == "Add Book" and ctx.can_undo
    ctx.save()
    book.title = "The Lathe of Heaven"
    ctx.save()
    assert ctx.undo() is True
    assert book.title == "Lathe" and ctx.has_changes  # undo after save: dirty again
    assert ctx.redo() is True and book.title == "The Lathe of Heaven"
    other = ctx.insert("Author", name="Butler")
    book.author = other
    assert [b.title for b in other.books] == ["The Lathe of Heaven"] and list(author.books) == []
    ctx.undo()
    assert book.author == author and [b.title for b in author.books] == ["The Lathe of Heaven"]
    ctx.undo()  # the insert of Butler
    ctx.delete(book)
    ctx.save()
    assert ctx.count("Book") == 0
    assert ctx.undo() is True  # the saved deletion: back under its own key
    ctx.save()
    assert [b.title for b in ctx.fetch("Book")] == ["The Lathe of Heaven"]
    assert book.author == author


def test_levels_limit_redo_cleared_and_misuse(ctx):
    ctx.enable_undo(levels_limit=2)
    book = ctx.insert("Book", title="a")
    for title in "bcd":
        book.title = title
    assert ctx.undo() and ctx.undo() and book.title == "b"
    assert ctx.undo() is False and book.title == "b"  # past the limit: a no-op that says so
    assert ctx.can_redo and ctx.redo_action_name is None
    book.title = "e"
    assert not ctx.can_redo
    with pytest.raises(amber.Error, match="levels_limit is -1"):
        ctx.enable_undo(-1)
    ctx.rollback()
    assert not ctx.can_undo
    ctx.disable_undo()
    with pytest.raises(amber.Error, match="undo is not enabled"):
        with ctx.undo_group("x"):
            pass


def test_undo_of_a_saved_deletion_keeps_an_ordered_to_many_in_its_order(tmp_path):
    tagged = {"entities": [
        {"name": "Book", "attributes": [{"name": "title", "type": "string"}],
         "relationships": [{"name": "tags", "destination": "Tag", "toMany": True, "ordered": True, "inverse": "books"}]},
        {"name": "Tag", "attributes": [{"name": "label", "type": "string"}],
         "relationships": [{"name": "books", "destination": "Book", "toMany": True, "inverse": "tags"}]},
    ]}
    store = amber.open(tmp_path / "tags.amber", amber.Model.from_dict(tagged, amber.Registry()))
    with store.context() as ctx:
        a, b, c = (ctx.insert("Tag", label=label) for label in "abc")
        book = ctx.insert("Book", title="Dune")
        book.tags = [c, a, b]
        ctx.save()
        ctx.enable_undo()
        ctx.delete(book)
        ctx.save()
        assert ctx.undo() is True
        assert [tag.label for tag in book.tags] == ["c", "a", "b"]
        ctx.save()
    with store.context() as reader:
        (read,) = reader.fetch("Book")
        assert [tag.label for tag in read.tags] == ["c", "a", "b"]
