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
