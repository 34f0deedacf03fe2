"""What pip installs besides the Python code: the sample plugins, found by name."""
import os

import pytest

import amber


@pytest.mark.parametrize("name, transformer", [("color", "ColorToData"), ("rect", "RectToString"),
                                               ("deflate", "Deflate"), ("aesgcm", "AESGCM")])
def test_sample_plugins_are_found_and_load(plugin_dir, name, transformer):
    path = amber.sample_plugin(name)
    assert os.path.basename(path).startswith("libAmber") and path.endswith("Plugin.so")
    registry = amber.Registry()
    registry.load_plugin(path, "key=" + "00" * 32)
    assert registry.transformer(transformer).name == transformer


def test_an_unknown_sample_plugin_names_the_choices():
    with pytest.raises(amber.NotFoundError, match="'colour': no such sample plugin; one of color, rect, deflate, aesgcm"):
        amber.sample_plugin("colour")


def test_a_missing_sample_plugin_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("AMBER_PLUGIN_DIR", str(tmp_path))
    bundled = os.path.join(os.path.dirname(amber.__file__), "plugins", "libAmberRectPlugin.so")
    if os.path.exists(bundled):
        assert amber.sample_plugin("rect") == bundled
    else:
        with pytest.raises(amber.NotFoundError, match="neither bundled with the package nor in AMBER_PLUGIN_DIR"):
            amber.sample_plugin("rect")
