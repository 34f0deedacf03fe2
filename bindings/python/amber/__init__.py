"""Amber for Python: an object store with typed, checked value transformers
over SQLite, through Amber's C API.

    import amber
    model = amber.Model.from_file("books.json")
    with amber.open("books.amber", model, plugins=["libcolor.so"]) as store:
        with store.context() as ctx:
            book = ctx.insert("Book", title="Dune", price=Decimal("9.99"))
            ctx.save()
            for book in ctx.fetch("Book", "title CONTAINS[cd] %@", "dune", sort=["-price"], limit=10):
                print(book.title, book.price)
"""
from ._ffi import ffi, lib
from ._history import HistoryChange, HistoryTransaction
from .context import Context, MergePolicy
from .errors import (ArgumentError, BusyError, DestinationExistsError, Error, HistoryError, HookError, IndexOutOfRangeError, ServerError, MigrationError, ObserverError, MisuseError, ModelError, NotFoundError, PluginError, PredicateError, Problem, ReservedNameError, StorageError, StoreError, StoreURLError,
                     UnknownKeyPathError, UnknownNameError, UnsupportedError, TransformerError, ValidationError, ValidationProblem, ValueClassError)
from .model import Attribute, Entity, Model, Relationship, Template
from .objects import Object, RelatedObjects, TypedObject
from .observing import Change, ChangeReport, IndexChange, LiveQuery, Section
from .store import Store, check_file, import_coredata, migration_plan, open
from .transformers import Registry, Transformer, sample_plugin, shared_registry

__version__ = ffi.string(lib.amber_version()).decode()

__all__ = [
    "ArgumentError", "Attribute", "BusyError", "DestinationExistsError", "IndexOutOfRangeError", "ChangeReport", "Change", "IndexChange", "LiveQuery", "MigrationError", "ObserverError", "Section", "Context", "Entity", "Error", "HistoryChange", "HistoryError", "HistoryTransaction", "HookError", "ServerError", "MergePolicy", "MisuseError", "Model", "ModelError", "NotFoundError", "Object", "TypedObject",
    "PluginError", "PredicateError", "Problem", "Registry", "ReservedNameError", "RelatedObjects", "Relationship", "Store", "StorageError", "StoreError", "StoreURLError", "Template", "Transformer", "TransformerError", "UnknownKeyPathError", "UnknownNameError",
    "UnsupportedError", "ValidationError", "ValidationProblem", "ValueClassError", "check_file", "import_coredata", "migration_plan", "open", "sample_plugin", "shared_registry",
]
