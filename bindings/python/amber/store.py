"""Opening stores, and what a store does: contexts, history, checks, backups and
maintenance; migration plans and Core Data imports."""
from __future__ import annotations

import os
import weakref
from typing import Any, Callable, Iterable, Optional, Union

from . import _history
from ._ffi import ffi, lib
from ._history import HistoryTransaction
from .errors import Error, MisuseError, ModelError, argument_error, callback_frame, check, checked_arguments, checks_arguments
from ._common import _Owner, _lines, _out
from .context import Context
from .model import Model
from .transformers import Registry, shared_registry


@checked_arguments
def open(url: Optional[Union[str, os.PathLike]], model: Optional[Model] = None, *,
         plugins: Iterable[Union[str, os.PathLike]] = (), plugin_config: Optional[str] = None,
         registry: Optional[Registry] = None, busy_timeout: float = 5.0, migrate: bool = True, backup: bool = True,
         progress: Optional[Callable[[str, int, int], None]] = None, durability: str = "normal",
         history: bool = True, allow_data_removal: bool = False) -> "Store":
    """Opens (creating if needed) the store `url` names with `model`, after
    loading `plugins` into the model's registry. `url` is what every Amber
    language and the CLI take (amber_store_open_url): a path or a "file:"
    URL ("file:///data/books.amber", percent-encoded) for a store file,
    "memory:" (or None) for a new in-memory store, or
    "postgresql://user@host:port/db?schema=NAME" for a store on a PostgreSQL
    server (its tables made in schema NAME, "public" by default, when it has
    none; a server that refuses or cannot be reached raises ServerError with
    its SQLSTATE as `origin`; derived and extended attributes, batch changes
    and migrations raise UnsupportedError there for now). A str with a scheme
    before any "/" is a URL: write a path with a colon there as "./a:b". A
    pathlib.Path or bytes is always a path. Text that names no store (an
    unknown scheme, a file: URL with a host or a query, text after
    "memory:") raises StoreURLError naming the part; nothing is created.

    With no model, opens an existing store at the path `url` with the model
    it carries (a path only: the C API opens an existing store by path; the
    options below other than the plugins do not apply). A store Core Data
    wrote opens, for reading, with the model it keeps of itself; give
    `Model.from_xcode(...)` to open it with the app's model instead.

    `busy_timeout` is how many seconds a save waits for another connection
    (another store on the file, or another process) to finish writing
    before raising BusyError; several processes may create one new store at
    once. A store may be shared by contexts on any threads.

    A store made with another model is migrated to `model` in one transaction
    (`migrate=False` raises ModelError instead): see `migration_plan` for what
    it does. With `backup` (the default) a file is first copied to
    `<path>.<old version hash>.backup`; a PostgreSQL store migrates in one
    transaction under its lock, and the server keeps no copy. `progress(step, completed, total)` is
    called as the migration proceeds; an exception it raises cancels the
    migration. A migration that is refused, cancelled or fails raises
    MigrationError and leaves the store unchanged. A migration that would
    remove stored data (the objects of a dropped entity, the values of a
    dropped attribute, the links of a dropped relationship) is refused,
    listing what and how much, unless `allow_data_removal` is true.

    `durability` is what a save that returned survives: "normal" (the
    default), a crash or kill of the process; "full", power failure too, at
    the cost of syncing the disk at every save. Either way a crash never
    damages the store or leaves a save half written.

    `history` (the default) records each save's changes in the store's
    history (`Store.history`), and contexts of other processes merge exactly
    them; with `history=False` a save records only that it happened
    (`recorded` False, no changes), and other processes' contexts compare
    every object they hold after it."""
    if durability not in _DURABILITY:
        raise argument_error(f"durability is {durability!r}; expected 'normal' or 'full'")
    target = model.registry if model is not None else (registry or shared_registry())
    for plugin in plugins:
        target.load_plugin(plugin, plugin_config)
    out = _out("amber_store **")
    if model is None:
        model_out = _out("amber_model **")
        check(lib.amber_store_open_existing(out, model_out, os.fsencode(url), target._handle))
        return Store(out[0], Model._bound(model_out[0], target), os.fspath(url))
    model.bind()
    if busy_timeout < 0:
        raise argument_error(f"busy_timeout is {busy_timeout}; expected 0 or more seconds")
    handle = ffi.new_handle(progress) if progress is not None else ffi.NULL
    options = ffi.new("amber_store_options *", {"size": ffi.sizeof("amber_store_options"),
                                                "busy_timeout_ms": int(busy_timeout * 1000),
                                                "migrate": int(bool(migrate)), "backup": int(bool(backup)),
                                                "progress": _progress_trampoline if progress is not None else ffi.NULL,
                                                "progress_context": handle, "durability": _DURABILITY[durability],
                                                "history": int(bool(history)),
                                                "allow_data_removal": int(bool(allow_data_removal))})
    if isinstance(url, str):  # a path or a URL, as amber_store_open_url decides
        check(lib.amber_store_open_url(out, os.fsencode(url), model._handle, options))
        return Store(out[0], model, url)
    check(lib.amber_store_open_with_options(out, ffi.NULL if url is None else os.fsencode(url), model._handle, options))
    return Store(out[0], model, None if url is None else os.fspath(url))


_DURABILITY = {"normal": lib.AMBER_DURABILITY_NORMAL, "full": lib.AMBER_DURABILITY_FULL}


@ffi.callback("int32_t(void *, const char *, uint64_t, uint64_t)")
def _progress_trampoline(userdata: Any, step: Any, completed: int, total: int) -> int:
    function = ffi.from_handle(userdata)
    return 0 if callback_frame(lambda: function(ffi.string(step).decode(), completed, total)) else 1


@checked_arguments
def migration_plan(path: Union[str, os.PathLike], model: Model) -> list[str]:
    """What opening the store at `path` (or a "postgresql://" URL) with `model` would do to it, one line
    per change, without changing anything; [] when it already has the
    model's shape. Raises MigrationError naming every change that cannot be
    inferred."""
    return _lines(lambda out, count: lib.amber_store_migration_plan(out, count, os.fsencode(path), model.bind()._handle))


@checked_arguments
def check_file(path: Union[str, os.PathLike]) -> list[str]:
    """Checks the store file at `path` as `Store.check` does, without opening
    it as a store: its model is not bound, so a store whose plugins are
    missing can be checked. Damage is reported in the list; raises StoreError
    only if the file is missing or cannot be opened."""
    return _lines(lambda out, count: lib.amber_store_check_file(out, count, os.fsencode(path)))


@checked_arguments
def import_coredata(source: Union[str, os.PathLike], destination: Union[str, os.PathLike], model: Optional[Model] = None,
                    registry: Optional[Registry] = None) -> int:
    """Copies the store Core Data wrote at `source` into a new Amber store at
    `destination`: every object and link, keys kept, values exactly as they
    read from the source, in one transaction, each entity's count checked.
    The source is only read. `model` is the model it was made with
    (`Model.from_xcode(...)`), or None for the model it keeps of itself,
    bound against `registry`. Returns how many objects were copied. Raises
    DestinationExistsError when something is at `destination`, ModelError
    naming every difference between the source and `model`, StoreError for
    a source that is not a Core Data store; nothing is left at `destination`
    after a failure."""
    target = registry if registry is not None else shared_registry()
    copied = _out("int64_t *")
    check(lib.amber_store_import_coredata(copied, os.fsencode(source), os.fsencode(destination),
                                          model.bind()._handle if model is not None else ffi.NULL, target._handle))
    return int(copied[0])


@checks_arguments
class Store(_Owner):
    """An open store. Close it (or use it as a context manager) when done;
    closing also closes the contexts made from it. A store nothing refers to
    any more (its contexts hold it) is closed when it goes away."""

    _free = staticmethod(lib.amber_store_close)

    def __init__(self, handle: Any, model: Model, path: Optional[Union[str, bytes]] = None) -> None:
        self._own(handle)
        self.model = model
        self.path = path  # what it was opened by: a path, a URL ("memory:", "file:…"); None: in memory
        # Weak: a context holds its store, and one nobody holds must be free to go.
        self._contexts: weakref.WeakSet[Context] = weakref.WeakSet()

    def context(self) -> "Context":
        """A new context on this thread. As a context manager (like sqlite3's
        `with connection:`) it saves on a clean exit and rolls back on an
        exception, then closes."""
        context = Context(self)
        self._contexts.add(context)
        return context

    def check(self) -> list[str]:
        """Checks the store: every page, index and constraint (SQLite's
        integrity check), every link between objects, and Amber's metadata.
        Returns each problem found; [] when the store is sound."""
        return _lines(lambda out, count: lib.amber_store_check(out, count, self._handle))

    def backup(self, path: Union[str, os.PathLike]) -> None:
        """Copies the store, as of its last save, into a new file at `path`
        with SQLite's online backup API; saves go on meanwhile. `path` is
        either left absent or a whole store that opens like this one. Raises
        DestinationExistsError if a file is already at `path` (nothing is
        written)."""
        check(lib.amber_store_backup(self._handle, os.fsencode(path)))

    def vacuum(self) -> None:
        """Rebuilds the store file without the space deleted objects left,
        so it shrinks; objects and their IDs are unchanged."""
        check(lib.amber_store_vacuum(self._handle))

    def checkpoint(self) -> None:
        """Copies every save in the write-ahead log into the store file and
        empties the log, so the file alone holds the store. Raises BusyError
        if another connection was still reading an older state (retrying may
        finish it). Closing the store does this and removes the log."""
        check(lib.amber_store_checkpoint(self._handle))

    # The history (see amber_store_history).

    def history_token(self) -> str:
        """The token of the last transaction in the store's history,
        "UUID/sequence" ("UUID/0" before the first save): `history(after=…)`
        with it reads only what is saved from then on. Keep it between runs
        to read what other processes saved meanwhile."""
        return _history.token(self._handle)

    def history(self, after: Optional[str] = None) -> list[HistoryTransaction]:
        """The transactions saved after the token `after` (None: from the
        start of the history), oldest first, each a HistoryTransaction with
        its token, time, the saving context's names and the objects it
        inserted, updated and deleted. Raises HistoryError for a token of
        another store, one later than the history, or one whose later
        transactions were purged; ValueClassError for text that is not a token."""
        return _history.read(self._handle, after)

    def purge_history(self, through: str) -> None:
        """Deletes the transactions up to and including the token `through`
        from the history. Reading after an earlier token then raises
        HistoryError, and contexts of other processes that had not merged
        them compare their objects instead. Raises HistoryError for a token
        of another store or one later than the history."""
        _history.purge(self._handle, through)

    def close(self, discard: bool = False) -> None:
        """Closes the contexts made from this store that are still open, then
        the store. While one of them holds unsaved changes, raises MisuseError
        naming them and closes nothing, unless `discard` is true: their
        changes are then dropped. Using a context or object of a closed store
        raises MisuseError saying the store was closed. Closing folds the
        write-ahead log into the store file; when the disk is full it raises
        StorageError after closing: every save is safe in the log beside the
        file (keep the two together), and opening and closing the store once
        there is room folds it."""
        contexts = [context for context in list(self._contexts) if context._owns]
        unsaved = [(context, context._pending_counts()) for context in contexts] if not discard else []
        unsaved = [(context, counts) for context, counts in unsaved if counts != ""]
        if unsaved:
            counts = "; ".join(counts for _, counts in unsaved)
            raise MisuseError(lib.AMBER_E_UNAVAILABLE, f"the store cannot close: {len(unsaved)} of its contexts "
                              f"{'holds' if len(unsaved) == 1 else 'hold'} unsaved changes ({counts}); save or roll them back, "
                              "or close(discard=True) to drop them", "store")
        for context in contexts:
            context._closed_because = ": its store was closed"
            context.close()
        try:
            self._release()
        except MisuseError:
            raise  # not released: a handle of another thread, say
        except Error:
            # Released all the same: the error reports what folding the log into the file met (a full disk).
            self._owns = False
            raise

    def __repr__(self) -> str:
        where = self.path if self.path is not None else ":memory:"
        return f"<amber.Store {where}{'' if self._owns else ' (closed)'}>"

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        # Leaving on an exception drops what its contexts did not save (as their own `with` does), rather than hide it.
        self.close(discard=kind is not None)
