"""Fetched properties from Python: declared in a JSON model, read with
Object.fetched, compared with a plain filter over the same rows, kept
until the object is refreshed, and an unknown name refused naming it."""
import json
import random

import pytest

import amber

MODEL = {
    "format": "amber-model/1",
    "entities": [
        {"name": "Author", "attributes": [{"name": "name", "type": "String"}, {"name": "genre", "type": "String"}],
         "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": True}],
         "fetchedProperties": [
             {"name": "recentBooks", "entity": "Book", "predicate": "author == $FETCH_SOURCE AND year >= 2000",
              "sort": [{"key": "year", "ascending": False}, {"key": "title"}]},
             {"name": "sameGenre", "entity": "Book", "predicate": "genre == $FETCH_SOURCE.genre", "sort": [{"key": "title"}], "limit": 5},
             {"name": "poetry", "entity": "Book", "predicate": "genre == $FETCHED_PROPERTY.userInfo.genre", "sort": [{"key": "title"}],
              "userInfo": {"genre": "poetry"}}]},
        {"name": "Book", "attributes": [{"name": "title", "type": "String"}, {"name": "genre", "type": "String"},
                                        {"name": "year", "type": "Integer 32"}],
         "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]},
    ],
}
GENRES = ["sf", "poetry", "crime"]


def test_fetched_properties_read_what_a_plain_filter_picks():
    generator = random.Random(41)
    with amber.open("memory:", amber.Model.from_json(json.dumps(MODEL))) as store, store.context() as ctx:
        authors = [ctx.insert("Author", name=f"author {i}", genre=GENRES[i % 3]) for i in range(4)]
        rows = []
        for i in range(80):
            row = (f"book {i:03d}", generator.choice(GENRES), generator.randint(1950, 2025), generator.randrange(len(authors)))
            book = ctx.insert("Book", title=row[0], genre=row[1], year=row[2])
            book["author"] = authors[row[3]]
            rows.append(row)
        ctx.save()
        for index, author in enumerate(authors):
            recent = [(book["year"], book["title"]) for book in author.fetched("recentBooks")]
            expected = sorted(((year, title) for title, _, year, owner in rows if owner == index and year >= 2000), key=lambda r: (-r[0], r[1]))
            assert recent == expected and expected
            same = [book["title"] for book in author.fetched("sameGenre")]
            assert same == sorted(title for title, genre, _, _ in rows if genre == GENRES[index % 3])[:5]
            assert [book["title"] for book in author.fetched("poetry")] == sorted(title for title, genre, _, _ in rows if genre == "poetry")

        # Kept until the author is refreshed, as Core Data keeps them.
        first = author.fetched("recentBooks")
        ctx.insert("Book", title="book new", genre="sf", year=2024)["author"] = authors[-1]
        ctx.save()
        assert [book["title"] for book in authors[-1].fetched("recentBooks")] == [book["title"] for book in first]
        ctx.refresh(authors[-1])
        assert "book new" in [book["title"] for book in authors[-1].fetched("recentBooks")]

        with pytest.raises(amber.NotFoundError, match="Author.recentBook: no such fetched property.*recentBooks"):
            authors[0].fetched("recentBook")


def test_a_fetched_property_that_cannot_work_is_refused_at_bind():
    broken = json.loads(json.dumps(MODEL))
    broken["entities"][0]["fetchedProperties"].append({"name": "x", "entity": "Book", "predicate": "genre == $GENRE"})
    with pytest.raises(amber.ModelError, match=r"Author\.x: \$GENRE"):
        amber.open("memory:", amber.Model.from_json(json.dumps(broken)))
