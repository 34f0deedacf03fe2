"""Fixtures: models used across the tests and the sample plugins `swift build` made."""
import os
import uuid

import pytest

import amber

BOOKS = {
    "valueClasses": [
        {"name": "Point", "kind": "struct", "fields": [{"name": "x", "type": "double"}, {"name": "y", "type": "double"}]},
        {"name": "Tagged", "kind": "struct", "fields": [{"name": "tag", "type": "int8"}, {"name": "at", "type": "Point"},
                                                        {"name": "ok", "type": "bool"}]},
    ],
    "entities": [{
        "name": "Book",
        "attributes": [
            {"name": "title", "type": "string", "optional": False, "minLength": 1},
            {"name": "pages", "type": "integer16", "minValue": 1},
            {"name": "copies", "type": "integer32"},
            {"name": "isbn13", "type": "integer64"},
            {"name": "price", "type": "decimal", "minValue": "0"},
            {"name": "rating", "type": "double"},
            {"name": "weight", "type": "float"},
            {"name": "available", "type": "boolean", "default": True},
            {"name": "published", "type": "date"},
            {"name": "cover", "type": "binary"},
            {"name": "key", "type": "uuid"},
            {"name": "link", "type": "uri"},
            {"name": "tags", "type": "transformable"},
            {"name": "spot", "type": "undefined", "transient": True, "valueClass": "Tagged"},
        ],
        "uniquenessConstraints": [["title"]],
    }],
}


def store_url(tmp_path, default):
    """The store a test opens: the URL in AMBER_TEST_STORE when it is set
    ("{tmp}" in it becomes the test's temporary folder, "{unique}" a name no
    other test uses), else `default`. The test command runs the
    store-behaviour tests again on other stores this way:
    AMBER_TEST_STORE="file://{tmp}/suite.amber", "memory:", or
    "postgresql://…?schema=py_{unique}" (a new schema on the test server)."""
    template = os.environ.get("AMBER_TEST_STORE")
    if not template:
        return default
    return template.replace("{tmp}", str(tmp_path)).replace("{unique}", uuid.uuid4().hex[:16])


@pytest.fixture
def model():
    return amber.Model.from_dict(BOOKS, amber.Registry())


@pytest.fixture
def store(model, tmp_path):
    with amber.open(store_url(tmp_path, None), model) as opened:
        yield opened


@pytest.fixture
def context(store):
    # Closed without saving: a test's leftovers (often a save it expects to fail) are not written.
    ctx = store.context()
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")  # it only reads the environment: Hypothesis tests may use it too
def plugin_dir():
    directory = os.environ.get("AMBER_PLUGIN_DIR")
    if not directory or not os.path.exists(os.path.join(directory, "libAmberColorPlugin.so")):
        pytest.fail("set AMBER_PLUGIN_DIR to the folder with the sample plugins (swift build --show-bin-path)")
    return directory


def filled(obj) -> list:
    """The attributes whose values came with the object's fetch (its filled slots)."""
    names = []
    for name, slot in obj._entity.slots.items():
        try:
            slot.__get__(obj)
        except AttributeError:
            continue
        names.append(name)
    return names
