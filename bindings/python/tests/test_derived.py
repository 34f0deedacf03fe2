"""Derived attributes from Python: declared in the model dict, computed at
save, refused at set with an error naming them, merged into a second
context, and searched: a canonical title with CONTAINS[cd] finds what the
title does, on random titles with a fixed seed."""
import random
import unicodedata

import pytest

import amber
from conftest import store_url

LIBRARY = {"entities": [
    {"name": "Author", "attributes": [
        {"name": "name", "type": "string"},
        {"name": "bookCount", "type": "integer64", "derived": "books.@count"},
        {"name": "longest", "type": "integer64", "derived": "books.@max.pages"}],
     "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True}]},
    {"name": "Book", "attributes": [
        {"name": "title", "type": "string"},
        {"name": "canonicalTitle", "type": "string", "derived": "canonical:(title)", "indexed": True},
        {"name": "shout", "type": "string", "derived": "uppercase:(title)"},
        {"name": "pages", "type": "integer64"},
        {"name": "authorName", "type": "string", "derived": "author.name"}],
     "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]}]}

PIECES = ["Crème", "brûlée", "Ὀδύσσεια", "Война", "Straße", "Łódź", "Zürich", "été", "ÉTÉ", "naïve", "CAFÉ", "café", "Ørsted", "plain"]


@pytest.fixture
def store(tmp_path):
    with amber.open(store_url(tmp_path, tmp_path / "derived.amber"), amber.Model.from_dict(LIBRARY, amber.Registry())) as opened:
        yield opened


def test_computed_at_save_and_read_only(store):
    with store.context() as here, store.context() as there:
        ada = here.insert("Author", name="Ada")
        book = here.insert("Book", title="Crème Brûlée", pages=120)
        book.author = ada
        assert book.canonicalTitle is None  # stale until the save
        here.save()
        assert (book.canonicalTitle, book.shout, book.authorName) == ("creme brulee", "CRÈME BRÛLÉE", "Ada")
        assert (ada.bookCount, ada.longest) == (1, 120)
        assert store.model.entity("Book").attributes["canonicalTitle"].derivation == "canonical:(title)"
        assert store.model.entity("Book").attributes["title"].derivation is None
        with pytest.raises(amber.ValueClassError) as caught:
            ada.bookCount = 7
        assert "Author.bookCount" in str(caught.value) and "books.@count" in str(caught.value)
        assert ada.bookCount == 1
        # Another context sees the recount after merging, without a conflict on its own change.
        theirs = there.fetch("Author")[0]
        theirs.name = "Ada L."
        here.insert("Book", title="Second", pages=300).author = ada
        here.save()
        there.save()
        here.merge_saved_changes()
        assert (ada.name, ada.bookCount, ada.longest) == ("Ada L.", 2, 300)
        assert {b.authorName for b in here.fetch("Book")} == {"Ada L."}


def test_canonical_search_agrees_with_folded_title(store):
    rng = random.Random(15)
    with store.context() as context:
        titles = [" ".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3))) for _ in range(200)]
        for title in titles:
            context.insert("Book", title=title, pages=rng.randint(1, 500))
        context.save()
        for _ in range(60):
            piece = rng.choice(PIECES)
            start = rng.randrange(len(piece))
            query = piece[start:start + rng.randint(1, 4)]
            query = rng.choice([query, query.upper(), query.lower(), unicodedata.normalize("NFD", query)])
            derived = {b.title for b in context.fetch("Book", "canonicalTitle CONTAINS[cd] %@", query)}
            folded = {b.title for b in context.fetch("Book", "title CONTAINS[cd] %@", query)}
            assert derived == folded, query
