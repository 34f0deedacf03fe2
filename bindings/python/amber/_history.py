"""A store's history: the transactions its saves recorded, read as small
immutable Python objects from the JSON amber_store_history returns."""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any, Optional

from ._ffi import ffi, lib
from .errors import argument_error, check

# Amber's reference date: history timestamps are seconds since then.
_REFERENCE_DATE = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class HistoryChange:
    """One object a transaction inserted, updated or deleted."""

    kind: str
    """"inserted", "updated" or "deleted"."""
    entity: str
    """The object's entity ("Book")."""
    key: int
    """The object's primary key (the integer its URI ends with)."""
    object: str
    """The object's ID in URI form ("amber://UUID/Book/p12"): `context.object(uri)`
    finds it while it exists."""
    keys: tuple[str, ...]
    """An update's changed attributes and to-one relationships; () for an
    insertion or a deletion."""
    version: int
    """The object's version as of the transaction (for a deletion, the
    version it was deleted at)."""


@dataclass(frozen=True)
class HistoryTransaction:
    """One save recorded in a store's history."""

    token: str
    """The transaction's token, "UUID/sequence": `store.history(after=token)`
    reads what was saved after it, `store.purge_history(token)` purges
    through it."""
    timestamp: datetime.datetime
    """When it was saved, in UTC (timezone-aware)."""
    author: Optional[str]
    """The saving context's `author`, None if it had none."""
    context: Optional[str]
    """The saving context's `name`, None if it had none."""
    relinked: bool
    """Whether join-table links (of to-many relationships) or ordered
    positions changed."""
    recorded: bool
    """False for a save by a store opened with `history=False`: only that
    it happened is recorded, and `changes` is empty."""
    changes: tuple[HistoryChange, ...]
    """The objects it inserted, updated and deleted."""


def _change(item: dict[str, Any]) -> HistoryChange:
    return HistoryChange(kind=item["kind"], entity=item["entity"], key=item["key"], object=item["object"],
                         keys=tuple(item["keys"]), version=item["version"])


def _transaction(item: dict[str, Any]) -> HistoryTransaction:
    return HistoryTransaction(token=item["token"],
                              timestamp=_REFERENCE_DATE + datetime.timedelta(seconds=item["timestamp"]),
                              author=item["author"], context=item["context"], relinked=item["relinked"],
                              recorded=item["recorded"], changes=tuple(_change(change) for change in item["changes"]))


def decode(text: str) -> list[HistoryTransaction]:
    """The transactions of amber_store_history's JSON array, in its order (oldest first)."""
    return [_transaction(item) for item in json.loads(text)]


def _token(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise argument_error(f"{what} must be a history token (a str), not {type(value).__name__} ({value!r})")
    return value.encode("utf-8")


def _taken(out: Any) -> str:
    """The string C returned in `out`, freed."""
    try:
        return ffi.string(out[0]).decode("utf-8")
    finally:
        lib.amber_free(out[0])


def token(store: Any) -> str:
    """amber_store_history_token for a store handle."""
    out = ffi.new("char **")
    check(lib.amber_store_history_token(out, store))
    return _taken(out)


def read(store: Any, after: Optional[str]) -> list[HistoryTransaction]:
    """amber_store_history for a store handle, decoded."""
    out, count = ffi.new("char **"), ffi.new("size_t *")
    check(lib.amber_store_history(out, count, store, ffi.NULL if after is None else _token(after, "after")))
    return decode(_taken(out))


def purge(store: Any, through: str) -> None:
    """amber_store_purge_history for a store handle."""
    check(lib.amber_store_purge_history(store, _token(through, "through")))
