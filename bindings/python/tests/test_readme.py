"""The Python samples of README.md, bindings/python/README.md and docs/*.md run as shown (plugins from the package, or AMBER_PLUGIN_DIR)."""
import os
import re
import shutil
import subprocess

README = os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")


def generate_library(plugin_dir, folder, monkeypatch) -> None:
    """library.py in `folder` (importable), generated from the Library.amber.json copied there."""
    model = os.path.join(os.path.dirname(__file__), "..", "..", "..", "Tests", "AmberTypedTests", "Library.amber.json")
    shutil.copy(model, folder)
    subprocess.run([os.path.join(plugin_dir, "amber-generate"), "python", "Library.amber.json", "-o", "library.py"],
                   check=True, cwd=folder)
    monkeypatch.syspath_prepend(str(folder))


def test_the_readme_examples_run(plugin_dir, tmp_path, monkeypatch, capsys):
    """The Python minute: the typed classes with model logic, then the dynamic API, each in a fresh namespace."""
    with open(README, encoding="utf-8") as file:
        typed, dynamic = re.findall(r"```python\n(.*?)```", file.read(), re.S)
    monkeypatch.chdir(tmp_path)
    generate_library(plugin_dir, tmp_path, monkeypatch)
    exec(typed, {})
    assert capsys.readouterr().out == "Dune Frank Herbert\n"
    exec(dynamic, {})
    assert capsys.readouterr().out.startswith("Dune 9.99 0.89999997")


def test_every_example_in_the_python_readme_runs(plugin_dir, tmp_path, monkeypatch, capsys):
    """bindings/python/README.md's blocks run in order in one namespace, as a reader would paste them."""
    path = os.path.join(os.path.dirname(__file__), "..", "README.md")
    with open(path, encoding="utf-8") as file:
        blocks = re.findall(r"```python\n(.*?)```", file.read(), re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    generate_library(plugin_dir, tmp_path, monkeypatch)  # the typed-classes section imports it
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Book.price in row 1" in out and "Dune True" in out
    assert "Book.author needs an author\nBook.pages more than 5000 pages\nBook.title must not be empty\n" in out


DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs")
VERSION1 = {"entities": [{"name": "Book", "attributes": [{"name": "title", "type": "string"}]}]}
VERSION2 = {"entities": [{"name": "Book", "attributes": [
    {"name": "title", "type": "string"}, {"name": "subtitle", "type": "string", "default": "none"}]}]}


def docs_blocks(name: str) -> list:
    with open(os.path.join(DOCS, name), encoding="utf-8") as file:
        return re.findall(r"```python\n(.*?)```", file.read(), re.S)


def test_every_python_sample_in_docs_is_run():
    """A docs page with a Python sample has a test below that runs it."""
    pages = sorted(name for name in os.listdir(DOCS) if name.endswith(".md") and docs_blocks(name))
    assert pages == ["durability.md", "migration.md"]


def test_the_durability_sample_runs(tmp_path, monkeypatch):
    import amber
    monkeypatch.chdir(tmp_path)
    model = amber.Model.from_dict(VERSION1)
    namespace = {"amber": amber, "model": model}
    (block,) = docs_blocks("durability.md")
    exec(compile(block, "docs/durability.md", "exec"), namespace)
    with namespace["store"] as store, store.context() as ctx:
        ctx.insert("Book", title="Ledger")
    with amber.open("ledger.amber", model) as store, store.context() as ctx:
        assert [book.title for book in ctx.fetch("Book")] == ["Ledger"]


def test_the_migration_sample_runs(tmp_path, monkeypatch, capsys):
    import amber
    monkeypatch.chdir(tmp_path)
    with amber.open("books.amber", amber.Model.from_dict(VERSION1)) as store, store.context() as ctx:
        ctx.insert("Book", title="Dune")
    version2 = amber.Model.from_dict(VERSION2)
    namespace = {"amber": amber, "version2": version2}
    (block,) = docs_blocks("migration.md")
    exec(compile(block, "docs/migration.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.startswith("['add Book.subtitle (default \"none\")']\n") and "copy Book" in printed
    with namespace["store"] as store, store.context() as ctx:
        assert [(book.title, book.subtitle) for book in ctx.fetch("Book")] == [("Dune", "none")]
    assert amber.migration_plan("books.amber", version2) == []
