"""Relationships from Python: to-one attributes, live to-many collections,
both sides kept in step, saves and faults, delete rules and the errors."""
import random

import pytest

import amber

LIBRARY = {"entities": [
    {"name": "Author", "attributes": [{"name": "name", "type": "string"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True,
                        "deleteRule": "cascade"}]},
    {"name": "Book", "attributes": [{"name": "title", "type": "string"}],
     "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                       {"name": "tags", "destination": "Tag", "inverse": "books", "toMany": True, "ordered": True}]},
    {"name": "Tag", "attributes": [{"name": "label", "type": "string"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "tags", "toMany": True, "maxCount": 2}]},
]}


@pytest.fixture
def library(tmp_path):
    model = amber.Model.from_dict(LIBRARY, amber.Registry())
    path = tmp_path / "library.amber"
    with amber.open(path, model) as store:
        yield store, path, model


def test_relationships_are_described():
    model = amber.Model.from_dict(LIBRARY, amber.Registry())
    books = model.entity("Author").relationships["books"]
    assert (books.destination, books.inverse, books.to_many, books.delete_rule) == ("Book", "author", True, "cascade")
    tags = model.entity("Book").relationships["tags"]
    assert tags.ordered and tags.max_count is None and model.entity("Tag").relationships["books"].max_count == 2
    assert "ordered to-many Tag" in repr(tags)
    broken = {"entities": [LIBRARY["entities"][0], {
        "name": "Book", "attributes": [{"name": "title", "type": "string"}],
        "relationships": [{"name": "writer", "destination": "Author", "inverse": "books"}]}]}
    with pytest.raises(amber.ModelError, match=r"(?s)Author.books: inverse Book.author: no such relationship.*"
                                               r"Book.writer: inverse Author.books names Book.author as its inverse"):
        amber.Model.from_dict(broken, amber.Registry()).bind()


def test_a_required_to_many_may_be_empty_unless_it_declares_a_minimum():
    """As in Core Data: `optional: false` alone lets a to-many be empty; a `minCount` is kept as declared."""
    def shelves(**counts):
        return amber.Model.from_dict({"entities": [
            {"name": "Shelf", "relationships": [{"name": "books", "destination": "Book", "inverse": "shelf", "toMany": True,
                                                 "optional": False, **counts}]},
            {"name": "Book", "attributes": [{"name": "title", "type": "string"}],
             "relationships": [{"name": "shelf", "destination": "Shelf", "inverse": "books"}]}]}, amber.Registry())
    with amber.open(None, shelves()) as store, store.context() as ctx:
        ctx.insert("Shelf")
        ctx.save()
        assert ctx.count("Shelf") == 1
    with amber.open(None, shelves(minCount=1)) as store, store.context() as ctx:
        shelf = ctx.insert("Shelf")
        with pytest.raises(amber.ValidationError, match="Shelf.books: has 0 members, fewer than its minimum of 1"):
            ctx.save()
        shelf.books.add(ctx.insert("Book", title="Dune"))
        ctx.save()


def test_both_sides_stay_in_step(library):
    store, _, _ = library
    with store.context() as ctx:
        tolkien, austen = ctx.insert("Author", name="Tolkien"), ctx.insert("Author", name="Austen")
        hobbit, emma = ctx.insert("Book", title="Hobbit"), ctx.insert("Book", title="Emma")
        hobbit.author = tolkien
        assert list(tolkien.books) == [hobbit] and len(tolkien.books) == 1 and hobbit in tolkien.books
        austen.books.add(emma)
        assert emma.author is austen
        tolkien.books.add(emma)  # moves it
        assert list(austen.books) == [] and {b.title for b in tolkien.books} == {"Hobbit", "Emma"}
        tolkien.books.remove(emma)
        assert emma.author is None
        with pytest.raises(KeyError):
            tolkien.books.remove(emma)
        austen.books = [emma, hobbit]  # replaces the members
        assert hobbit.author is austen and len(tolkien.books) == 0
        assert hobbit["author"] is austen
        # Many-to-many, ordered on the book's side.
        fantasy, classic = ctx.insert("Tag", label="fantasy"), ctx.insert("Tag", label="classic")
        hobbit.tags.add(fantasy)
        hobbit.tags.add(classic)
        assert [t.label for t in hobbit.tags] == ["fantasy", "classic"] and hobbit.tags[1] is classic
        assert list(fantasy.books) == [hobbit]
        hobbit.tags = [classic, fantasy]  # reordered
        assert [t.label for t in hobbit.tags] == ["classic", "fantasy"]
        with pytest.raises(amber.ValueClassError, match="each object once"):
            hobbit.tags = [classic, classic]
        with pytest.raises(TypeError, match="not ordered"):
            fantasy.books[0]
        ctx.save()


def test_wrong_destinations_raise_and_change_nothing(library):
    store, _, _ = library
    with store.context() as ctx, store.context() as other:
        tolkien, hobbit = ctx.insert("Author", name="Tolkien"), ctx.insert("Book", title="Hobbit")
        hobbit.author = tolkien
        with pytest.raises(amber.ValueClassError, match="Book.author: expected an Author"):
            hobbit.author = ctx.insert("Tag", label="x")
        with pytest.raises(amber.ValueClassError, match="of another context"):
            hobbit.author = other.insert("Author", name="Stranger")
        with pytest.raises(TypeError, match="expected an amber.Object, given"):
            tolkien.books.add("Hobbit")
        with pytest.raises(TypeError):
            hobbit.author = "Tolkien"
        assert hobbit.author is tolkien


def test_saved_graphs_read_back_and_delete_rules_run(library):
    store, path, model = library
    with store.context() as ctx:
        for name, titles in [("Tolkien", ["Hobbit", "Silmarillion"]), ("Austen", ["Emma"])]:
            author = ctx.insert("Author", name=name)
            for title in titles:
                ctx.insert("Book", title=title).author = author
        ctx.save()
    with amber.open(path, model) as again, again.context() as ctx:
        books = ctx.fetch("Book", sort=["title"])
        assert [b.author.name for b in books] == ["Austen", "Tolkien", "Tolkien"]
        assert books[1].author is books[2].author
        tolkien = books[1].author
        assert len(tolkien.books) == 2
        ctx.delete(tolkien)  # cascade
        assert len(ctx.deleted) == 3
        ctx.save()
        assert [b.title for b in ctx.fetch("Book")] == ["Emma"]
        # A count rule: at most two books per tag.
        tag = ctx.insert("Tag", label="t")
        for title in ["A", "B", "C"]:
            ctx.insert("Book", title=title).tags.add(tag)
        with pytest.raises(amber.ValidationError, match="Tag.books: has 3 members, more than its maximum of 2"):
            ctx.save()
        ctx.rollback()
        assert ctx.count("Tag") == 0


def test_links_to_rows_another_connection_deleted_are_refused(library):
    # Two stores on one file, as two processes have: the context saving the
    # link cannot know the author is gone; the save's transaction finds it.
    store, path, model = library
    with store.context() as ctx:
        ctx.insert("Author", name="Ann")
        ctx.save()
    with amber.open(path, model) as elsewhere, elsewhere.context() as there, store.context() as here:
        ann_there = there.fetch("Author")[0]
        here.delete(here.fetch("Author")[0])
        here.save()
        dune = there.insert("Book", title="Dune")
        dune.author = ann_there
        with pytest.raises(amber.ValidationError) as failure:
            there.save()
        (problem,) = failure.value.problems
        assert (problem.place, problem.rule, problem.object_uri) == ("Book.author", "relationship", dune.uri)
        assert "no longer in the store" in problem.message
        assert there.inserted == [dune] and here.count("Book") == 0
        there.rollback()  # leaving the block would save again


def test_random_moves_match_a_plain_reference(library):
    store, _, _ = library
    rng = random.Random(7)
    with store.context() as ctx:
        authors = [ctx.insert("Author", name=f"A{i}") for i in range(3)]
        books = [ctx.insert("Book", title=f"B{i}") for i in range(12)]
        reference = {}
        for step in range(300):
            book = rng.choice(books)
            author = rng.choice(authors + [None])
            if rng.random() < 0.5 or author is None:
                book.author = author
            else:
                author.books.add(book)
            reference[book.title] = author.name if author else None
            if step % 50 == 49:
                ctx.save()
            for a in authors:
                assert sorted(b.title for b in a.books) == sorted(t for t, n in reference.items() if n == a.name)
                assert len(a.books) == sum(1 for n in reference.values() if n == a.name)


def test_predicates_follow_relationships_and_prefetch(library):
    store, _, _ = library
    with store.context() as ctx:
        for name, titles in [("Tolkien", ["Hobbit", "Silmarillion"]), ("Austen", ["Emma"]), ("Nobody", [])]:
            author = ctx.insert("Author", name=name)
            for title in titles:
                ctx.insert("Book", title=title).author = author
        ctx.save()
        tolkien = ctx.fetch("Author", "name == 'Tolkien'")[0]
        assert sorted(b.title for b in ctx.fetch("Book", "author.name BEGINSWITH %@", "Tol")) == ["Hobbit", "Silmarillion"]
        assert [b.title for b in ctx.fetch("Book", "author == %@", tolkien, sort=["title"])] == ["Hobbit", "Silmarillion"]
        assert [a.name for a in ctx.fetch("Author", "books.@count >= 1", sort=["name"])] == ["Austen", "Tolkien"]
        assert [a.name for a in ctx.fetch("Author", "NONE books.title == 'Emma'", sort=["name"])] == ["Nobody", "Tolkien"]
        assert [b.title for b in ctx.fetch("Book", sort=["author.name", "title"])] == ["Emma", "Hobbit", "Silmarillion"]
        austen = ctx.fetch("Author", "name == 'Austen'")[0]
        assert sorted(b.title for b in ctx.fetch("Book", "author IN %@", [tolkien, austen])) == ["Emma", "Hobbit", "Silmarillion"]
        assert [b.title for b in ctx.fetch("Book", "author IN %@", [austen])] == ["Emma"]
        books = ctx.fetch("Book", prefetch=["author"])
        assert {b.author.name for b in books} == {"Tolkien", "Austen"}
        with pytest.raises(amber.PredicateError, match="Author.books is a to-many relationship"):
            ctx.fetch("Author", "books.title == 'x'")
        with pytest.raises(amber.NotFoundError, match="did you mean author"):
            ctx.fetch("Book", prefetch=["autor"])


def test_sub_entities_inherit_and_come_with_their_parents_fetches(tmp_path):
    people = {"entities": [
        {"name": "Person", "abstract": True, "attributes": [{"name": "name", "type": "string"}],
         "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True}]},
        {"name": "Writer", "parent": "Person", "attributes": [{"name": "genre", "type": "string"}]},
        {"name": "Editor", "parent": "Person", "attributes": [{"name": "house", "type": "string"}]},
        {"name": "Book", "attributes": [{"name": "title", "type": "string"}],
         "relationships": [{"name": "author", "destination": "Person", "inverse": "books"}]},
    ]}
    model = amber.Model.from_dict(people, amber.Registry())
    with amber.open(tmp_path / "people.amber", model) as store, store.context() as ctx:
        with pytest.raises(amber.ValueClassError, match="Person: expected an entity that is not abstract"):
            ctx.insert("Person", name="Nobody")
        king = ctx.insert("Writer", name="King", genre="horror")
        ctx.insert("Editor", name="Perkins", house="Scribner")
        ctx.insert("Book", title="Carrie").author = king
        ctx.save()
        assert model.entity("Writer").parent == "Person" and model.entity("Person").has_subentities
        everyone = ctx.fetch("Person", sort=["name"])
        assert [p.entity for p in everyone] == ["Writer", "Editor"] and everyone[0] is king
        assert everyone[0].genre == "horror" and everyone[1].house == "Scribner"
        assert ctx.fetch("Person", subentities=False) == []
        assert [b.title for b in king.books] == ["Carrie"]
        assert [p.name for p in ctx.fetch("Person", "ANY books.title == 'Carrie'")] == ["King"]


def test_sibling_entities_may_declare_one_name_each_with_its_own_values(tmp_path):
    # As in Core Data: each sibling's "genre" is its own column, of its own type, and survives reopening.
    people = {"entities": [
        {"name": "Person", "abstract": True, "attributes": [{"name": "name", "type": "string"}]},
        {"name": "Writer", "parent": "Person", "attributes": [{"name": "genre", "type": "string"}]},
        {"name": "Painter", "parent": "Person", "attributes": [{"name": "genre", "type": "integer64"}]},
    ]}
    model = amber.Model.from_dict(people, amber.Registry())
    path = tmp_path / "siblings.amber"
    with amber.open(path, model) as store, store.context() as ctx:
        ctx.insert("Writer", name="King", genre="horror")
        ctx.insert("Painter", name="Hopper", genre=3)
        ctx.save()
    with amber.open(path, model) as store, store.context() as ctx:
        everyone = {p.name: p.genre for p in ctx.fetch("Person")}
        assert everyone == {"King": "horror", "Hopper": 3}
        assert type(everyone["Hopper"]) is int
        assert [p.name for p in ctx.fetch("Painter", "genre > 2")] == ["Hopper"]
        assert [p.name for p in ctx.fetch("Writer", "genre == 'horror'")] == ["King"]
        with pytest.raises(amber.Error, match="Writer.genre"):
            ctx.insert("Writer", name="Le Guin", genre=4)


def test_insert_takes_relationships_and_is_all_or_nothing(tmp_path):
    model = amber.Model.from_dict({
        "entities": [
            {"name": "Author", "attributes": [{"name": "name", "type": "String"}],
             "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True}]},
            {"name": "Book", "attributes": [{"name": "title", "type": "String"}],
             "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]},
        ]})
    with amber.open(str(tmp_path / "insert.amber"), model) as store, store.context() as ctx:
        le_guin = ctx.insert("Author", name="Le Guin")
        book = ctx.insert("Book", title="The Dispossessed", author=le_guin)
        banks = ctx.insert("Author", name="Banks", books=[ctx.insert("Book", title="Excession"), ctx.insert("Book", title="Matter")])
        ctx.save()
        assert book["author"] is le_guin and list(le_guin["books"]) == [book]  # the inverse follows
        assert sorted(member["title"] for member in banks["books"]) == ["Excession", "Matter"]
        before = ctx.count("Book")
        with pytest.raises(amber.Error):
            ctx.insert("Book", title="Orphan", author="not an object")
        assert ctx.count("Book") == before and not ctx.has_changes  # nothing was left behind


def test_batch_inserts_take_relationships_all_or_nothing(tmp_path):
    model = amber.Model.from_dict({
        "entities": [
            {"name": "Author", "attributes": [{"name": "name", "type": "String"}],
             "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True, "ordered": True}]},
            {"name": "Book", "attributes": [{"name": "title", "type": "String"}],
             "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]},
        ]})
    with amber.open(str(tmp_path / "batch.amber"), model) as store, store.context() as ctx:
        le_guin, banks = ctx.insert("Author", name="Le Guin"), ctx.insert("Author", name="Banks")
        assert ctx.insert_many("Book", ["title", "author"], [("The Dispossessed", le_guin), ("Excession", banks),
                                                             ("Orphan", None), ("Lathe", le_guin)]) == 4
        books = {book.title: book for book in ctx.fetch("Book")}
        assert list(le_guin.books) == [books["The Dispossessed"], books["Lathe"]]  # inverses follow, in row order
        assert books["Orphan"].author is None
        # A to-many column: each row an iterable of members (in order for an ordered one); the members' inverse follows.
        assert ctx.insert_columns("Author", {"name": ["Both", "None"],
                                             "books": [[books["Lathe"], books["Excession"]], ()]}) == 2
        both = ctx.fetch("Author", "name == 'Both'")[0]
        assert list(both.books) == [books["Lathe"], books["Excession"]] and books["Excession"].author is both
        assert list(banks.books) == []
        ctx.save()
        assert [book.title for book in ctx.fetch("Author", "name == 'Both'", include_pending=False)[0].books] == ["Lathe", "Excession"]
        # Refused before any object is made: nothing is left behind, no member moves.
        before = ctx.count("Book")
        other = store.context()
        stranger = other.insert("Author", name="Stranger")
        for rows, error, message in (
                ([("A", le_guin), ("B", "Le Guin")], amber.ArgumentError, r"Book.author in row 1: expected an amber.Object"),
                ([("A", le_guin), ("B", books["Lathe"])], amber.Error, r"Book.author in row 1"),
                ([("A", stranger)], amber.Error, r"Book.author in row 0")):
            with pytest.raises(error, match=message):
                ctx.insert_many("Book", ["title", "author"], rows)
            assert ctx.count("Book") == before and not ctx.has_changes
        with pytest.raises(amber.Error, match=r"Author.books in row 0: .*each object once"):
            ctx.insert_columns("Author", {"name": ["Twice"], "books": [[books["Lathe"], books["Lathe"]]]})
        with pytest.raises(amber.ArgumentError, match="a to-many takes an iterable"):
            ctx.insert_columns("Author", {"name": ["Text"], "books": ["Lathe"]})
        assert list(both.books) == [books["Lathe"], books["Excession"]] and not ctx.has_changes
        other.close()


def test_a_refused_relationship_at_insert_changes_nothing(tmp_path):
    model = amber.Model.from_dict({
        "entities": [
            {"name": "Author", "attributes": [{"name": "name", "type": "String"}],
             "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True, "deleteRule": "cascade"}]},
            {"name": "Book", "attributes": [{"name": "title", "type": "String"}],
             "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]},
        ]})
    with amber.open(str(tmp_path / "refused.amber"), model) as store, store.context() as ctx:
        owner = ctx.insert("Author", name="Owner")
        kept = ctx.insert("Book", title="Kept", author=owner)
        ctx.save()
        # Checked before the object is made: the cascade rule never runs on a member it took, no member moves.
        for books, message in (([kept, "x"], "is not an object of this context"), ([kept, kept], "listed twice"),
                                ([kept, owner], "is a Author, not a Book"), ("Kept", "a to-many takes an iterable")):
            with pytest.raises(amber.ArgumentError, match=message):
                ctx.insert("Author", name="Thief", books=books)
            assert kept["author"] is owner and not ctx.has_changes and ctx.count("Author") == 1
