"""Fixtures: models used across the tests and the sample plugins `swift build` made."""
import importlib.util
import os
import subprocess
import sys
import uuid
from pathlib import Path

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


#: The model the generated-class tests use (Swift's typed tests use it too).
LIBRARY_MODEL = Path(__file__).resolve().parents[3] / "Tests" / "AmberTypedTests" / "Library.amber.json"


@pytest.fixture(scope="session")
def generated(plugin_dir, tmp_path_factory):
    """The folder holding library.py, generated from LIBRARY_MODEL."""
    folder = tmp_path_factory.mktemp("generated")
    subprocess.run([os.path.join(plugin_dir, "amber-generate"), "python", str(LIBRARY_MODEL), "-o", str(folder)], check=True)
    return folder


@pytest.fixture(scope="session")
def library(generated):
    """The generated module, imported as `library`."""
    spec = importlib.util.spec_from_file_location("library", generated / "library.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["library"] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules["library"]
