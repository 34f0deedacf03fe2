"""Contexts: inserting, fetching, saving, merging, undo, observers and live
queries of one thread's scratchpad over a store."""
from __future__ import annotations

import contextlib
import enum
import functools
import itertools
import operator
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, TYPE_CHECKING, TypeVar, Union, overload

from . import _batch
from ._columns import fill_related
from ._ffi import ffi, lib
from ._history import HistoryTransaction
from ._values import to_c
from .errors import MisuseError, NotFoundError, argument_error, check, checks_arguments, placed, raises_hook_errors
from ._common import _Owner, _columns, _free_trampoline, _keep_until_freed, _name, _not_text, _out, _packer, _reader, _text
from .logic import register_context
from .model import Entity
from .objects import Object, TypedObject, _Ref, _each, _forget, _handle_of, _new_object, _set_context, _set_filled, _set_handle, _set_ref_handle
from .observing import ChangeReport, IndexChange, LiveQuery, _Callback, _observer_trampoline, _read_report

if TYPE_CHECKING:
    from .model import Model
    from .store import Store


#: A class `amber generate python` made, where an entity name goes.
T = TypeVar("T", bound=TypedObject)

class MergePolicy(enum.IntEnum):
    """What a save does with a conflict: an object whose row another context
    or process changed or deleted since this context read it. The policies
    other than ERROR decide per key (attribute or to-one) against the row as
    it is inside the save's transaction; a key only one side changed keeps
    that side's value under each, and to-many members added or removed on
    both sides are all kept. After the save the object holds what was saved."""

    ERROR = lib.AMBER_MERGE_ERROR
    """The save raises ValidationError listing every conflict with the stored and
    the local values; nothing is written (the default)."""
    STORE_WINS = lib.AMBER_MERGE_STORE_WINS
    """Per key, the stored value wins; a deletion, on either side, wins."""
    OBJECT_WINS = lib.AMBER_MERGE_OBJECT_WINS
    """Per key, the value set here wins; this context's deletions are carried out,
    and a row deleted in the store is written again from the object."""
    OVERWRITE = lib.AMBER_MERGE_OVERWRITE
    """Every key is written as this context has it; deletions as OBJECT_WINS."""


@checks_arguments
class Context(_Owner):
    """A scratchpad over a store, used from the thread that made it. Freed by
    close() or when it goes away (its objects hold it), with every object
    handle it gave out."""

    _free = staticmethod(lib.amber_context_free)
    _closed_because = ""  # why, in the MisuseError of a later use: the store's close says so

    @property
    def _handle(self) -> Any:
        # Every call the context makes passes through here: once closed, it says so, and why.
        if not self._owns:
            raise MisuseError(lib.AMBER_E_INVALID_HANDLE, f"the context is closed{self._closed_because}", "context")
        return self._live_handle

    @_handle.setter
    def _handle(self, handle: Any) -> None:
        self._live_handle = handle

    def _pending_counts(self) -> str:
        """Its unsaved changes counted ("1 inserted, 0 updated, 0 deleted"), "" for none; a context
        of another thread, which cannot be asked, may hold some: it says so."""
        try:
            if not self.has_changes:
                return ""
            return f"{len(self.inserted)} inserted, {len(self.updated)} updated, {len(self.deleted)} deleted"
        except MisuseError:
            return "a context of another thread, whose changes cannot be read from this one"

    def __init__(self, store: Store) -> None:
        if not store._owns:
            raise MisuseError(lib.AMBER_E_INVALID_HANDLE, "the store is closed", "store")
        out = _out("amber_context **")
        check(lib.amber_context_new(out, store._handle))
        self._own(out[0])
        register_context(self, out[0])
        self.store = store
        self.model = store.model
        self._merges_automatically = False
        self._merge_policy = MergePolicy.ERROR
        self._names: tuple[Optional[str], Optional[str]] = (None, None)  # (name, author): C takes both at once
        self._callbacks: dict[int, Callable] = {}  # observers by token
        # Handle (a cdata pointer: it hashes and compares by address) -> a weak reference to
        # its Python object, while something holds that object: one nobody holds goes away,
        # releases its handle, and its reference's callback removes the entry, so a large
        # fetch stays flat. A WeakValueDictionary does the same but makes each entry in
        # Python code, which costs a fetch about as much per object as making the object.
        self._objects: dict[Any, _Ref] = {}
        self._forget = functools.partial(_forget, self._objects)  # the dict, not the context: no cycle

    def _object(self, handle: Any, entity: Entity) -> "Object":
        """The one Python object for a handle (a cdata pointer)."""
        return self._adopt([handle], entity)[0]

    def _adopt(self, handles: Sequence[Any], entity: Entity) -> list["Object"]:
        """The Python objects for `handles` (cdata pointers): the one already made
        for a handle while it lives, else a new one."""
        objects = self._objects
        alive: list[Optional[Object]] = [None] * len(handles)
        if objects:
            alive = [None if ref is None else ref() for ref in map(objects.get, handles)]
        made = self._make([handle for handle, obj in zip(handles, alive) if obj is None], entity)
        if len(made) == len(handles):  # the usual case: none had an object yet
            return made
        fresh = iter(made)
        return [obj if obj is not None else next(fresh) for obj in alive]

    def _make(self, handles: list[Any], entity: Entity) -> list["Object"]:
        """New objects for `handles`, made one slot at a time in C loops: no
        Python-level __init__ or __setattr__ per object."""
        entity.made = True
        made = list(map(_new_object, itertools.repeat(entity.object_class, len(handles))))
        _each(map(_set_context, made, itertools.repeat(self)))
        _each(map(_set_handle, made, handles))
        _each(map(_set_filled, made, itertools.repeat(False)))
        refs = list(map(_Ref, made, itertools.repeat(self._forget)))
        _each(map(_set_ref_handle, refs, handles))
        self._objects.update(zip(handles, refs))
        return made

    def _object_at(self, handle: Any) -> Optional["Object"]:
        ref = self._objects.get(handle)
        return ref() if ref is not None else None

    def _fill(self, entity: Entity, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[Any, Any, list]:
        attributes = [entity.attribute(name) for name in names]
        handles = ffi.new("amber_attribute *[]", [a.handle for a in attributes])
        slow_keep: list = []

        def slow(value: Any, target: Any, index: int) -> None:
            attribute = attributes[index % len(attributes)]
            to_c(value, target, slow_keep, attribute.type, attribute.value_class, attribute.codec)

        # A str is a URI for URI attributes and for attributes whose value class is URI, as to_c decides.
        kinds = [lib.AMBER_TYPE_URI if a.value_class == "URI" else a.type for a in attributes]
        places = [f"{entity.name}.{a.name}" for a in attributes]
        values, keep = _packer.pack(rows, kinds, [a.codec for a in attributes], places, slow)
        return handles, values, keep + slow_keep

    @overload
    def insert(self, entity: type[T], /, **values: Any) -> T: ...
    @overload
    def insert(self, entity: str, /, **values: Any) -> "Object": ...

    @raises_hook_errors
    def insert(self, entity: Union[str, type[TypedObject]], /, **values: Any) -> "Object":
        """Inserts a new object of `entity` (a name, or a class `amber generate
        python` made: the object is of that class), setting `values` by name:
        attributes, relationships (an object or None for a to-one, an
        iterable of objects for a to-many; the inverses follow) and, for an
        extensible entity, extended attributes. All or nothing: relationship
        values are checked before anything is inserted, and set last."""
        target = self.model.entity(self._entity_name(entity))
        related = {name: self._related_value(target, name, values.pop(name)) for name in list(values) if name in target.relationships}
        # Extended values, then relationships, are set once the object exists.
        later = {name: values.pop(name) for name in list(values) if name not in target.attributes} if target.extensible else {}
        later.update(related)
        out = ffi.new("amber_object *[1]")
        # With later values, the insert and its sets are one undo group (when undo is on), undone together.
        grouped = bool(later) and lib.amber_context_begin_undo_group(self._handle, ffi.NULL) == lib.AMBER_OK
        try:
            if values:
                handles, array, _keep = self._fill(target, list(values), [list(values.values())])
                check(lib.amber_context_insert_many(out, self._handle, target.handle, handles, len(values), array, 1))
            else:
                check(lib.amber_context_insert(out, self._handle, target.handle))
            obj = self._object(out[0], target)
            try:
                for name, value in later.items():
                    obj._set(name, value)
            except BaseException:
                self.delete(obj)  # a new object deleted before any save leaves the context
                raise
        finally:
            if grouped:
                check(lib.amber_context_end_undo_group(self._handle))
        return obj

    def _related_value(self, entity: Entity, name: str, value: Any) -> Any:
        """`value` for relationship `name` of a new `entity` object, checked as
        setting it would check it (objects of this context, of the destination
        entity or one below it, each once), so that setting it cannot fail
        after the object is made: a to-one's object or None, a to-many's list."""
        relationship = entity.relationships[name]
        place = f"{entity.name}.{name}"

        def checked(member: Any) -> Any:
            if not isinstance(member, Object) or member._context is not self:
                raise argument_error(f"{place}: {member!r} is not an object of this context")
            kind: Optional[Entity] = member._entity
            while kind is not None and kind.name != relationship.destination:
                kind = self.model.entity(kind.parent) if kind.parent else None
            if kind is None:
                raise argument_error(f"{place}: {member!r} is a {member._entity.name}, not a {relationship.destination}")
            state = _out("uint32_t *")
            check(lib.amber_object_state(state, member._handle))
            if state[0] & lib.AMBER_OBJECT_DELETED:
                raise argument_error(f"{place}: {member!r} is deleted")
            return member
        if not relationship.to_many:
            return None if value is None else checked(value)
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise argument_error(f"{place}: a to-many takes an iterable of objects, not {type(value).__name__}")
        members = [checked(member) for member in value]
        if len(set(map(id, members))) != len(members):
            raise argument_error(f"{place}: an object is listed twice")
        return members

    @raises_hook_errors
    def insert_many(self, entity: str, attributes: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Inserts one object per row (values in `attributes` order) in one call:
        the fast path for bulk loads. All or nothing. Returns the count.
        `attributes` may name relationships too: a to-one takes an object or
        None per row, a to-many an iterable of objects; the inverses follow.

        The rows are sent column by column (see `insert_columns`): a column
        whose values are all of one type (with or without None) is converted
        at C speed, any other value by value, exactly as `insert` converts it."""
        target = self.model.entity(entity)
        rows = rows if isinstance(rows, list) else list(rows)
        if not rows:
            return 0
        width = len(attributes)
        if set(map(len, rows)) != {width}:
            odd = next(row for row in rows if len(row) != width)
            raise argument_error(f"{target.name}: a row has {len(odd)} values for {width} attributes")
        # One pass per column with a C-level getter: zip(*rows) makes an iterator per row,
        # and the garbage collector runs over them (about twice as slow at 100,000 rows).
        columns = [list(map(operator.itemgetter(index), rows)) for index in range(width)]
        self._insert_columns(target, attributes, columns, len(rows))
        return len(rows)

    @raises_hook_errors
    def insert_columns(self, entity: str, columns: Mapping[str, Sequence[Any]]) -> int:
        """Inserts one object per row of `columns`: attribute name -> that
        attribute's values, one per row, every column of the same length.
        All or nothing. Returns the count.

            ctx.insert_columns("Book", {"title": titles, "price": prices})

        A relationship's column holds an object or None per row (to-one) or
        an iterable of objects (to-many); the inverses follow.

        A column whose values are all of one type (bool, int, float, str,
        bytes, datetime, UUID, Decimal, or tuples of the attribute's struct
        class), with or without None, goes to the C API as one array; any
        other column value by value, exactly as `insert` converts it. No value
        is converted inexactly on the way: a column mixing int and float, or
        holding an int beyond 64 bits, goes value by value (and is refused or
        converted as a single set would be)."""
        target = self.model.entity(entity)
        names = list(columns)
        values = [column if isinstance(column, (list, tuple)) else list(column) for column in columns.values()]
        lengths = set(map(len, values))
        if len(lengths) > 1:
            described = ", ".join(f"{name}: {len(column)}" for name, column in zip(names, values))
            raise argument_error(f"{target.name}: columns of different lengths ({described})")
        rows = lengths.pop() if lengths else 0
        if rows == 0:
            return 0
        self._insert_columns(target, names, values, rows)
        return rows

    def _insert_columns(self, entity: Entity, names: Sequence[str], columns: Sequence[Sequence[Any]], rows: int) -> None:
        array = ffi.new("amber_column[]", len(names))
        keep: list = []
        for target, name, values in zip(array, names, columns):
            if name in entity.relationships:
                try:
                    fill_related(target, values, entity.relationships[name], f"{entity.name}.{name}", _handle_of, keep)
                except TypeError as error:
                    raise argument_error(str(error)) from None
            else:
                _columns.fill(target, values, entity.attribute(name), entity.name, keep)
        check(lib.amber_context_insert_columns(ffi.NULL, self._handle, entity.handle, array, len(names), rows))

    @staticmethod
    def _arguments(arguments: Sequence[Any], keep: list) -> Any:
        """Predicate arguments (or variable values) as a C array; objects stand for their IDs."""
        values = ffi.new("amber_value[]", len(arguments))
        keep.append(values)
        for number, (slot, argument) in enumerate(zip(values, arguments), 1):
            if isinstance(argument, (list, tuple)) and argument and all(isinstance(item, Object) for item in argument):
                argument = [item.uri for item in argument]  # objects as their IDs' URIs (author IN %@)
            elif type(argument) is tuple:
                argument = list(argument)  # a collection for IN; only a struct class's own tuple type is a struct
            if isinstance(argument, Object):  # an object stands for its ID (author == %@)
                uri = ffi.new("char[]", argument.uri.encode())
                keep.append(uri)
                slot.type = lib.AMBER_VALUE_OBJECT_ID
                slot.v.text.data = uri
                slot.v.text.length = len(uri) - 1
            else:
                try:
                    to_c(argument, slot, keep)
                except (TypeError, ValueError) as error:
                    raise placed(error, f"predicate argument {number}") from None
        return values

    def _request(self, entity: Optional[str], predicate: Optional[str], arguments: Sequence[Any], sort: Optional[Sequence[str]],
                 limit: Optional[int], offset: int, keep: list, prefetch: Sequence[str] = (),
                 subentities: bool = True, template: Optional[str] = None,
                 variables: Optional[Mapping[str, Any]] = None, include_pending: bool = True) -> Any:
        request = ffi.new("amber_fetch_request *")
        request.size = ffi.sizeof("amber_fetch_request")  # what AMBER_FETCH_REQUEST_INIT sets in C
        if template is not None:
            request.template_name = name = ffi.new("char[]", _name(template, "the template name"))
            keep.append(name)
        elif entity is not None:  # None only for a filter in memory, which needs no entity
            request.entity = name = ffi.new("char[]", _name(entity, "the entity name"))
            keep.append(name)
        request.exclude_pending_changes = 0 if include_pending else 1
        if predicate is not None:
            text = ffi.new("char[]", _name(predicate, "the predicate"))
            keep.append(text)
            request.predicate = text
        if arguments:
            request.arguments = self._arguments(arguments, keep)
            request.argument_count = len(arguments)
        if variables:
            names = [ffi.new("char[]", str(key).encode("utf-8")) for key in variables]
            keep.extend(names)
            array = ffi.new("char *[]", names)
            keep.append(array)
            request.variable_names = array
            request.variable_values = self._arguments(list(variables.values()), keep)
            request.variable_count = len(names)
        if sort:
            keys = ffi.new("amber_sort[]", len(sort))
            keep.append(keys)
            for slot, key in zip(keys, sort):
                text = _name(key, "a sort key")
                descending = text.startswith(b"-")
                encoded = ffi.new("char[]", text.lstrip(b"-+"))
                keep.append(encoded)
                slot.key = encoded
                slot.descending = 1 if descending else 0
            request.sort = keys
            request.sort_count = len(sort)
        # C reads 0 and below as "no limit": refused here, so limit=0 or -1 never fetches everything in silence.
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise argument_error(f"limit {limit!r}: a fetch limit is a positive int (None: no limit)")
        request.limit = limit or 0
        request.offset = offset
        request.exclude_subentities = 0 if subentities else 1
        if prefetch:
            paths = [ffi.new("char[]", _name(path, "a prefetch key path")) for path in prefetch]
            keep.extend(paths)
            array = ffi.new("char *[]", paths)
            keep.append(array)
            request.prefetch = array
            request.prefetch_count = len(paths)
        return request

    @overload
    def fetch(self, entity: type[T], predicate: Optional[str] = None, *arguments: Any, sort: Optional[Sequence[str]] = None,
              limit: Optional[int] = None, offset: int = 0, decode: bool = False,
              prefetch: Sequence[str] = (), subentities: bool = True,
              variables: Optional[Mapping[str, Any]] = None, include_pending: bool = True) -> list[T]: ...
    @overload
    def fetch(self, entity: str, predicate: Optional[str] = None, *arguments: Any, sort: Optional[Sequence[str]] = None,
              limit: Optional[int] = None, offset: int = 0, decode: bool = False,
              prefetch: Sequence[str] = (), subentities: bool = True,
              variables: Optional[Mapping[str, Any]] = None, include_pending: bool = True) -> list["Object"]: ...

    @raises_hook_errors
    def fetch(self, entity: Union[str, type[TypedObject]], predicate: Optional[str] = None, *arguments: Any,
              sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0, decode: bool = False,
              prefetch: Sequence[str] = (), subentities: bool = True,
              variables: Optional[Mapping[str, Any]] = None, include_pending: bool = True) -> list[Any]:
        """Objects of `entity` (a name, or a class `amber generate python`
        made: each object is of its own entity's class) matching `predicate` (Core Data syntax, `%@` and
        `%K` filled from `arguments`), sorted by `sort` keys ("price", "-price"
        for descending), at most `limit`, after skipping `offset`.

        The context's unsaved changes count, as in Core Data: new objects that
        match are included, changed objects are judged and sorted by their
        current values, deleted ones are left out, then `offset` and `limit`
        apply. `include_pending=False` asks the store alone (objects as saved,
        less those deleted here).

        Stored values come in the same C call as the objects. Transformed
        values keep their decode policy (lazy: on first access) unless
        `decode=True`, which decodes them in the batch too: faster when you
        will read them all.

        Predicates follow relationships (`author.name == %@`, `ANY books.price
        > %@`, `books.@count > 3`) and compare objects (`author == %@` with an
        Object). `prefetch` names relationship key paths (`["author"]`,
        `["books", "books.tags"]`) read with the objects, one query each, so
        following them later reads nothing more. Objects of entities that
        inherit from `entity` come too, unless `subentities` is False.
        `$NAME` variables in the predicate take their values from `variables`
        (keyed by name without the `$`): each variable needs one and each
        value a variable, else PredicateError names it."""
        keep: list = []
        name = self._entity_name(entity)
        request = self._request(name, predicate, arguments, sort, limit, offset, keep, prefetch, subentities,
                                variables=variables, include_pending=include_pending)
        return self._fetch(self.model.entity(name), request, decode, subentities)

    def _entity_name(self, entity: Union[str, type[TypedObject]]) -> str:
        """The entity a name or a generated class names; a class is put to use
        (Model.use) with the classes generated with it, the first time."""
        if isinstance(entity, str):
            return entity
        if isinstance(entity, type) and issubclass(entity, TypedObject) and entity.__amber_entity__:
            if not issubclass(self.model._classes.get(entity.__amber_entity__, object), entity):
                # A class of the family already in use, or a subclass of one (with model logic), stays.
                family = entity.__amber_family__ or (entity,)
                self.model.use([cls for cls in family if not issubclass(self.model._classes.get(cls.__amber_entity__, object), cls)])
            return entity.__amber_entity__
        raise argument_error(f"an entity is named by a str or a class amber generate python made, not {entity!r}")

    @raises_hook_errors
    def fetch_template(self, name: str, variables: Optional[Mapping[str, Any]] = None, *,
                       sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
                       decode: bool = False, prefetch: Sequence[str] = (), subentities: bool = True,
                       include_pending: bool = True) -> list["Object"]:
        """Objects fetched by the model's template `name` (Model.templates),
        its `$VARIABLES` filled from `variables` ({"AUTHOR": "Albert Camus"}:
        every variable needs a value and every value a variable, else
        PredicateError names it). `sort` and `limit` given here
        replace the template's; the other options are as for fetch."""
        keep: list = []
        request = self._request(None, None, (), sort, limit, offset, keep, prefetch, subentities, template=name,
                                variables=variables, include_pending=include_pending)
        template = self.model._template_table().get(name)
        if template is None:  # C's error, with the nearest name
            check(lib.amber_context_count(_out("int64_t *"), self._handle, request))
        return self._fetch(self.model.entity(template.entity), request, decode, subentities)

    def _fetch(self, target: "Entity", request: Any, decode: bool, subentities: bool) -> list["Object"]:
        self._before_merging_point()
        read = target.everything if decode else target.prefetched
        width, count = len(read), _out("size_t *")
        if not width or (target.has_subentities and subentities):
            # Nothing to read with the objects (the batch needs at least one attribute), or objects of
            # several entities: each made as its own entity's, its values read when asked.
            objects = _out("amber_object ***")
            check(lib.amber_context_fetch(objects, count, self._handle, request))
            try:
                if target.has_subentities and subentities:
                    return [self._known(objects[0][i]) for i in range(count[0])]
                return self._fetched(objects[0], count[0], target)
            finally:
                lib.amber_free(objects[0])
        batch, values, handles = _out("amber_batch **"), _out("const amber_value **"), _out("amber_object *const **")
        attributes = target.everything_handles if decode else target.prefetch_handles
        check(lib.amber_context_fetch_batch(batch, values, handles, count, self._handle, request, attributes, width))
        # The values are views into the batch: each becomes a Python value before the batch is freed,
        # here, on the context's thread (amber_batch_free refuses any other).
        try:
            result = self._fetched(handles[0], count[0], target)
            if result:
                # Column by column into the objects' slots, in C loops. An object fetched
                # before gets the same values it has here (pending changes included).
                columns = _reader.columns(values[0], count[0], width, self.model._codec)
                for setter, column in zip(target.slot_setters, columns):
                    if setter is not None:
                        _each(map(setter, result, column))
                _each(map(_set_filled, result, itertools.repeat(True)))
        finally:
            freed = lib.amber_batch_free(batch[0])
        check(freed)
        return result

    def _fetched(self, handles: Any, count: int, entity: Entity) -> list["Object"]:
        """The objects for a fetch's `count` handles, each made before any value is read:
        if reading one fails, dropping them releases them all."""
        return self._adopt(ffi.unpack(handles, count), entity) if count else []

    def count(self, entity: Union[str, type[TypedObject]], predicate: Optional[str] = None, *arguments: Any,
              variables: Optional[Mapping[str, Any]] = None, include_pending: bool = True) -> int:
        """How many objects `fetch` would return (unsaved changes included unless `include_pending=False`)."""
        keep: list = []
        request = self._request(self._entity_name(entity), predicate, arguments, None, None, 0, keep, variables=variables,
                                include_pending=include_pending)
        out = _out("int64_t *")
        self._before_merging_point()
        check(lib.amber_context_count(out, self._handle, request))
        return out[0]

    def filter(self, objects: Iterable["Object"], predicate: Optional[str] = None, *arguments: Any,
               sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
               variables: Optional[Mapping[str, Any]] = None) -> list["Object"]:
        """The objects of `objects` (this context's, of any entities) that
        `predicate` matches on their current values, sorted by `sort`, at most
        `limit` after skipping `offset`: what fetch does to the objects it
        judges in memory, for any list. Arguments, sort keys and variables are
        as for fetch; transient attributes may be tested and sorted by.
        Raises what fetch raises for a predicate that does not fit an
        object's entity (with its position), and MisuseError for an object of
        another context."""
        given = list(objects)
        handles = ffi.new("amber_object *[]", [_handle_of(obj, f"objects[{index}]") for index, obj in enumerate(given)])
        keep: list = []
        request = self._request(None, predicate, arguments, sort, limit, offset, keep, variables=variables)
        out, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_context_filter(out, count, self._handle, handles, len(given), request))
        try:
            by_handle = {obj._handle: obj for obj in given}
            return [by_handle[out[0][index]] for index in range(count[0])]
        finally:
            lib.amber_free(out[0])

    # Batch changes by predicate (see amber_context_batch_update).

    def batch_update(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                     set: Optional[Mapping[str, Any]] = None, copy: Optional[Mapping[str, str]] = None,
                     add: Optional[Mapping[str, Any]] = None, subtract: Optional[Mapping[str, Any]] = None,
                     multiply: Optional[Mapping[str, Any]] = None, sort: Optional[Sequence[str]] = None,
                     limit: Optional[int] = None, offset: int = 0,
                     variables: Optional[Mapping[str, Any]] = None) -> list[str]:
        """Changes attributes of every object of `entity` that `predicate`
        matches (arguments, `sort`, `limit`, `offset` and `variables` as for
        fetch), in the store, in one transaction, without loading the objects.
        Returns the changed objects' IDs as URIs (as `obj.uri`).

            ctx.batch_update("Book", "pages > %@", 500, set={"long": True},
                             multiply={"price": Decimal("1.1")}, copy={"subtitle": "title"})

        `set` sets constants, `copy` sets each attribute to another attribute
        of the same object (`{"subtitle": "title"}`), and `add`, `subtract`
        and `multiply` set each attribute to itself + - * the value. Values
        are converted as `obj.attr = value` converts them. Arithmetic on
        integers and Decimals is exact or refused (an integer overflow, a
        Decimal result needing more than 38 digits); on floats it is IEEE
        arithmetic, as in Python. Nothing is written
        unless every changed object passes: ValidationError lists each
        object whose new value breaks a rule or a uniqueness constraint;
        ValueClassError names an attribute a batch cannot set (transient,
        derived, computed, transformed, set twice) or a value it refuses.

        The store's history records the batch; objects this context holds
        show the new values (keeping values set here and not saved), other
        contexts see them when they merge."""
        target = self.model.entity(entity)
        keep: list = []
        request = self._request(entity, predicate, arguments, sort, limit, offset, keep, variables=variables)
        array, count = _batch.assignments(target, {"set": set, "copy": copy, "add": add, "subtract": subtract,
                                                   "multiply": multiply}, keep)
        self._before_merging_point()
        try:
            return _batch.object_ids(lambda out, count_out: lib.amber_context_batch_update(
                out, count_out, self._handle, request, array, count))
        finally:
            self._forget_all_values()  # held objects were refreshed, derived values anywhere computed anew (also when an observer failed)

    def batch_delete(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                     sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
                     variables: Optional[Mapping[str, Any]] = None) -> list[str]:
        """Deletes every object of `entity` that `predicate` matches
        (arguments as for fetch), in the store, in one transaction, without
        loading the objects. Returns the deleted objects' IDs as URIs.

        Delete rules hold: nullify empties the links of the objects left
        (a required inverse refuses the batch); deny, cascade and no action
        refuse it while a deleted object still has a destination. A refusal
        raises ValidationError naming each relationship, and nothing is
        deleted. Objects this context holds leave it unless changed here; the
        history records the batch; other contexts see it when they merge."""
        self.model.entity(entity)  # NotFoundError with the nearest name, as fetch raises
        keep: list = []
        request = self._request(entity, predicate, arguments, sort, limit, offset, keep, variables=variables)
        self._before_merging_point()
        try:
            return _batch.object_ids(lambda out, count_out: lib.amber_context_batch_delete(
                out, count_out, self._handle, request))
        finally:
            self._forget_all_values()  # links of the objects left were nullified, derived values computed anew

    @raises_hook_errors
    def object(self, uri: str) -> "Object":
        """The object whose ID has this URI form."""
        out = _out("amber_object **")
        self._before_merging_point()
        check(lib.amber_context_object_with_uri(out, self._handle, _name(uri, "the URI")))
        return self._known(out[0])

    def delete(self, obj: "Object") -> None:
        """Marks `obj` for deletion at the next save."""
        check(lib.amber_context_delete(self._handle, _handle_of(obj, "delete")))

    @raises_hook_errors
    def save(self) -> None:
        """Writes every pending change in one transaction; ValidationError lists
        every problem and keeps every change."""
        self._before_merging_point()
        check(lib.amber_context_save(self._handle))
        if self._merge_policy != MergePolicy.ERROR:
            # A settled conflict may have changed any object's values.
            self._forget_all_values()

    @raises_hook_errors
    def rollback(self) -> None:
        """Discards every pending change."""
        check(lib.amber_context_rollback(self._handle))
        self._forget_all_values()

    @raises_hook_errors
    def process_pending_changes(self) -> None:
        """Brings the live queries that show unsaved changes up to date with
        the changes made here since they last looked (sets, inserts,
        deletions, undo, redo, rollback), calling their `on_change`. A save,
        a merge and a refresh do this too; call it after a batch of edits a
        list should show before they are saved. Observers are not called.
        Raises ObserverError (after every live query is up to date) if an
        `on_change` raised."""
        check(lib.amber_context_process_pending_changes(self._handle))

    @raises_hook_errors
    def merge_saved_changes(self) -> None:
        """Merges what other contexts saved since the last merge (on this store,
        through other stores on the file, or in other processes): objects held
        here that they updated keep every value set here and take the saved
        value of every other attribute; objects they deleted leave the context
        unless changed here; new rows appear in the next fetch, and observers
        get them as `inserted` (not for a save of more than 4,096 objects)."""
        check(lib.amber_context_merge_saved_changes(self._handle))
        self._forget_all_values()

    def wait_for_saved_changes(self, timeout: float) -> bool:
        """Waits until others saved something this context has not merged
        yet (another context, connection, process or host), or `timeout`
        seconds pass; returns whether they had (then `merge_saved_changes()`
        takes it). A PostgreSQL store is told of saves by the server; an SQLite
        store looks every few milliseconds. Blocks the calling thread."""
        if timeout < 0:
            raise ValueError(f"timeout is {timeout}; expected 0 or more seconds")
        changed = ffi.new("int32_t *")
        check(lib.amber_context_wait_for_saved_changes(changed, self._handle, int(timeout * 1000)))
        return bool(changed[0])

    @raises_hook_errors
    def refresh(self, obj: "Object", merge_changes: bool = True) -> None:
        """Reads `obj` again from the store: keeping every value set here
        (`merge_changes`), or dropping its pending value changes."""
        check(lib.amber_context_refresh(self._handle, obj._handle, 1 if merge_changes else 0))
        obj._forget_values()

    @property
    def automatically_merges_changes(self) -> bool:
        """Whether the context merges other contexts' saves before each fetch,
        count, lookup and save (then a value set here wins over one saved
        meanwhile instead of the save failing with a conflict, also one saved
        between that merge and the write)."""
        return self._merges_automatically

    @automatically_merges_changes.setter
    def automatically_merges_changes(self, enabled: bool) -> None:
        check(lib.amber_context_set_automatic_merging(self._handle, 1 if enabled else 0))
        self._merges_automatically = bool(enabled)

    @property
    def name(self) -> Optional[str]:
        """The context's name ("sync", "importer"), recorded with each of its
        saves in the store's history (HistoryTransaction.context); None (the
        default) records none."""
        return self._names[0]

    @name.setter
    def name(self, name: Optional[str]) -> None:
        self._set_names(name, self._names[1], "name")

    @property
    def author(self) -> Optional[str]:
        """Who saves through this context, recorded with each of its saves in
        the store's history (HistoryTransaction.author); None (the default)
        records none."""
        return self._names[1]

    @author.setter
    def author(self, author: Optional[str]) -> None:
        self._set_names(self._names[0], author, "author")

    def _set_names(self, name: Optional[str], author: Optional[str], what: str) -> None:
        changed = name if what == "name" else author
        if changed is not None and not isinstance(changed, str):
            raise _not_text(changed, f"Context.{what}")
        check(lib.amber_context_set_names(self._handle, _text(name), _text(author)))
        self._names = (name, author)

    @property
    def merge_policy(self) -> MergePolicy:
        """What a save does when another context or process changed or deleted
        an object's row since it was read (see MergePolicy); ERROR by default."""
        return self._merge_policy

    @merge_policy.setter
    def merge_policy(self, policy: MergePolicy) -> None:
        policy = MergePolicy(policy)  # ValueError for a number that names no policy
        check(lib.amber_context_set_merge_policy(self._handle, int(policy)))
        self._merge_policy = policy

    # Undo and redo (see amber_context_enable_undo).

    def enable_undo(self, levels_limit: int = 0) -> None:
        """Records every change made here for undo and redo, keeping at most
        `levels_limit` groups (0: no limit); earlier history is dropped."""
        check(lib.amber_context_enable_undo(self._handle, levels_limit))

    def disable_undo(self) -> None:
        """Stops recording and drops the history."""
        check(lib.amber_context_disable_undo(self._handle))

    def undo(self) -> bool:
        """Reverts the last group of changes; False if there was nothing to undo."""
        return self._replay(lib.amber_context_undo)

    def redo(self) -> bool:
        """Applies again the last group undo() reverted; False if there is none."""
        return self._replay(lib.amber_context_redo)

    def _replay(self, function: Callable[[Any, Any], int]) -> bool:
        done = _out("int32_t *")
        try:
            check(function(done, self._handle))
        finally:
            self._forget_all_values()
        return bool(done[0])

    @contextlib.contextmanager
    def undo_group(self, name: Optional[str] = None) -> Iterator[None]:
        """Groups every change made in the block into one undo step named
        `name` (for an "Undo <name>" menu item)."""
        check(lib.amber_context_begin_undo_group(self._handle, _text(name)))
        try:
            yield
        finally:
            check(lib.amber_context_end_undo_group(self._handle))

    @property
    def can_undo(self) -> bool:
        out = _out("int32_t *")
        check(lib.amber_context_undo_state(out, ffi.NULL, self._handle))
        return bool(out[0])

    @property
    def can_redo(self) -> bool:
        out = _out("int32_t *")
        check(lib.amber_context_undo_state(ffi.NULL, out, self._handle))
        return bool(out[0])

    @property
    def undo_action_name(self) -> Optional[str]:
        """The name of the group undo() would revert, if it has one."""
        return self._action_name(0)

    @property
    def redo_action_name(self) -> Optional[str]:
        """The name of the group redo() would apply, if it has one."""
        return self._action_name(1)

    def _action_name(self, redo: int) -> Optional[str]:
        out = _out("char **")
        check(lib.amber_context_undo_action_name(out, self._handle, redo))
        if out[0] == ffi.NULL:
            return None
        try:
            return ffi.string(out[0]).decode("utf-8")
        finally:
            lib.amber_free(out[0])

    # Observers and live queries (see amber_context_add_observer, amber_live_query_new).

    def add_observer(self, observer: Callable[[ChangeReport], None]) -> int:
        """Calls `observer` with a ChangeReport after each save that wrote
        something, each merge that changed or removed objects held here, and
        each refresh that changed an object, on this context's thread. If it
        raises, the others still run and the call that made the event raises
        ObserverError after doing its work (a save is written). Returns a
        token for remove_observer."""
        token, callback = _out("uint64_t *"), _Callback(self)
        check(lib.amber_context_add_observer(token, self._handle, _observer_trampoline, _keep_until_freed(callback),
                                             _free_trampoline))
        callback.key = int(token[0])
        self._callbacks[callback.key] = observer
        return callback.key

    def remove_observer(self, token: int) -> None:
        """Removes the observer add_observer returned `token` for (NotFoundError if there is none)."""
        check(lib.amber_context_remove_observer(self._handle, token))
        self._callbacks.pop(token, None)

    def pending_changes(self) -> ChangeReport:
        """The changes made here and not saved yet (event "pending")."""
        out = _out("amber_changes **")
        check(lib.amber_context_pending_changes(out, self._handle))
        try:
            return _read_report(self, out[0])
        finally:
            lib.amber_changes_free(out[0])

    def live_query(self, entity: str, predicate: Optional[str] = None, *arguments: Any,
                   sort: Optional[Sequence[str]] = None, limit: Optional[int] = None, offset: int = 0,
                   section_key: Optional[str] = None, section_unit: Optional[str] = None,
                   on_change: Optional[Callable[[list[IndexChange]], None]] = None,
                   include_pending: bool = True) -> "LiveQuery":
        """The results of a fetch (arguments as for fetch) that follow every
        save, merge and refresh of this context, and every
        process_pending_changes(); `on_change` gets the index changes of each.
        Like fetch, the results include unsaved changes made here (shown at
        the next of those calls), unless `include_pending=False`: then they
        follow what is saved. Sections by `section_key` (the first sort key),
        dates grouped by `section_unit` ("year", "month" or "day", in UTC)."""
        return LiveQuery(self, entity, predicate, arguments, sort, limit, offset, section_key, section_unit, on_change,
                         include_pending)

    def _before_merging_point(self) -> None:
        """Cached values go before a call that may merge other contexts' saves."""
        if self._merges_automatically:
            self._forget_all_values()

    def _forget_all_values(self) -> None:
        for ref in list(self._objects.values()):
            obj = ref()
            if obj is not None:
                obj._forget_values()

    @property
    def has_changes(self) -> bool:
        out = _out("int32_t *")
        check(lib.amber_context_has_changes(out, self._handle))
        return bool(out[0])

    def _pending(self, kind: int) -> list["Object"]:
        objects, count = _out("amber_object ***"), _out("size_t *")
        check(lib.amber_context_pending_objects(objects, count, self._handle, kind))
        try:
            return [self._known(objects[0][i]) for i in range(count[0])]
        finally:
            lib.amber_free(objects[0])

    def _known(self, handle: Any) -> "Object":
        """The Python object for a handle this context gave out, even one Python
        never saw (objects inserted in a batch)."""
        found = self._object_at(handle)
        if found is not None:
            return found
        entity, name = _out("amber_entity **"), _out("char **")
        check(lib.amber_object_entity(entity, handle))
        check(lib.amber_entity_name(name, entity[0]))
        return self._object(handle, self.model.entity(ffi.string(name[0]).decode()))

    @property
    def inserted(self) -> list["Object"]:
        return self._pending(lib.AMBER_PENDING_INSERTED)

    @property
    def updated(self) -> list["Object"]:
        return self._pending(lib.AMBER_PENDING_UPDATED)

    @property
    def deleted(self) -> list["Object"]:
        return self._pending(lib.AMBER_PENDING_DELETED)

    def close(self) -> None:
        """Frees the context and its objects' handles; later use raises MisuseError."""
        self._release()
        # Values a fetch cached in its objects go too, so reading one raises instead of answering from the cache.
        for ref in list(self._objects.values()):
            obj = ref()
            if obj is not None:
                obj._forget_values()
        self._objects.clear()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        # As sqlite3's `with connection:`: a clean exit saves, an exception rolls back; then it closes.
        try:
            if self._owns:
                if kind is None:
                    self.save()
                else:
                    self.rollback()
        finally:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if not self._owns else ("with unsaved changes" if self.has_changes else "no unsaved changes")
        return f"<amber.Context on {self.store!r}, {state}>"
