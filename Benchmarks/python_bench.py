"""W1-W5 through the Python bindings, against Python doing the same work without
Amber: W1-W4 with Python's own sqlite3 module (executemany; fetchall into
objects; a LIKE query with a sum; an executemany UPDATE in one transaction), W5
as colour round trips through the color plugin's transformer against a plain
Python function packing the four floats with the struct module. Prints JSON
for amber-bench (scripts/bench.sh runs it so), or standalone:

    AMBER_LIBRARY=.../libAmberC.so python3 python_bench.py --n N --repetitions R --plugin .../libAmberColorPlugin.so

W5 does --round-trips round trips, by default 10 x N (a million in the full
run, 20,000 in amber-bench's quick mode).

W22: W1, W2 and W4 through the class `amber generate python` makes from
Sources/amber-bench/Bench.amber.json, against the same calls by entity name
(objects inserted one by one on both sides), sides alternating; skipped when
amber-generate is not beside the library.

With --postgres URL, W1-W4 again on that PostgreSQL server: Amber's
PostgreSQL store against the peer Python programs reach for, SQLAlchemy 2's
ORM over psycopg 3, doing the same work with the same objects (a mapped class
with a version column for optimistic locking, as Amber's rows have, and a type
that turns colours into their 16 bytes, as the transformer does); fresh
schemas each repetition."""
import argparse
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
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
    start = time.perf_counter()
    found = sum(price for price, in db.execute("SELECT price FROM Book WHERE title LIKE '%42%'"))
    w3 = time.perf_counter() - start
    start = time.perf_counter()
    changes = []
    for index in range(0, len(books), 10):  # every 10th object as fetched in W2, as on Amber's side
        book = books[index]
        book.price = float(index)
        changes.append((book.price, book.pk))
    db.execute("BEGIN IMMEDIATE")
    db.executemany("UPDATE Book SET price = ?, _version = _version + 1 WHERE _pk = ? AND _version = 1", changes)
    db.execute("COMMIT")
    w4 = time.perf_counter() - start
    db.close()
    return w1, w2, w3, w4, total + found


def amber_run(path, model, data):
    """W1-W4 on the store at `path` (a file, or a PostgreSQL URL)."""
    with amber.open(path, model) as store:
        # Contexts are closed (and objects released) after the timers, as on the sqlite3 side.
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
            with store.context() as searcher:
                start = time.perf_counter()
                found = sum(book.price for book in searcher.fetch("Book", "title CONTAINS[c] %@", "42"))
                w3 = time.perf_counter() - start
            start = time.perf_counter()
            for index in range(0, len(books), 10):  # every 10th object as fetched in W2
                books[index].price = float(index)
            ctx.save()
            w4 = time.perf_counter() - start
    return w1, w2, w3, w4, total + found


def w22_run(path, model, data, book):
    """W1, W2 and W4 with `book`: a generated class, or the entity's name."""
    with amber.open(path, model) as store:
        with store.context() as ctx:
            start = time.perf_counter()
            for title, price, published, color in data:
                ctx.insert(book, title=title, price=price, published=published, color=color)
            ctx.save()
            w1 = time.perf_counter() - start
        with store.context() as ctx:
            start = time.perf_counter()
            books = ctx.fetch(book, decode=True)
            total = sum(book.price for book in books) + sum(len(book.title) + book.color.r for book in books)
            for each in books:
                each.published
            w2 = time.perf_counter() - start
            start = time.perf_counter()
            for index in range(0, len(books), 10):
                books[index].price = float(index)
            ctx.save()
            w4 = time.perf_counter() - start
    return w1, w2, w4, total


def typed_rows(directory, registry, data, repetitions):
    """W22 from Python: name → (typed ms, by-name ms); {} without amber-generate."""
    generator = os.path.join(os.path.dirname(os.environ.get("AMBER_LIBRARY", "")), "amber-generate")
    if not os.access(generator, os.X_OK):
        print("python_bench: no amber-generate beside AMBER_LIBRARY; skipping the W22 rows", file=sys.stderr)
        return {}
    model_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "amber-bench", "Bench.amber.json")
    module_path = os.path.join(directory, "bench_classes.py")
    subprocess.run([generator, "python", model_file, "-o", module_path], check=True)
    spec = importlib.util.spec_from_file_location("bench_classes", module_path)
    classes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(classes)
    names = ["Python W22 typed W1 insert + save", "Python W22 typed W2 fetch all + read",
             "Python W22 typed W4 update every 10th + save"]
    typed_ms, named_ms = {name: [] for name in names}, {name: [] for name in names}
    for repetition in range(repetitions):
        sides = [("typed", classes.Book), ("named", "Book")]
        for side, book in sides if repetition % 2 == 0 else reversed(sides):
            model = amber.Model.from_file(model_file, registry)
            result = w22_run(os.path.join(directory, f"w22-{side}{repetition}.amber"), model, data, book)
            for name, seconds in zip(names, result[:3]):
                (typed_ms if side == "typed" else named_ms)[name].append(seconds * 1000)
    return {name: {"amber_ms": statistics.median(typed_ms[name]), "raw_ms": statistics.median(named_ms[name])} for name in names}


def sqlalchemy_run(url, schema, data):
    """W1-W4 with SQLAlchemy 2's ORM and psycopg 3, in schema `schema` of the server at `url`."""
    import sqlalchemy
    from sqlalchemy import func, select
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class ColorBytes(sqlalchemy.types.TypeDecorator):
        impl = sqlalchemy.LargeBinary
        cache_ok = True
        pack, unpack = struct.Struct("<4f").pack, struct.Struct("<4f").unpack

        def process_bind_param(self, value, dialect):
            return None if value is None else self.pack(*value)

        def process_result_value(self, value, dialect):
            return None if value is None else Color(*self.unpack(value))

    class Base(DeclarativeBase):
        pass

    class BookRow(Base):
        __tablename__ = "book"
        pk: Mapped[int] = mapped_column(primary_key=True)
        version: Mapped[int] = mapped_column(nullable=False)
        title: Mapped[str]
        price: Mapped[float]
        published: Mapped[datetime] = mapped_column(sqlalchemy.DateTime(timezone=True))
        color = mapped_column(ColorBytes)
        __mapper_args__ = {"version_id_col": version}

    engine = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1),
                                      connect_args={"options": f"-c search_path={schema} -c synchronous_commit=local"})
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
        Base.metadata.create_all(engine)
        with Session(engine, expire_on_commit=False) as session:
            start = time.perf_counter()
            session.add_all([BookRow(title=title, price=price, published=published, color=color)
                             for title, price, published, color in data])
            session.commit()
            w1 = time.perf_counter() - start
        with Session(engine, expire_on_commit=False) as session:
            start = time.perf_counter()
            books = session.scalars(select(BookRow)).all()
            total = sum(book.price for book in books) + sum(len(book.title) + book.color.r for book in books)
            for book in books:
                book.published
            w2 = time.perf_counter() - start
            with Session(engine) as searcher:
                start = time.perf_counter()
                found = sum(book.price for book in searcher.scalars(select(BookRow).where(BookRow.title.ilike("%42%"))))
                w3 = time.perf_counter() - start
            start = time.perf_counter()
            for index in range(0, len(books), 10):  # every 10th object as fetched in W2, as on Amber's side
                books[index].price = float(index)
            session.commit()
            w4 = time.perf_counter() - start
            assert session.scalar(select(func.count()).select_from(BookRow)) == len(data)
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        engine.dispose()
    return w1, w2, w3, w4, total + found


def postgresql_rows(url, model, data, repetitions):
    """Amber's PostgreSQL store against SQLAlchemy + psycopg on the server at `url`: name → (amber ms, peer ms)."""
    names = ["Python PostgreSQL W1 insert + save", "Python PostgreSQL W2 fetch all + read",
             "Python PostgreSQL W3 CONTAINS[c] + sum", "Python PostgreSQL W4 update every 10th + save"]
    amber_ms, peer_ms = {name: [] for name in names}, {name: [] for name in names}
    separator = "&" if "?" in url else "?"
    for repetition in range(repetitions):
        tag = f"{os.getpid()}_{repetition}"
        peer = sqlalchemy_run(url, f"bench_sqla_{tag}", data)
        mine = amber_run(f"{url}{separator}schema=bench_py_{tag}", model, data)
        import psycopg
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS bench_py_{tag} CASCADE")
        if abs(peer[4] - mine[4]) > 1e-6 * max(1.0, abs(peer[4])):
            raise AssertionError(f"the two sides read different books: {peer[4]} and {mine[4]}")
        for name, theirs, ours in zip(names, peer, mine):
            peer_ms[name].append(theirs * 1000)
            amber_ms[name].append(ours * 1000)
    return {name: {"amber_ms": statistics.median(amber_ms[name]), "raw_ms": statistics.median(peer_ms[name])} for name in names}


# W5. Each side starts from 256 colours in its own form and turns each into its
# 16 stored bytes (little-endian floats) and back: the plain function from
# float tuples, Amber from the colour's C struct, through the plugin's byte
# path into preallocated buffers. Results are checked after the timers.
STORED = struct.Struct("<4f")
NATIVE = struct.Struct("=4f")  # struct Color { float r, g, b, a; }


def colours():
    return [((i & 255) / 255, 0.5, 0.25, 1.0) for i in range(256)]


def raw_round_trips(count):
    pack, unpack, inputs = STORED.pack, STORED.unpack, colours()
    result = None
    start = time.perf_counter()
    for i in range(count):
        result = unpack(pack(*inputs[i & 255]))
    elapsed = time.perf_counter() - start
    assert count == 0 or result == tuple(NATIVE.unpack(NATIVE.pack(*inputs[(count - 1) & 255])))
    return elapsed


def amber_round_trips(transformer, count):
    forward, reverse = transformer.forward_bytes, transformer.reverse_bytes
    inputs = [NATIVE.pack(*colour) for colour in colours()]
    stored, result = bytearray(16), bytearray(16)
    start = time.perf_counter()
    for i in range(count):
        if forward(inputs[i & 255], stored) != 16:  # the stored form's size: all of `stored` is the input below
            raise AssertionError("the color plugin wrote other than 16 bytes")
        reverse(stored, result)
    elapsed = time.perf_counter() - start
    last = (count - 1) & 255
    assert count == 0 or (bytes(stored) == STORED.pack(*colours()[last]) and bytes(result) == inputs[last])
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="objects per workload (W1-W4)")
    parser.add_argument("--repetitions", type=int, default=5, help="repetitions; the median is reported")
    parser.add_argument("--round-trips", type=int, help="colour round trips for W5 (default: 10 x N)")
    parser.add_argument("--plugin", required=True, help="the color plugin, libAmberColorPlugin.so")
    parser.add_argument("--postgres", help="a PostgreSQL server (libpq URI) for W1-W4 against SQLAlchemy 2 + psycopg 3 there")
    arguments = parser.parse_args()
    round_trips = arguments.round_trips if arguments.round_trips is not None else 10 * arguments.n
    registry = amber.Registry()
    registry.load_plugin(arguments.plugin)
    model = amber.Model.from_dict({"entities": [{"name": "Book", "attributes": [
        {"name": "title", "type": "string"}, {"name": "price", "type": "double"}, {"name": "published", "type": "date"},
        {"name": "color", "type": "transformable", "valueClass": "Color", "transformer": "ColorToData"}]}]}, registry)
    transformer = registry.transformer("ColorToData")
    data = rows(arguments.n)
    names = ["Python W1 insert + save", "Python W2 fetch all + read", "Python W3 CONTAINS[c] + sum",
             "Python W4 update every 10th + save", "Python W5 colour round trips"]
    amber_ms = {name: [] for name in names}
    raw_ms = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as directory:
        for repetition in range(arguments.repetitions):
            raw = sqlite_run(os.path.join(directory, f"raw{repetition}.db"), data)
            mine = amber_run(os.path.join(directory, f"amber{repetition}.amber"), model, data)
            raw = raw[:4] + (raw_round_trips(round_trips),)
            mine = mine[:4] + (amber_round_trips(transformer, round_trips),)
            for name, theirs, ours in zip(names, raw, mine):
                raw_ms[name].append(theirs * 1000)
                amber_ms[name].append(ours * 1000)
        results = {name: {"amber_ms": statistics.median(amber_ms[name]), "raw_ms": statistics.median(raw_ms[name])} for name in names}
        results.update(typed_rows(directory, registry, data, arguments.repetitions))
    if arguments.postgres:
        results.update(postgresql_rows(arguments.postgres, model, data, arguments.repetitions))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
