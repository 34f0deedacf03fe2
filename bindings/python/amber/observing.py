"""Change reports for observers, and live queries that follow what is saved."""
from __future__ import annotations

import collections
import collections.abc
import weakref
from typing import Any, Callable, Optional, Sequence, TYPE_CHECKING

from ._ffi import ffi, lib
from ._values import from_c
from .errors import IndexOutOfRangeError, argument_error, callback_frame, check, checks_arguments
from ._common import _Owner, _free_trampoline, _keep_until_freed, _name, _out

if TYPE_CHECKING:
    from .context import Context
    from .objects import Object


# ---------------------------------------------------------------------------
# Observers and live queries: a static trampoline each; what a callback
# raises is kept and raised by the check() after the C call that ran it.
# ---------------------------------------------------------------------------

class Change(collections.namedtuple("Change", "object keys")):
    """An object of a change report with the keys (attribute and relationship names) that changed."""

    object: "Object"
    keys: tuple[str, ...]


class ChangeReport(collections.namedtuple("ChangeReport", "event inserted updated deleted refreshed")):
    """What a save, merge or refresh changed, or what is pending (event
    "saved", "merged", "refreshed" or "pending"): inserted objects, updated
    ones with their changed keys, deleted ones (a saved deletion has left the
    context; its uri still names it) and refreshed ones (which took values
    other contexts saved) with their changed keys."""

    event: str
    inserted: list["Object"]
    updated: list[Change]
    deleted: list["Object"]
    refreshed: list[Change]


_EVENTS = {lib.AMBER_EVENT_SAVED: "saved", lib.AMBER_EVENT_MERGED: "merged", lib.AMBER_EVENT_REFRESHED: "refreshed",
           lib.AMBER_EVENT_PENDING: "pending"}


def _read_report(context: "Context", changes: Any) -> ChangeReport:
    event, count = _out("int32_t *"), _out("size_t *")
    check(lib.amber_changes_event(event, changes))
    lists: list[list] = []
    for kind in (lib.AMBER_CHANGES_INSERTED, lib.AMBER_CHANGES_UPDATED, lib.AMBER_CHANGES_DELETED, lib.AMBER_CHANGES_REFRESHED):
        check(lib.amber_changes_count(count, changes, kind))
        items: list = []
        for index in range(count[0]):
            handle = _out("amber_object **")
            check(lib.amber_changes_object(handle, changes, kind, index))
            obj = context._known(handle[0])
            if kind in (lib.AMBER_CHANGES_UPDATED, lib.AMBER_CHANGES_REFRESHED):
                obj._forget_values()  # a merge or a settled conflict changed them since Python cached them
                keys, key_count = _out("const char *const **"), _out("size_t *")
                check(lib.amber_changes_keys(keys, key_count, changes, kind, index))
                items.append(Change(obj, tuple(ffi.string(keys[0][k]).decode() for k in range(key_count[0]))))
            else:
                items.append(obj)
        lists.append(items)
    return ChangeReport(_EVENTS[event[0]], *lists)


class _Callback:
    """What the library's userdata reaches: weakly, the object that owns a
    callable (a context's observer, a live query's on_change) and its key in
    the owner's _callbacks. The callable lives on its owner, so a callable
    that refers to the owner makes a cycle Python can collect, not one held
    from the library."""

    def __init__(self, owner: Any, key: Any = None) -> None:
        self.owner = weakref.ref(owner)
        self.key = key

    def run(self, body: Callable[[Any, Callable], None]) -> int:
        owner = self.owner()
        function = owner._callbacks.get(self.key) if owner is not None else None
        if function is None:
            return 0
        return 0 if callback_frame(lambda: body(owner, function)) else -1


@ffi.callback("int32_t(amber_changes *, void *)")
def _observer_trampoline(changes: Any, userdata: Any) -> int:
    return ffi.from_handle(userdata).run(lambda context, function: function(_read_report(context, changes)))


class IndexChange(collections.namedtuple("IndexChange", "kind old new")):
    """One change to a live query's results: `kind` is "section_delete",
    "section_insert", "delete", "insert", "move" or "update"; `old` and `new`
    are (section, row) positions in the old and new results (row -1 for a
    section), or None where they do not apply. Apply them to a copy of the
    old results as LiveQuery documents."""

    kind: str
    old: Optional[tuple[int, int]]
    new: Optional[tuple[int, int]]


_INDEX_KINDS = {lib.AMBER_INDEX_SECTION_DELETE: "section_delete", lib.AMBER_INDEX_SECTION_INSERT: "section_insert",
                lib.AMBER_INDEX_DELETE: "delete", lib.AMBER_INDEX_INSERT: "insert", lib.AMBER_INDEX_MOVE: "move",
                lib.AMBER_INDEX_UPDATE: "update"}


@ffi.callback("int32_t(amber_live_query *, const amber_index_change *, size_t, void *)")
def _live_query_trampoline(query: Any, changes: Any, count: int, userdata: Any) -> int:
    def position(section: int, row: int) -> Optional[tuple[int, int]]:
        return None if section < 0 else (section, row)

    listed = [IndexChange(_INDEX_KINDS[c.kind], position(c.old_section, c.old_row), position(c.new_section, c.new_row))
              for c in (changes[i] for i in range(count))]

    def report(live: "LiveQuery", function: Callable) -> None:
        # Objects that joined, moved or changed may hold values Python cached before a merge.
        for change in listed:
            if change.kind in ("insert", "move", "update"):
                out = _out("amber_object **")
                check(lib.amber_live_query_object(out, query, change.new[0], change.new[1]))
                live.context._known(out[0])._forget_values()
        function(listed)
    return ffi.from_handle(userdata).run(report)


class Section(collections.namedtuple("Section", "value start count")):
    """A run of a live query's results sharing `value` (the section key's,
    a date grouped by the unit's first instant; None without a section key)."""

    value: Any
    start: int
    count: int


_UNITS = {None: lib.AMBER_UNIT_NONE, "year": lib.AMBER_UNIT_YEAR, "month": lib.AMBER_UNIT_MONTH, "day": lib.AMBER_UNIT_DAY}


@checks_arguments
class LiveQuery(_Owner):
    """The results of a fetch request, kept up to date after each save, merge
    and refresh of its context and each Context.process_pending_changes()
    (see Context.live_query). A change costs what it touches, not the size
    of the results.

    `on_change` receives a list of IndexChange. To apply one to a copy of the
    old results, remove the rows of "delete" and the old rows of "move" (last
    position first), then the sections of "section_delete" (last first);
    insert the sections of "section_insert", then the rows of "insert" and
    the new rows of "move" (first position first). Freed by close(), at the
    end of a with block, or when it goes away; it keeps its context alive."""

    _free = staticmethod(lib.amber_live_query_free)

    def __init__(self, context: Context, entity: str, predicate: Optional[str], arguments: Sequence[Any],
                 sort: Optional[Sequence[str]], limit: Optional[int], offset: int, section_key: Optional[str],
                 section_unit: Optional[str], on_change: Optional[Callable[[list[IndexChange]], None]],
                 include_pending: bool = True) -> None:
        if section_unit not in _UNITS:
            raise argument_error(f"section_unit: {section_unit!r} is not one of 'year', 'month', 'day'")
        keep: list = []
        request = context._request(entity, predicate, arguments, sort, limit, offset, keep, include_pending=include_pending)
        options = ffi.new("amber_live_query_options *")
        options.size = ffi.sizeof("amber_live_query_options")
        if section_key is not None:
            key = ffi.new("char[]", _name(section_key, "section_key"))
            keep.append(key)
            options.section_key = key
        options.section_unit = _UNITS[section_unit]
        self.context = context  # freed before its context
        self._callbacks = {None: on_change} if on_change is not None else {}
        out = _out("amber_live_query **")
        callback = _keep_until_freed(_Callback(self)) if on_change is not None else ffi.NULL
        check(lib.amber_live_query_new(out, context._handle, request, options,
                                       _live_query_trampoline if on_change is not None else ffi.NULL,
                                       callback, _free_trampoline if on_change is not None else ffi.NULL))
        self._own(out[0])

    def __enter__(self) -> "LiveQuery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stops following; the results can no longer be read."""
        self._release()

    def __len__(self) -> int:
        count = _out("size_t *")
        check(lib.amber_live_query_count(count, ffi.NULL, self._handle))
        return int(count[0])

    def __getitem__(self, index: int) -> "Object":
        if index < 0:
            index += len(self)
        out = _out("amber_object **")
        status = lib.amber_live_query_object(out, self._handle, -1, index) if index >= 0 else lib.AMBER_E_INVALID_VALUE
        if status == lib.AMBER_E_INVALID_VALUE:
            raise IndexOutOfRangeError(lib.AMBER_E_INVALID_VALUE, "live query index out of range")
        check(status)
        return self.context._known(out[0])

    @property
    def objects(self) -> list["Object"]:
        """The results, in order."""
        return [self[i] for i in range(len(self))]

    def object_at(self, section: int, row: int) -> "Object":
        """The result at row `row` of section `section`."""
        out = _out("amber_object **")
        check(lib.amber_live_query_object(out, self._handle, section, row))
        return self.context._known(out[0])

    @property
    def sections(self) -> list[Section]:
        """The sections in order (one holding every result without a section key)."""
        count, sections = _out("size_t *"), _out("size_t *")
        check(lib.amber_live_query_count(count, sections, self._handle))
        result = []
        for index in range(sections[0]):
            start, rows, value = _out("size_t *"), _out("size_t *"), ffi.new("amber_value *")
            check(lib.amber_live_query_section(start, rows, value, self._handle, index))
            try:
                result.append(Section(from_c(value, self.context.model._codec), int(start[0]), int(rows[0])))
            finally:
                lib.amber_value_release(value)
        return result

    def refetch(self) -> None:
        """Evaluates the request again in full and reports what differs."""
        check(lib.amber_live_query_refetch(self._handle))
