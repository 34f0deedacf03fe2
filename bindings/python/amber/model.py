"""Models and their entities, attributes, relationships and templates."""
from __future__ import annotations

import builtins
import collections
import collections.abc
import json
import math
import os
import re
from typing import Any, Iterable, Optional, TYPE_CHECKING, Union

from ._ffi import ffi, lib
from ._values import StructCodec, struct_codec
from .errors import Error, MisuseError, ModelError, NotFoundError, argument_error, check, checks_arguments
from ._common import _Owner, _name, _out, _str
from .logic import set_logic
from .objects import Object, TypedObject, _OBJECT_API
from .transformers import Registry, shared_registry

if TYPE_CHECKING:
    from .context import Context


class Attribute:
    """An attribute of an entity, resolved once."""

    __slots__ = ("handle", "name", "type", "value_class", "derivation", "computation", "codec")

    def __init__(self, handle: Any, model: "Model") -> None:
        self.handle = handle
        name, kind, value_class, derivation = _out("char **"), _out("int32_t *"), _out("char **"), _out("char **")
        check(lib.amber_attribute_name(name, handle))
        check(lib.amber_attribute_type(kind, handle))
        check(lib.amber_attribute_value_class(value_class, handle))
        check(lib.amber_attribute_derivation(derivation, handle))
        self.name: str = ffi.string(name[0]).decode()
        self.type: int = kind[0]
        self.value_class: Optional[str] = ffi.string(value_class[0]).decode() if value_class[0] != ffi.NULL else None
        #: A derived attribute's expression ("canonical:(title)", "books.@count"), computed at save; None otherwise.
        self.derivation: Optional[str] = ffi.string(derivation[0]).decode() if derivation[0] != ffi.NULL else None
        function, sources, count = _out("char **"), _out("const char *const **"), _out("size_t *")
        check(lib.amber_attribute_computation(function, sources, count, handle))
        #: A computed attribute's (function, [source names]); None otherwise.
        self.computation: Optional[tuple[str, list[str]]] = None if function[0] == ffi.NULL else (
            _str(function[0]), [_str(sources[0][i]) for i in range(count[0])])
        self.codec = model._codec(self.value_class)


class Relationship:
    """A relationship of an entity, resolved once: where it points and how."""

    __slots__ = ("handle", "name", "destination", "inverse", "to_many", "ordered", "required", "delete_rule",
                 "min_count", "max_count")

    _RULES = {lib.AMBER_DELETE_NULLIFY: "nullify", lib.AMBER_DELETE_CASCADE: "cascade", lib.AMBER_DELETE_DENY: "deny",
              lib.AMBER_DELETE_NO_ACTION: "noAction"}

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        spec = ffi.new("amber_relationship_spec *", {"size": ffi.sizeof("amber_relationship_spec"), "min_count": -1,
                                                      "max_count": -1})
        check(lib.amber_relationship_describe(spec, handle))
        self.name: str = ffi.string(spec.name).decode()
        self.destination: str = ffi.string(spec.destination).decode()
        self.inverse: Optional[str] = ffi.string(spec.inverse).decode() if spec.inverse != ffi.NULL else None
        self.to_many = bool(spec.flags & lib.AMBER_RELATIONSHIP_TO_MANY)
        self.ordered = bool(spec.flags & lib.AMBER_RELATIONSHIP_ORDERED)
        self.required = bool(spec.flags & lib.AMBER_RELATIONSHIP_REQUIRED)
        self.delete_rule: str = self._RULES[spec.delete_rule]
        self.min_count: Optional[int] = spec.min_count if spec.min_count >= 0 else None
        self.max_count: Optional[int] = spec.max_count if spec.max_count >= 0 else None

    def __repr__(self) -> str:
        kind = ("ordered to-many" if self.ordered else "to-many") if self.to_many else "to-one"
        return f"<amber.Relationship {self.name}: {kind} {self.destination}, inverse {self.inverse}, {self.delete_rule}>"


class Entity:
    """An entity of a bound model: its handle, its attributes and its relationships by name."""

    def __init__(self, handle: Any, model: "Model") -> None:
        self.handle = handle
        name, count, parent = _out("char **"), _out("size_t *"), _out("amber_entity **")
        check(lib.amber_entity_name(name, handle))
        self.name: str = ffi.string(name[0]).decode()
        check(lib.amber_entity_parent(parent, handle))
        #: The name of the entity this one inherits from, if any.
        self.parent: Optional[str] = None
        if parent[0] != ffi.NULL:
            check(lib.amber_entity_name(name, parent[0]))
            self.parent = ffi.string(name[0]).decode()
        check(lib.amber_entity_subentity_count(count, handle))
        #: Whether other entities inherit from this one (its fetches return their objects too).
        self.has_subentities = count[0] > 0
        flag = _out("int32_t *")
        check(lib.amber_entity_is_extensible(flag, handle))
        #: Whether its objects take extended attributes: names the model does not know,
        #: set and read like attributes (`book["shelf"] = "B2"`), stored with no migration.
        self.extensible = bool(flag[0])
        check(lib.amber_entity_attribute_count(count, handle))
        self.attributes: dict[str, Attribute] = {}
        for index in range(count[0]):
            out = _out("amber_attribute **")
            check(lib.amber_entity_attribute_at(out, handle, index))
            attribute = Attribute(out[0], model)
            self.attributes[attribute.name] = attribute
        self.relationships: dict[str, Relationship] = {}
        check(lib.amber_entity_relationship_count(count, handle))
        for index in range(count[0]):
            out = _out("amber_relationship **")
            check(lib.amber_entity_relationship_at(out, handle, index))
            relationship = Relationship(out[0])
            self.relationships[relationship.name] = relationship
        # Read in one batch at fetch: everything but transformed values, which keep
        # their decode policy (lazy by default: decoded on first access, if ever), and
        # computed ones, computed on first read and cached by the library, never here.
        self.prefetched = [a for a in self.attributes.values()
                           if a.type not in (lib.AMBER_TYPE_TRANSFORMABLE, lib.AMBER_TYPE_UNDEFINED) and a.computation is None]
        self.prefetch_handles = ffi.new("amber_attribute *[]", [a.handle for a in self.prefetched])
        # decode=True reads the transformed values too, after the others: a fetched object
        # keeps the row of values it came with, and either row gives an attribute one position.
        self.everything = self.prefetched + [a for a in self.attributes.values() if a.type == lib.AMBER_TYPE_TRANSFORMABLE]
        self.everything_handles = ffi.new("amber_attribute *[]", [a.handle for a in self.everything])
        # A subclass of Object with a slot per fetched attribute: a fetch fills the
        # slots, and `book.title` reads one in C. An empty slot (not fetched, or
        # cleared by a set or a rollback) ends in __getattr__, which asks the
        # library. Attributes never fetched (transient) get a property that asks.
        # Names that start with "_" or that Object's API uses (uri, keys, …) get neither:
        # they are read and set as items (book["uri"]), so no model can hide the API.
        #: Whether objects of this entity were made (its class can no longer change: Model.use).
        self.made = False
        self._make_class(model._class_for(self))

    def _make_class(self, base: type) -> None:
        """The class of this entity's objects, on `base`: Object, or a class
        `amber generate python` made (its renamed names mapped back)."""
        slotted = [a.name for a in self.everything if _is_plain(a.name)]
        renames = {renamed: name for cls in reversed(base.__mro__) for renamed, name in getattr(cls, "__amber_renamed__", {}).items()}
        self.object_class = type(self.name, (base,), {"__slots__": tuple(slotted), "_entity": self, "_renames": renames, **{
            name: _attribute_property(name) for name in self.attributes
            if _is_plain(name) and name not in slotted}, **{
            name: _relationship_property(name) for name in self.relationships if _is_plain(name)}})
        self.slots: dict[str, Any] = {name: getattr(self.object_class, name) for name in slotted}
        # In `everything` order (so `prefetched` is a prefix): each slot's setter, None for unslotted names.
        self.slot_setters = [self.slots[a.name].__set__ if a.name in self.slots else None for a in self.everything]

    def attribute(self, name: str) -> Attribute:
        try:
            return self.attributes[name]
        except KeyError:
            out = _out("amber_attribute **")
            check(lib.amber_entity_attribute(out, self.handle, name.encode()))  # raises with the nearest name
            raise


def _is_plain(name: str) -> bool:
    """Whether the attribute or relationship `name` reads as a Python attribute
    (`book.title`): not private-looking, not a name of Object's API."""
    return not name.startswith("_") and name not in _OBJECT_API


# AMBER_TYPE_* constants by value, for messages.
_TYPE_NAMES = {getattr(lib, f"AMBER_TYPE_{name.upper()}"): name for name in (
    "integer16", "integer32", "integer64", "decimal", "double", "float", "string", "boolean", "date", "binary", "uuid", "uri",
    "transformable", "undefined")}


def _kind(to_many: bool, ordered: bool) -> str:
    return ("ordered to-many" if ordered else "to-many") if to_many else "to-one"


def _attribute_property(name: str) -> property:
    # Read-only as a descriptor: Object.__setattr__ takes every assignment.
    return property(lambda self: self._get(name), doc=f"The {name} attribute.")


def _relationship_property(name: str) -> property:
    # A to-one reads as its object (or None), a to-many as a live collection; Object.__setattr__ takes assignments.
    return property(lambda self: self._related(name), doc=f"The {name} relationship.")


class Template(collections.namedtuple("Template", "name entity predicate sort limit variables")):
    """A fetch request template of a model: the entity it fetches, its
    predicate (with `$VARIABLES`), its sort keys ("title", "-published" for
    descending), its limit (None: none) and its variables' names."""

    __slots__ = ()


@checks_arguments
class Model(_Owner):
    """A model: from a JSON file, JSON text or a dict in the model file format
    (docs/model-json.md). It is bound (every class and transformer checked)
    when a store opens it, so plugins loaded by `amber.open` count. The bound
    model's handle is freed when the Model goes away (stores opened with it
    keep it until then: each holds its Model)."""

    _free = staticmethod(lib.amber_model_free)

    def __init__(self, json_text: str, registry: Optional[Registry] = None) -> None:
        if not isinstance(json_text, str):
            raise argument_error(f"a model's JSON text must be a str, not {type(json_text).__name__}")
        self._json = json_text
        self.registry = registry if registry is not None else shared_registry()
        self._entities: dict[str, Entity] = {}
        self._classes: dict[str, type] = {}  # generated classes by entity name (Model.use)
        self._codecs: dict[str, Optional[StructCodec]] = {}
        self._templates: Optional[dict[str, Template]] = None
        #: What an Xcode import changed or left out, one note per line ("Entity.attribute: ..."); empty for other models.
        self.notes: list[str] = []

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike], registry: Optional[Registry] = None) -> "Model":
        """The model in the JSON file at `path` (read now, bound when first needed)."""
        with builtins.open(path, encoding="utf-8") as file:  # this module's open() opens stores
            try:
                text = file.read()
            except UnicodeDecodeError as error:
                raise ModelError(lib.AMBER_E_INVALID_JSON, f"{os.fspath(path)}: not UTF-8 text ({error})", os.fspath(path)) from None
            return cls(text, registry)

    @classmethod
    def from_json(cls, text: str, registry: Optional[Registry] = None) -> "Model":
        return cls(text, registry)

    @classmethod
    def from_dict(cls, description: dict, registry: Optional[Registry] = None) -> "Model":
        # JSON has no NaN or infinity: name the place in the caller's dict, not in JSON text they never wrote.
        try:
            text = json.dumps(description, allow_nan=False)
        except ValueError as error:
            place = _non_finite_place(description, "$")
            if not place:  # a dict that contains itself
                raise ModelError(lib.AMBER_E_INVALID_JSON, f"the model description cannot be written as JSON: {error}", "$") from None
            raise ModelError(lib.AMBER_E_INVALID_JSON, f"{place}: {_non_finite_value(description, place)} is not a value a model "
                             "can hold (a model file is JSON, which has no NaN or infinity)", place) from None
        return cls(text, registry)

    @classmethod
    def from_xcode(cls, path: Union[str, os.PathLike], version: Optional[str] = None,
                   registry: Optional[Registry] = None) -> "Model":
        """The model of an Xcode data model, imported by the rules of
        docs/xcode-models.md and bound at once: a .xcdatamodeld bundle (its
        current version, or the one named `version`), a .xcdatamodel folder
        or its contents file. What the import changed or left out is in
        `notes`. A store Core Data wrote opens with the model it was made
        with: amber.open("App.sqlite", Model.from_xcode("App.xcdatamodeld"))."""
        target = registry if registry is not None else shared_registry()
        out, notes = _out("amber_model **"), _out("char **")
        check(lib.amber_model_from_xcode(out, notes, os.fsencode(path), ffi.NULL if version is None else _name(version, "a model version"),
                                         target._handle))
        try:
            text = ffi.string(notes[0]).decode()
        finally:
            lib.amber_free(notes[0])
        model = cls._bound(out[0], target)
        model.notes = text.splitlines()
        return model

    @classmethod
    def _bound(cls, handle: Any, registry: Registry) -> "Model":
        model = cls("", registry)
        model._own(handle)
        return model

    def bind(self) -> "Model":
        """Binds the model now (amber.open does it for you); raises ModelError listing every problem."""
        if self._handle is None:
            out = _out("amber_model **")
            encoded = self._json.encode("utf-8")
            check(lib.amber_model_from_json(out, encoded, len(encoded), self.registry._handle))
            self._own(out[0])
            self.registry._codec.add(self)
        return self

    def __repr__(self) -> str:
        try:
            names = [entity["name"] for entity in json.loads(self._json or self.to_json())["entities"]]
        except (Error, ValueError, KeyError, TypeError):  # a malformed description: binding will say why
            return "<amber.Model (malformed)>"
        state = "" if self._handle is not None else ", not bound yet"
        return f"<amber.Model {', '.join(names)}{state}>"

    def entity(self, name: str) -> Entity:
        """The entity named `name`; NotFoundError suggests the nearest name."""
        entity = self._entities.get(name)
        if entity is None:
            self.bind()
            out = _out("amber_entity **")
            check(lib.amber_model_entity(out, self._handle, _name(name, "the entity name")))
            entity = self._entities[name] = Entity(out[0], self)
        return entity

    def use(self, classes: Iterable[type["TypedObject"]]) -> "Model":
        """Makes this model's objects instances of `classes`, made by `amber
        generate python` from a model file: each object is of the class made
        for its entity, or for the nearest entity its entity inherits from.
        Every class is checked against the model first; ModelError lists
        every difference ("Book.pages: the class reads integer32, the model
        has string"). Objects made before keep their class, so call it before
        the first fetch; the first typed insert, fetch or count
        (ctx.fetch(Book)) calls it with the classes generated with that one."""
        classes = list(classes)
        problems = [problem for cls in classes for problem in self._differences(cls)]
        if problems:
            raise ModelError(lib.AMBER_E_INVALID_DECLARATION, "the generated classes do not fit the model:\n"
                             + "\n".join(f"  {problem}" for problem in problems), classes[0].__amber_entity__)
        classes_before = dict(self._classes)
        self._classes.update((cls.__amber_entity__, cls) for cls in classes)
        changed = [entity for entity in self._entities.values() if entity.object_class.__base__ is not self._class_for(entity)]
        made = [entity.name for entity in changed if entity.made]
        if made:
            # Objects made already would keep a class whose slots are no longer the entity's.
            self._classes = classes_before
            raise MisuseError(lib.AMBER_E_INVALID_DECLARATION, f"Model.use comes before the model's first objects: "
                              f"{', '.join(made)} objects were made already (call model.use(CLASSES) before fetching)",
                              made[0])
        for entity in changed:
            entity._make_class(self._class_for(entity))
        for cls in classes:
            entity = self.entity(cls.__amber_entity__)
            set_logic(self._handle, entity, self._classes.get(entity.name), TypedObject)
        return self

    def _differences(self, cls: type["TypedObject"]) -> list[str]:
        """How the model differs from what `cls` declares (its own properties; its bases declare theirs)."""
        try:
            entity = self.entity(cls.__amber_entity__)
        except NotFoundError:
            return [f"{cls.__amber_entity__}: the class {cls.__name__} reads objects of this entity, the model has none"]
        found: list[str] = []
        for name, declared in cls.__amber_declared__.items():
            place = f"{entity.name}.{name}"
            if declared[0] == "attribute":
                attribute = entity.attributes.get(name)
                if attribute is None:
                    found.append(f"{place}: the class has the attribute, the model does not")
                elif attribute.type != getattr(lib, f"AMBER_TYPE_{declared[1].upper()}", None):
                    found.append(f"{place}: the class reads {declared[1]}, the model has {_TYPE_NAMES.get(attribute.type, attribute.type)}")
                elif declared[2] is not None and attribute.value_class != declared[2]:
                    found.append(f"{place}: the class reads values of class {declared[2]}, the model has {attribute.value_class or 'any'}")
                continue
            relationship = entity.relationships.get(name)
            if relationship is None:
                found.append(f"{place}: the class has the relationship, the model does not")
            elif relationship.destination != declared[1]:
                found.append(f"{place}: the class leads to {declared[1]}, the model to {relationship.destination}")
            elif (relationship.to_many, relationship.ordered) != (declared[2], declared[3]):
                found.append(f"{place}: the class has a {_kind(declared[2], declared[3])} relationship, "
                             f"the model a {_kind(relationship.to_many, relationship.ordered)}")
        return found

    def _class_for(self, entity: Entity) -> type:
        """The class `use` gave `entity` or the nearest entity it inherits from; Object if none."""
        kind: Optional[Entity] = entity
        while kind is not None:
            if kind.name in self._classes:
                return self._classes[kind.name]
            kind = self.entity(kind.parent) if kind.parent else None
        return Object

    def _codec(self, class_name: Optional[str]) -> Optional[StructCodec]:
        if not class_name:
            return None
        return struct_codec(class_name, lib.amber_model_struct_layout, self.bind()._handle, self._codecs)

    def struct_type(self, name: str) -> Any:
        """The named tuple type of struct class `name` as this model sees it."""
        codec = self._codec(name)
        if codec is None:
            raise NotFoundError(lib.AMBER_E_NOT_FOUND, f"{name}: no such struct class in the model", name)
        return codec.type

    @property
    def templates(self) -> dict[str, "Template"]:
        """The model's fetch request templates by name (run one with
        Context.fetch_template)."""
        return dict(self._template_table())

    def _template_table(self) -> dict[str, "Template"]:
        """The templates by name, read from the library once (not copied: callers must not change it)."""
        if self._templates is not None:
            return self._templates
        handle = self.bind()._handle
        count = _out("size_t *")
        check(lib.amber_model_template_count(count, handle))
        found: dict[str, Template] = {}
        for index in range(count[0]):
            spec = ffi.new("amber_template_spec *", {"size": ffi.sizeof("amber_template_spec")})
            names, many = _out("const char *const **"), _out("size_t *")
            check(lib.amber_model_template_at(spec, names, many, handle, index))
            sort = ["-" + _str(spec.sort[i].key) if spec.sort[i].descending else _str(spec.sort[i].key)
                    for i in range(spec.sort_count)]
            name = _str(spec.name)
            found[name] = Template(name, _str(spec.entity), _str(spec.predicate) if spec.predicate else None, tuple(sort),
                                   spec.limit or None, tuple(_str(names[0][i]) for i in range(many[0])))
        self._templates = found
        return found

    def to_json(self) -> str:
        out, length = _out("char **"), _out("size_t *")
        check(lib.amber_model_to_json(out, length, self.bind()._handle))
        try:
            return ffi.unpack(out[0], length[0]).decode()
        finally:
            lib.amber_free(out[0])


def _non_finite_place(value: Any, place: str, seen: Optional[set] = None) -> str:
    """Where in `value` (a model description) the first NaN or infinite float is, as
    `$.entities[0].attributes[1].default`; "" for none (each container is looked in once, so a cycle ends)."""
    if isinstance(value, float) and not math.isfinite(value):
        return place
    seen = set() if seen is None else seen
    if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
        return ""
    seen.add(id(value))
    for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
        found = _non_finite_place(item, f"{place}.{key}" if isinstance(key, str) else f"{place}[{key}]", seen)
        if found:
            return found
    return ""


def _non_finite_value(value: Any, place: str) -> str:
    """The float at `place` (as `_non_finite_place` gives it), written as Python writes it."""
    for part in re.findall(r"\.([^.\[]+)|\[(\d+)\]", place):
        value = value[part[0]] if part[0] else value[int(part[1])]
    return repr(value)
