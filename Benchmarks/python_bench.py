"""W1 and W2 through the Python bindings, against Python's own sqlite3 module
doing the same work (executemany; fetchall into objects). Prints JSON for
amber-bench: python3 python_bench.py --n N --repetitions R --plugin libAmberColorPlugin.so"""
import argparse
import json
import os
import sqlite3
import statistics
import struct
import tempfile
import time
from collections import namedtuple
from datetime import datetime, timedelta, timezone

import amber

Color = namedtuple("Color", "r g b a")


class Book:
    """What an application keeps per row on the sqlite3 side."""
    __slots__ = ("pk", "title", "price", "published", "color")

    def __init__(self, pk, title, price, published, color):
        self.pk, self.title, self.price, self.published, self.color = pk, title, price, published, color


def rows(n):
    start = datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)
    return [(f"Book {i}", i * 0.5, start + timedelta(seconds=i), Color((i % 256) / 255, 0.5, (i % 7) / 7, 1.0))
            for i in range(n)]


def sqlite_run(path, data):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE Book (_pk INTEGER PRIMARY KEY, _entity INTEGER NOT NULL, _version INTEGER NOT NULL DEFAULT 1, "
               "title TEXT, price REAL, published REAL, color BLOB)")
    pack = struct.Struct("<4f").pack
    start = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO Book (_entity, title, price, published, color) VALUES (1, ?, ?, ?, ?)",
                   ((title, price, published.timestamp(), pack(*color)) for title, price, published, color in data))
    db.execute("COMMIT")
    w1 = time.perf_counter() - start
    unpack = struct.Struct("<4f").unpack
    start = time.perf_counter()
    books = [Book(pk, title, price, datetime.fromtimestamp(published, timezone.utc), Color(*unpack(color)))
             for pk, title, price, published, color in db.execute("SELECT _pk, title, price, published, color FROM Book").fetchall()]
    total = sum(book.price for book in books) + sum(len(book.title) + book.color.r for book in books)
    w2 = time.perf_counter() - start
    db.close()
    return w1, w2, total


def amber_run(path, model, data):
    with amber.open(path, model) as store:
        # Contexts are closed (and objects released) after each timer, as on the sqlite3 side.
        with store.context() as ctx:
            start = time.perf_counter()
            ctx.insert_many("Book", ["title", "price", "published", "color"], data)
            ctx.save()
            w1 = time.perf_counter() - start
        with store.context() as ctx:
            start = time.perf_counter()
            books = ctx.fetch("Book", decode=True)  # every value will be read: decode in the batch
            total = sum(book.price for book in books) + sum(len(book.title) + book.color.r for book in books)
            for book in books:
                book.published
            w2 = time.perf_counter() - start
    return w1, w2, total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--plugin", required=True)
    arguments = parser.parse_args()
    registry = amber.Registry()
    registry.load_plugin(arguments.plugin)
    model = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [
        {"name": "title", "type": "string"}, {"name": "price", "type": "double"}, {"name": "published", "type": "date"},
        {"name": "color", "type": "transformable", "valueClass": "Color", "transformer": "ColorToData"}]}]}, registry)
    data = rows(arguments.n)
    amber_w1, amber_w2, raw_w1, raw_w2 = [], [], [], []
    with tempfile.TemporaryDirectory() as directory:
        for repetition in range(arguments.repetitions):
            w1, w2, _ = sqlite_run(os.path.join(directory, f"raw{repetition}.db"), data)
            raw_w1.append(w1 * 1000)
            raw_w2.append(w2 * 1000)
            w1, w2, _ = amber_run(os.path.join(directory, f"amber{repetition}.amber"), model, data)
            amber_w1.append(w1 * 1000)
            amber_w2.append(w2 * 1000)
    print(json.dumps({
        "Python W1 insert + save": {"amber_ms": statistics.median(amber_w1), "raw_ms": statistics.median(raw_w1)},
        "Python W2 fetch all + read": {"amber_ms": statistics.median(amber_w2), "raw_ms": statistics.median(raw_w2)},
    }))


if __name__ == "__main__":
    main()
