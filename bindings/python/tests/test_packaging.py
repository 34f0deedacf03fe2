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


def test_amber_plugin_dir_comes_first_then_the_bundled_copy(monkeypatch, tmp_path, plugin_dir):
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "libAmberRectPlugin.so").write_bytes(b"")
    monkeypatch.setattr(amber.transformers, "_BUNDLED_PLUGINS", str(bundled))
    assert amber.sample_plugin("rect") == os.path.join(plugin_dir, "libAmberRectPlugin.so")
    monkeypatch.setenv("AMBER_PLUGIN_DIR", str(tmp_path))  # holds no plugin: the bundled copy
    assert amber.sample_plugin("rect") == str(bundled / "libAmberRectPlugin.so")
    with pytest.raises(amber.NotFoundError, match="neither bundled with the package nor in AMBER_PLUGIN_DIR") as missing:
        amber.sample_plugin("color")
    assert str(tmp_path) in str(missing.value) and str(bundled) in str(missing.value)
