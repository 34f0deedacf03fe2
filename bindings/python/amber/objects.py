"""Objects of a context, and the live sets of a to-many relationship's members."""
from __future__ import annotations

import collections
import collections.abc
import functools
import weakref
from typing import Any, ClassVar, Iterator, NoReturn, TYPE_CHECKING

from ._ffi import ffi, lib
from ._values import from_c, to_c
from .errors import MisuseError, NotFoundError, ReservedNameError, UnknownNameError, argument_error, check, checks_arguments, placed
from ._common import _name, _not_text, _out

if TYPE_CHECKING:
    from .context import Context
    from .model import Entity, Relationship


@checks_arguments
class RelatedObjects(collections.abc.MutableSet):
    """The members of a to-many relationship of one object, live: every
    read asks the context, so it sees pending changes, and `add`, `discard`
    and `remove` change the relationship (the inverse follows at once). An
    ordered relationship iterates in its order and can be indexed."""

    __slots__ = ("_owner", "_relationship")

    def __init__(self, owner: "Object", relationship: Relationship) -> None:
        self._owner = owner
        self._relationship = relationship

    def _members(self) -> list["Object"]:
        objects, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_object_objects(objects, count, self._owner._handle, self._relationship.handle))
        try:
            context = self._owner._context
            return context._adopt(ffi.unpack(objects[0], count[0]), context.model.entity(self._relationship.destination)) \
                if count[0] else []
        finally:
            lib.amber_free(objects[0])

    def __len__(self) -> int:
        """Counted without loading the members, when they are not loaded yet."""
        out = _out("size_t *")
        check(lib.amber_object_count_objects(out, self._owner._handle, self._relationship.handle))
        return out[0]

    def __iter__(self) -> Any:
        return iter(self._members())

    def __contains__(self, item: object) -> bool:
        return any(member is item for member in self._members())

    def __getitem__(self, index: Any) -> Any:
        if not self._relationship.ordered:
            raise argument_error(f"{self._owner._entity.name}.{self._relationship.name} is not ordered; iterate it instead")
        return self._members()[index]

    def add(self, value: "Object") -> None:
        """Makes `value` a member (last, if ordered); nothing if it is one."""
        check(lib.amber_object_add_object(self._owner._handle, self._relationship.handle, _handle_of(value, self)))

    def discard(self, value: "Object") -> None:
        """Removes `value` if it is a member."""
        check(lib.amber_object_remove_object(self._owner._handle, self._relationship.handle, _handle_of(value, self)))

    def __repr__(self) -> str:
        return f"<amber.RelatedObjects {self._owner._entity.name}.{self._relationship.name}: {len(self)} objects>"


def _handle_of(value: Any, place: Any) -> Any:
    if not isinstance(value, Object):
        raise argument_error(f"{place}: expected an amber.Object, given {type(value).__name__}")
    return value._handle


class Object:
    """An object of a context. Attributes read and write as Python attributes
    (`book.title`) or items (`book["title"]`); so do extended attributes of an
    extensible entity (`book["shelf"] = "B2"`; None removes one). An attribute
    or relationship named like the object's own API (`uri`, `entity`,
    `primary_key`, `keys`, `extended_keys`, `to_dict`) or starting with "_" is
    an item only (`book["uri"]`): the API cannot be hidden. Its handle is
    released when the Object goes away; pending changes stay in the context
    until saved or rolled back."""

    # Made by Context._make, which sets these slots; each entity's subclass adds a slot
    # per fetched attribute, holding the value read with the fetch until a set or a
    # rollback clears it (_filled: whether a fetch filled any, so clearing costs nothing
    # otherwise). _entity is a class attribute of each entity's subclass.
    __slots__ = ("_context", "_handle", "_filled", "__weakref__")
    _entity: Entity
    # Generated classes' Python names for model names Python cannot use (`class_` for "class"), per entity class.
    _renames: dict[str, str] = {}
    _release_handle = staticmethod(lib.amber_object_release)  # through the class, which outlives every instance

    def __del__(self) -> None:
        # Runs before the slots are cleared, so the context can still be asked: once it is
        # freed, so are its handles. Never raises; a refusal (another thread) leaves the
        # handle to the context, which frees it with itself.
        if self._context._owns:
            self._release_handle(self._handle)

    @property
    def entity(self) -> str:
        return self._entity.name

    @property
    def uri(self) -> str:
        """The object's ID in URI form (temporary until first saved)."""
        out, length = _out("char **"), _out("size_t *")
        check(lib.amber_object_uri(out, length, self._handle))
        try:
            return ffi.unpack(out[0], length[0]).decode()
        finally:
            lib.amber_free(out[0])

    def fetched(self, name: str) -> list["Object"]:
        """The objects of fetched property `name` (declared in the model): a
        fetch whose predicate reads $FETCH_SOURCE as this object, made when
        first read and kept until Context.refresh refreshes the object.
        NotFoundError naming Entity.name for a property the entity lacks."""
        objects, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_object_fetched_objects(objects, count, self._handle, _name(name, "a fetched property")))
        try:
            return [self._context._known(objects[0][i]) for i in range(count[0])]
        finally:
            lib.amber_free(objects[0])

    @property
    def primary_key(self) -> int:
        """The object's primary key, the integer its URI ends with (…/p42 → 42),
        stable once the object is saved; MisuseError before its first save."""
        out = _out("int64_t *")
        check(lib.amber_object_primary_key(out, self._handle))
        return out[0]

    def _get(self, name: str) -> Any:
        slot = self._entity.slots.get(name)
        if slot is not None:
            try:
                return slot.__get__(self)
            except AttributeError:  # not fetched, or cleared (also by closing the context): ask the library
                pass
        if not self._context._owns:
            self._context._handle  # raises MisuseError: the context (or its store) is closed
        if name in self._entity.relationships:
            return self._related(name)
        attribute = self._entity.attributes.get(name)
        value = ffi.new("amber_value *")
        if attribute is not None:
            check(lib.amber_object_get(value, self._handle, attribute.handle))
        elif self._entity.extensible:  # an extended attribute (None if the object has none)
            check(lib.amber_object_get_named(value, self._handle, name.encode()))
        else:
            self._unknown(name)
        try:
            return from_c(value, self._context.model._codec)
        finally:
            lib.amber_value_release(value)

    def _unknown(self, name: str) -> NoReturn:
        """Raises UnknownNameError for `name`, with the library's nearest-name message."""
        try:
            self._entity.attribute(name)
        except NotFoundError as error:
            raise UnknownNameError(error.code, error.message, error.origin) from None
        raise UnknownNameError(lib.AMBER_E_NOT_FOUND, f"{self._entity.name}.{name}: no such attribute", f"{self._entity.name}.{name}")

    def _related(self, name: str) -> Any:
        """A to-one's object (None if none), or a to-many's live members."""
        relationship = self._entity.relationships[name]
        if relationship.to_many:
            return RelatedObjects(self, relationship)
        out = _out("amber_object **")
        check(lib.amber_object_get_object(out, self._handle, relationship.handle))
        if out[0] == ffi.NULL:
            return None
        return self._context._object(out[0], self._context.model.entity(relationship.destination))

    def _set_related(self, relationship: Relationship, new: Any) -> None:
        if relationship.to_many:
            # Replacing the members, in `new`'s order: one call, all or nothing.
            wanted = list(new)
            handles = ffi.new("amber_object *[]", [_handle_of(member, f"{self._entity.name}.{relationship.name}") for member in wanted])
            check(lib.amber_object_set_objects(self._handle, relationship.handle, handles, len(wanted)))
            return
        destination = ffi.NULL if new is None else _handle_of(new, f"{self._entity.name}.{relationship.name}")
        check(lib.amber_object_set_object(self._handle, relationship.handle, destination))

    def _set(self, name: str, new: Any) -> None:
        if not self._context._owns:
            self._context._handle  # raises MisuseError: the context (or its store) is closed
        relationship = self._entity.relationships.get(name)
        if relationship is not None:
            self._set_related(relationship, new)
            return
        value = ffi.new("amber_value *")
        keep: list = []
        place = f"{self._entity.name}.{name}"
        if name not in self._entity.attributes and self._entity.extensible:
            try:
                to_c(new, value, keep)
            except (TypeError, ValueError) as error:
                raise placed(error, place) from None
            check(lib.amber_object_set_named(self._handle, name.encode(), value))
            return
        attribute = self._entity.attributes.get(name)
        if attribute is None:
            self._unknown(name)
        try:
            to_c(new, value, keep, attribute.type, attribute.value_class, attribute.codec)
        except (TypeError, ValueError) as error:
            raise placed(error, place) from None
        check(lib.amber_object_set(self._handle, attribute.handle, value))
        # A set can change other stored values too (a shadow attribute's storage): read afresh.
        self._forget_values()

    def _forget_values(self) -> None:
        """Empties the slots a fetch filled, so every attribute is read afresh
        (nothing to do, and no per-slot work, for an object no fetch filled)."""
        if not self._filled:
            return
        self._filled = False
        for slot in self._entity.slots.values():
            try:
                slot.__delete__(self)
            except AttributeError:  # already empty
                pass

    def __getattr__(self, name: str) -> Any:
        # Only names that are not attributes reach here (attributes are properties of the entity's class).
        if name.startswith("_"):
            raise AttributeError(name)
        return self._get(self._renames.get(name, name))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name in _OBJECT_API:
            raise ReservedNameError(lib.AMBER_E_INVALID_VALUE, f"{self._entity.name}.{name}: \"{name}\" is a name of the "
                                    f"object's API, not an attribute; set an attribute of that name as an item: obj[\"{name}\"] = value",
                                    f"{self._entity.name}.{name}")
        else:
            self._set(self._renames.get(name, name), value)

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            raise _not_text(name, f"{self._entity.name}: an attribute name")
        return self._get(name)

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str):
            raise _not_text(name, f"{self._entity.name}: an attribute name")
        self._set(name, value)

    def extended_keys(self) -> list[str]:
        """The names of the object's extended attributes, sorted (empty unless its entity is extensible)."""
        out, count = _out("char **"), _out("size_t *")
        check(lib.amber_object_extended_keys(out, count, self._handle))
        if out[0] == ffi.NULL:
            return []
        try:
            # One buffer of NUL-terminated names, one after another.
            names, offset = [], 0
            for _ in range(count[0]):
                name = ffi.string(out[0] + offset)
                names.append(name.decode())
                offset += len(name) + 1
            return names
        finally:
            lib.amber_free(out[0])

    def keys(self) -> list[str]:
        """The names of the object's attributes, in model order, then its extended
        attributes, sorted: what `to_dict`, iteration and `in` see. (Relationships
        are read by name too, but are not values of the object and are not listed.)"""
        names = list(self._entity.attributes)
        if self._entity.extensible:
            names += self.extended_keys()
        return names

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._entity.attributes:
            return True
        return self._entity.extensible and name in self.extended_keys()

    def to_dict(self) -> dict[str, Any]:
        """Every attribute's value by name, extended attributes included."""
        return {name: self._get(name) for name in self.keys()}

    def __repr__(self) -> str:
        return f"<amber.Object {self._entity.name} {self.uri}>"


class TypedObject(Object):
    """The base of the classes `amber generate python` makes from a model
    file: one per entity, annotated for type checkers (`book.title: str`,
    `book.author: Author | None`, `author.books: MutableSet[Book]`). Pass a
    class where an entity name goes (ctx.insert(Book, title=...),
    ctx.fetch(Book, ...), ctx.count(Book)): the objects come as instances of
    their own entity's class. Reading and writing is the dynamic API's."""

    __slots__ = ()
    #: The entity the class was made for.
    __amber_entity__: ClassVar[str] = ""
    #: The class's own properties as the generator saw them, checked against a store's model (Model.use).
    __amber_declared__: ClassVar[dict[str, tuple[Any, ...]]] = {}
    #: Python names of model names Python cannot use, mapped to the model's.
    __amber_renamed__: ClassVar[dict[str, str]] = {}
    #: The classes generated with this one (the module's CLASSES), put to use together.
    __amber_family__: ClassVar[tuple[type["TypedObject"], ...]] = ()

    # Model logic: define these in a subclass of a generated class and put it
    # in use (model.use([MyBook])). They run in every context on the model,
    # for the class's entity and the entities below it that have no class of
    # their own defining hooks. Validators raise amber.ValidationProblem (an
    # ExceptionGroup of them for several): the save lists each with every other
    # problem. Anything else a validator, will_save or prepare_for_deletion
    # raises stops the save (or deletion) with HookError, every change kept;
    # what the other hooks raise comes out of the call that ran them, once it is done.

    def awake_from_insert(self) -> None:
        """After the object was inserted, before the caller's values are set."""

    def awake_from_fetch(self) -> None:
        """After the object first read its saved values in its context."""

    def validate_value(self, key: str, value: Any) -> None:
        """At a save, checks the value of attribute `key` (every attribute of
        a new object, those set since the last save of a changed one)."""

    def validate_for_insert(self) -> None:
        """Checks the new object as a whole before a save inserts it."""

    def validate_for_update(self) -> None:
        """Checks the changed object as a whole before a save updates it."""

    def validate_for_delete(self) -> None:
        """Checks the object before a save deletes it."""

    def will_save(self) -> None:
        """At the start of a save that inserts, updates or deletes the object:
        changes made here, to any object, are saved in the same transaction."""

    def did_save(self) -> None:
        """After a save wrote the object (a deleted one has left its context: its values are gone)."""

    def prepare_for_deletion(self) -> None:
        """When the object is deleted, before its delete rules apply: raising refuses the deletion."""

    def did_turn_into_fault(self) -> None:
        """When the object's values are dropped (refreshed without keeping changes, rolled back, deleted by a save)."""


# The public names of Object: attributes and relationships with these names are items only.
_OBJECT_API = frozenset(name for name in dir(Object) if not name.startswith("_"))


# Object's slots, set directly (Context._make).
_new_object = object.__new__


_set_context = Object._context.__set__  # type: ignore[attr-defined]


_set_handle = Object._handle.__set__  # type: ignore[attr-defined]


_set_filled = Object._filled.__set__  # type: ignore[attr-defined]


class _Ref(weakref.ref):
    """A weak reference to an Object that knows its handle: its key in Context._objects."""

    __slots__ = ("handle",)


def _forget(objects: dict, ref: _Ref) -> None:
    """The callback of a _Ref: the object is gone, so is its entry, unless the
    entry went already (the context was closed) or names another object."""
    if objects.get(ref.handle) is ref:
        del objects[ref.handle]


_set_ref_handle = _Ref.handle.__set__  # type: ignore[attr-defined]


_each = functools.partial(collections.deque, maxlen=0)  # runs an iterator (of C calls) to its end
