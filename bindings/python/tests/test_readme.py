"""The README's Python example runs as shown (its plugin from the package, or AMBER_PLUGIN_DIR)."""
import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")


def test_the_readme_example_runs(plugin_dir, tmp_path, monkeypatch, capsys):
    with open(README, encoding="utf-8") as file:
        code = re.search(r"```python\n(.*?)```", file.read(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(code, {})
    assert capsys.readouterr().out.startswith("Dune 9.99 0.89999997")


def test_every_example_in_the_python_readme_runs(plugin_dir, tmp_path, monkeypatch, capsys):
    """bindings/python/README.md's blocks run in order in one namespace, as a reader would paste them."""
    path = os.path.join(os.path.dirname(__file__), "..", "README.md")
    with open(path, encoding="utf-8") as file:
        blocks = re.findall(r"```python\n(.*?)```", file.read(), re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md block {i + 1}", "exec"), namespace)
    assert "Book.price in row 1" in capsys.readouterr().out
