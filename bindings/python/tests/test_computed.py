"""Computed attributes from Python: a Python callable registered by name
computes a book's publish month from its publish date, once per change of
the date (counted), read-only, with its failures raised naming the
attribute; observers hear of it with its source; a plugin transformer
serves as a function too."""
import datetime
import os

import pytest

import amber

MODEL = {"entities": [{"name": "Book", "attributes": [
    {"name": "title", "type": "string"},
    {"name": "published", "type": "date"},
    {"name": "publishMonth", "type": "string", "computed": {"function": "publishMonth", "from": ["published"]}},
    {"name": "shouted", "type": "string", "computed": {"function": "shout", "from": ["title"]}},
]}]}


def day(text):
    return datetime.datetime.fromisoformat(text + "T12:00:00+00:00")


@pytest.fixture
def setup(tmp_path):
    registry = amber.Registry()
    calls = []

    @registry.function("publishMonth")
    def publish_month(published):
        calls.append(published)
        return published.strftime("%B %Y") if published else None

    @registry.function("shout")
    def shout(title):
        if title == "fail":
            raise ValueError("cannot shout fail")
        return 42 if title == "wrong" else (title.upper() if title is not None else None)

    with amber.open(tmp_path / "computed.amber", amber.Model.from_dict(MODEL, registry)) as store:
        yield store, calls


def test_computed_once_per_change(setup):
    store, calls = setup
    attribute = store.model.entity("Book").attributes["publishMonth"]
    assert attribute.computation == ("publishMonth", ["published"])
    assert store.model.entity("Book").attributes["title"].computation is None
    with store.context() as ctx:
        book = ctx.insert("Book", title="L'Étranger", published=day("1942-05-19"))
        assert calls == []
        assert book.publishMonth == "May 1942" and book.publishMonth == "May 1942"
        assert len(calls) == 1
        book.title = "Der Zauberberg"
        assert book.publishMonth == "May 1942" and len(calls) == 1
        book.published = day("1924-11-20")
        assert book.publishMonth == "November 1924" and len(calls) == 2
        ctx.save()
        with pytest.raises(amber.ValueClassError) as refused:
            book.publishMonth = "June 1924"
        assert "Book.publishMonth" in str(refused.value) and "computed by publishMonth" in str(refused.value)
        # Another context computes from what it fetched, and again after merging a new date.
        with store.context() as other:
            theirs = other.fetch("Book")[0]
            assert theirs.publishMonth == "November 1924" and len(calls) == 3
            reports = []
            other.add_observer(reports.append)
            book.published = day("1967-05-30")
            ctx.save()
            other.merge_saved_changes()
            assert reports[-1].refreshed[0].keys == ("published", "publishMonth")
            assert theirs.publishMonth == "May 1967"


def test_failures_name_the_attribute(setup):
    store, _ = setup
    with store.context() as ctx:
        book = ctx.insert("Book", title="fail")
        with pytest.raises(amber.TransformerError) as failed:
            book.shouted
        assert "Book.shouted" in str(failed.value) and "cannot shout fail" in str(failed.value)
        book.title = "wrong"
        with pytest.raises(amber.TransformerError) as wrong:
            book.shouted
        assert "returned Integer 42, but the attribute holds String" in str(wrong.value)
        book.title = "ok"
        assert book.shouted == "OK"


def test_plugin_transformer_as_function(tmp_path, plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    model = amber.Model.from_dict({"entities": [{"name": "Swatch", "attributes": [
        {"name": "color", "type": "undefined", "valueClass": "Color", "transient": True},
        {"name": "bytes", "type": "binary", "computed": {"function": "ColorToData", "from": ["color"]}}]}]}, registry)
    with amber.open(None, model) as store, store.context() as ctx:
        swatch = ctx.insert("Swatch")
        swatch.color = (1.0, 0.5, 0.25, 1.0)
        assert swatch.bytes == registry.transformer("ColorToData").forward((1.0, 0.5, 0.25, 1.0))
        swatch.color = None
        assert swatch.bytes is None
