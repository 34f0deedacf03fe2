"""Fetch request templates from Python: declared in the model dict, listed
by Model.templates, fetched with variables of every value type (each result
checked against a filter over the same rows in Python), and refused with an
error naming a missing or extra variable."""
import datetime
import decimal
import random
import uuid

import pytest

import amber

TYPES = [("i64", "integer64"), ("price", "decimal"), ("ratio", "double"), ("name", "string"), ("flag", "boolean"),
         ("when", "date"), ("blob", "binary"), ("key", "uuid")]

MODEL = {
    "entities": [
        {"name": "Sample", "attributes": [{"name": n, "type": t} for n, t in TYPES],
         "relationships": [{"name": "owner", "destination": "Owner", "inverse": "samples"}]},
        {"name": "Owner", "attributes": [{"name": "name", "type": "string"}],
         "relationships": [{"name": "samples", "destination": "Sample", "inverse": "owner", "toMany": True}]},
    ],
    "templates": [{"name": f"by_{n}", "entity": "Sample", "predicate": f"{n} == $VALUE", "sort": [{"key": "i64"}]}
                  for n, _ in TYPES] + [
        {"name": "byOwner", "entity": "Sample", "predicate": "owner == $OWNER AND i64 IN $KEYS",
         "sort": [{"key": "i64", "ascending": False}], "limit": 4},
    ],
}


def random_value(name, rng):
    small = rng.randint(-3, 3)
    if rng.random() < 0.125:
        return None
    return {
        "i64": small, "price": decimal.Decimal(small) / 4, "ratio": small / 8, "name": ["é", "e", "É", "Zoë", ""][small % 5],
        "flag": small > 0, "when": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=small),
        "blob": bytes([small + 3, 0, 255][: small % 3 + 1]), "key": uuid.UUID(int=small + 3),
    }[name]


@pytest.fixture
def store(tmp_path):
    with amber.open(tmp_path / "templates.amber", amber.Model.from_dict(MODEL, amber.Registry())) as opened:
        yield opened


def test_templates_listed(store):
    templates = store.model.templates
    assert templates["byOwner"] == amber.Template("byOwner", "Sample", "owner == $OWNER AND i64 IN $KEYS", ("-i64",), 4,
                                                  ("OWNER", "KEYS"))
    assert templates["by_name"].variables == ("VALUE",) and templates["by_name"].limit is None


def test_every_value_type_against_python(store):
    rng = random.Random(15)
    with store.context() as ctx:
        rows = []
        for _ in range(80):
            values = {name: random_value(name, rng) for name, _ in TYPES}
            rows.append((ctx.insert("Sample", **values), values))
        ctx.save()
        for name, _ in TYPES:
            for _, probe in rows[:10]:
                found = ctx.fetch_template(f"by_{name}", {"VALUE": probe[name]})
                expected = [obj for obj, values in rows if values[name] == probe[name] and
                            (values[name] is None) == (probe[name] is None)]
                assert {o.uri for o in found} == {o.uri for o in expected}, (name, probe[name])


def test_objects_lists_order_and_errors(store):
    with store.context() as ctx:
        ada = ctx.insert("Owner", name="Ada")
        for i in range(10):
            sample = ctx.insert("Sample", i64=i)
            if i % 2:
                sample.owner = ada
        ctx.save()
        found = ctx.fetch_template("byOwner", {"OWNER": ada, "KEYS": list(range(10))})
        assert [s.i64 for s in found] == [9, 7, 5, 3]
        assert [s.i64 for s in ctx.fetch_template("byOwner", {"OWNER": ada, "KEYS": [1, 3, 4]}, sort=["i64"], limit=None)] == [1, 3]
        # Variables in a plain predicate, and in a count.
        assert [s.i64 for s in ctx.fetch("Sample", "i64 < $N", sort=["i64"], variables={"N": 2})] == [0, 1]
        assert ctx.count("Sample", "i64 >= $N", variables={"N": 8}) == 2
        with pytest.raises(amber.PredicateError) as missing:
            ctx.fetch_template("byOwner", {"OWNER": ada})
        assert missing.value.origin == "$KEYS" and "template byOwner" in str(missing.value)
        with pytest.raises(amber.PredicateError) as extra:
            ctx.fetch_template("byOwner", {"OWNER": ada, "KEYS": [], "OWNR": 1})
        assert "did you mean $OWNER?" in str(extra.value)
        with pytest.raises(amber.NotFoundError) as unknown:
            ctx.fetch_template("byOwnr")
        assert "did you mean byOwner?" in str(unknown.value)
        with pytest.raises(amber.PredicateError):
            ctx.fetch("Sample", "i64 < $N")
