"""Models from files and JSON text, registries' value classes, and the one
field-type vocabulary (names and sizes from the C API)."""
import json

import pytest

import amber
from amber import _values, lib
from conftest import BOOKS


def test_a_model_from_a_file(tmp_path):
    path = tmp_path / "books.json"
    path.write_text(json.dumps(BOOKS), encoding="utf-8")
    model = amber.Model.from_file(path, amber.Registry())
    with amber.open(None, model) as store, store.context() as ctx:
        ctx.insert("Book", title="Dune")
        ctx.save()
        assert ctx.count("Book") == 1
    assert amber.Model.from_file(str(path)).registry is amber.shared_registry()
    with pytest.raises(FileNotFoundError):
        amber.Model.from_file(tmp_path / "missing.json")


def test_a_model_from_json_text_and_its_errors():
    model = amber.Model.from_json(json.dumps(BOOKS), amber.Registry())
    assert model.entity("Book").attribute("title").type == lib.AMBER_TYPE_STRING
    assert json.loads(model.to_json())["entities"][0]["name"] == "Book"
    with pytest.raises(amber.NotFoundError, match="no such struct class in the model"):
        model.struct_type("Nowhere")
    with pytest.raises(amber.ModelError, match=r"\$.entities\[0\].nam: unknown key; did you mean name\?") as error:
        amber.Model.from_json('{"entities": [{"nam": "X"}]}').bind()
    assert error.value.origin == "$.entities[0].nam"


def test_the_field_types_are_the_c_apis():
    names = {}
    for code in _values.FIELD_TYPES.values():
        name, size = _values.field_type_info(code)
        names[name] = code
        assert size == (0 if code == lib.AMBER_FIELD_STRUCT else _values.struct.calcsize(_values._FORMATS[code]))
    assert names == _values.FIELD_TYPES
    assert names["int8"] == lib.AMBER_FIELD_INT8 and names["bool"] == lib.AMBER_FIELD_BOOL
    assert names["struct"] == lib.AMBER_FIELD_STRUCT and len(names) == 12
    with pytest.raises(amber.NotFoundError, match="no field type has code 99"):
        _values.field_type_info(99)


def test_struct_formats_that_disagree_with_the_c_api_are_refused():
    formats = dict(_values._FORMATS)
    assert _values.checked_formats(formats) == formats
    with pytest.raises(ImportError, match="field type int16 is 2 bytes in the C API, 4 as '=i'"):
        _values.checked_formats({**formats, lib.AMBER_FIELD_INT16: "=i"})
    del formats[lib.AMBER_FIELD_BOOL]
    with pytest.raises(ImportError, match="struct formats cover field types"):
        _values.checked_formats(formats)


def test_a_struct_of_every_field_type_round_trips():
    registry = amber.Registry()
    scalars = [name for name, code in _values.FIELD_TYPES.items() if code != lib.AMBER_FIELD_STRUCT]
    assert scalars == ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float", "double", "bool"]
    registry.declare_struct("Inner", [("x", "int8")])
    registry.declare_struct("Every", [(f"f_{name}", name) for name in scalars] + [("inner", "Inner")])
    Every = registry.struct_type("Every")
    assert Every._fields == tuple(f"f_{name}" for name in scalars) + ("inner",)
    value = Every(-8, -16, -32, -64, 8, 16, 32, 64, 1.5, 2.25, True, registry.struct_type("Inner")(7))
    model = amber.Model.from_dict({"entities": [{"name": "Holder", "attributes": [
        {"name": "every", "type": "undefined", "transient": True, "valueClass": "Every"}]}]}, registry)
    with amber.open(None, model) as store, store.context() as ctx:
        holder = ctx.insert("Holder")
        holder.every = value
        assert holder.every == value
    with pytest.raises(amber.NotFoundError, match="Nope: no such struct class"):
        registry.struct_type("Nope")
    # A name that is no field type names a struct class, "struct" too: the C API says which is missing.
    with pytest.raises(amber.ModelError, match="Bad.x: struct: no such struct class"):
        registry.declare_struct("Bad", [("x", "struct")])
    with pytest.raises(amber.ModelError, match='value class "Every" from Python refused: the name is already registered by Python'):
        registry.declare_struct("Every", [("x", "int8")])


def test_opaque_classes_take_bytes_of_their_size():
    registry = amber.Registry()
    registry.declare_opaque("Blob", 4)
    model = amber.Model.from_dict({"entities": [{"name": "Holder", "attributes": [
        {"name": "blob", "type": "undefined", "transient": True, "valueClass": "Blob"}]}]}, registry)
    with amber.open(None, model) as store, store.context() as ctx:
        holder = ctx.insert("Holder")
        holder.blob = b"\x01\x02\x03\x04"
        assert holder.blob == b"\x01\x02\x03\x04"
        with pytest.raises(amber.ValueClassError):
            holder.blob = b"\x01"


def test_a_model_over_the_size_limit_is_refused_before_parsing():
    # 64 MiB of userInfo: parsed, it would have grown memory many times its size.
    huge = {"entities": [{"name": "Book", "userInfo": {"note": "x" * (64 << 20)}, "attributes": [{"name": "title", "type": "string"}]}]}
    with pytest.raises(amber.ModelError, match=r"a model file may have at most 67108864 \(64 MiB\)"):
        amber.Model.from_dict(huge).bind()


def test_a_non_finite_float_in_a_model_dict_is_named_where_the_caller_wrote_it():
    description = {"entities": [{"name": "Gauge", "attributes": [
        {"name": "label", "type": "string"}, {"name": "level", "type": "double", "default": float("nan")}]}]}
    with pytest.raises(amber.ModelError) as refused:
        amber.Model.from_dict(description, amber.Registry())
    assert refused.value.origin == "$.entities[0].attributes[1].default"
    assert str(refused.value).startswith("$.entities[0].attributes[1].default: nan is not a value a model can hold")
    description["entities"][0]["attributes"][1]["default"] = float("-inf")
    with pytest.raises(amber.ModelError, match=r"default: -inf is not"):
        amber.Model.from_dict(description, amber.Registry())
    description["entities"][0]["attributes"][1]["default"] = description  # a description that contains itself
    with pytest.raises(amber.ModelError, match="cannot be written as JSON: Circular reference"):
        amber.Model.from_dict(description, amber.Registry())
