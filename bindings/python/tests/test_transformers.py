"""Transformers written in Python, plugin transformers, and both in one model."""
import os
import struct

import pytest

import amber


def color_model(registry):
    return amber.Model.from_dict({"entities": [{"name": "Swatch", "attributes": [
        {"name": "name", "type": "string"},
        {"name": "color", "type": "transformable", "valueClass": "Color", "transformer": "ColorToData"},
        {"name": "label", "type": "transformable", "valueClass": "String", "transformer": ["Shout", "UTF8", "Deflate"]},
    ]}]}, registry)


@pytest.fixture
def registry(plugin_dir):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    registry.load_plugin(os.path.join(plugin_dir, "libAmberDeflatePlugin.so"))
    calls = {"forward": 0, "reverse": 0}

    @registry.transformer("Shout", input="String", output="String")
    class Shout:
        def forward(self, text):
            calls["forward"] += 1
            if text == "boom":
                raise ValueError("cannot shout boom")
            return text.upper() + "!"

        def reverse(self, text):
            calls["reverse"] += 1
            return text[:-1].lower()

    registry.calls = calls
    return registry


def test_python_and_plugin_transformers_in_one_model(registry, tmp_path):
    model = color_model(registry)
    Color = model.struct_type("Color")
    path = tmp_path / "swatches.amber"
    with amber.open(path, model) as store:
        with store.context() as ctx:
            ctx.insert("Swatch", name="sand", color=(0.9, 0.7, 0.4, 1.0), label="warm")
            ctx.insert("Swatch", name="sea", color={"r": 0.0, "g": 0.3, "b": 0.8, "a": 1.0}, label="cold")
            ctx.save()
        assert registry.calls["forward"] == 2
        with store.context() as ctx:
            sand, sea = ctx.fetch("Swatch", sort=["name"])
            assert sand.color == Color(*struct.unpack("4f", struct.pack("4f", 0.9, 0.7, 0.4, 1.0)))
            assert sea.color.b == pytest.approx(0.8)
            assert sand.label == "warm"
            assert registry.calls["reverse"] == 1  # lazily: only sand's label was read
            assert len(ctx.fetch("Swatch", "color == %@", amber_color(model, 0.9, 0.7, 0.4, 1.0))) == 1


def amber_color(model, *rgba):
    return model.struct_type("Color")(*rgba)


def test_a_python_exception_fails_the_save_with_its_text(registry):
    with amber.open(None, color_model(registry)) as store:
        with store.context() as ctx:
            ctx.insert("Swatch", name="x", label="boom")
            with pytest.raises(amber.ValidationError,
                               match=r'Swatch.label: transformer "Shout" \(Python\) forward failed: returned status -1: ValueError: cannot shout boom'):
                ctx.save()
            assert ctx.count("Swatch", include_pending=False) == 0 and ctx.has_changes  # nothing written
            ctx.rollback()  # a clean exit from `with` saves: drop what cannot be saved


def test_a_python_transformer_returning_the_wrong_type_is_caught(plugin_dir):
    registry = amber.Registry()
    registry.register_transformer("Liar", "String", "String", lambda text: 42, lambda text: text)
    model = amber.Model.from_dict({"entities": [{"name": "N", "attributes": [
        {"name": "t", "type": "transformable", "valueClass": "String", "transformer": "Liar"}]}]}, registry)
    with amber.open(None, model) as store, store.context() as ctx:
        ctx.insert("N", t="hello")
        with pytest.raises(amber.ValidationError, match=r'forward returned Integer 42, but it declares String'):
            ctx.save()
        ctx.rollback()  # a clean exit from `with` saves: drop what cannot be saved


def test_refused_plugins_raise_with_the_reason(plugin_dir, tmp_path):
    registry = amber.Registry()
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    registry.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))  # the same file again: nothing to do
    other = amber.Registry()
    other.register_transformer("ColorToData", "Binary", "Binary", bytes, bytes)
    with pytest.raises(amber.PluginError, match='transformer "ColorToData": the name is already registered by Python') as error:
        other.load_plugin(os.path.join(plugin_dir, "libAmberColorPlugin.so"))
    assert error.value.origin.endswith("libAmberColorPlugin.so")
    with pytest.raises(amber.PluginError, match="configuration needs key=<64 hex digits>"):
        registry.load_plugin(os.path.join(plugin_dir, "libAmberAESGCMPlugin.so"))
    with pytest.raises(amber.PluginError, match="no such file"):
        registry.load_plugin(tmp_path / "missing.so")


def test_open_loads_plugins_before_binding(plugin_dir):
    model = amber.Model.from_dict({"entities": [{"name": "Secret", "attributes": [
        {"name": "text", "type": "transformable", "valueClass": "String", "transformer": "AESGCMString"}]}]},
        amber.Registry())
    key = "key=" + "ab" * 32
    with amber.open(None, model, plugins=[os.path.join(plugin_dir, "libAmberAESGCMPlugin.so")], plugin_config=key) as store:
        with store.context() as ctx:
            ctx.insert("Secret", text="hush")
            ctx.save()
            assert ctx.fetch("Secret")[0].text == "hush"


def test_duplicate_and_misspelled_transformers(registry):
    with pytest.raises(amber.ModelError, match='transformer "Shout" from Python refused: the name is already registered'):
        registry.register_transformer("Shout", "String", "String", str.upper)
    model = amber.Model.from_dict({"entities": [{"name": "N", "attributes": [
        {"name": "t", "type": "transformable", "valueClass": "Colour", "transformer": "Shoot"}]}]}, registry)
    with pytest.raises(amber.ModelError, match="N.t: Colour: no such value class; did you mean Color?"):
        model.bind()


def test_shadow_storage_reads_fresh_after_a_set(registry):
    model = amber.Model.from_dict({"entities": [{"name": "Note", "attributes": [
        {"name": "body", "type": "undefined", "transient": True, "valueClass": "String", "transformer": ["UTF8"],
         "storage": "raw", "encode": "immediate"},
        {"name": "raw", "type": "binary"}]}]}, registry)
    with amber.open(None, model) as store, store.context() as ctx:
        ctx.insert_many("Note", ["raw"], [(b"x",)])
        ctx.save()
        note, = ctx.fetch("Note")
        assert note.raw == b"x"
        note.body = "hello"
        assert note.raw == b"hello"
        assert ctx.inserted == [] and len(ctx.updated) == 1


def test_pending_objects_include_batch_inserts(context):
    context.insert_many("Book", ["title"], [("a",), ("b",)])
    assert [book.title for book in context.inserted] == ["a", "b"]
