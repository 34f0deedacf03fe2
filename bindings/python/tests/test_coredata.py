"""Stores Core Data wrote, from Python: the model imported from the app's
Xcode bundle, the store opened by path, every value compared with the
standard sqlite3 module's reading of the same file (dates and UUIDs
decoded here), relationships both ways, a predicate against a plain
filter, a save checked against Core Data's bookkeeping with sqlite3, a
later model version refused naming each difference. The fixtures are in ../shared/coredata beside the repository."""
import datetime
import decimal
import os
import shutil
import sqlite3
import uuid

import pytest

import amber

FIXTURES = os.environ.get("AMBER_COREDATA_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "coredata")
EPOCH_2001 = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)


def copy(tmp_path, name):
    """The fixture `name` (with its -wal and -shm) copied into tmp_path."""
    source = os.path.join(FIXTURES, name)
    target = tmp_path / os.path.basename(name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(source + suffix):
            shutil.copyfile(source + suffix, str(target) + suffix)
    return target


def rows(path, sql):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchall()


def sample_model2_registry():
    """The registry SampleModel2 needs: the app's own classes, whose archives are handed over as the stored bytes."""
    registry = amber.Registry()
    for name in ("CoverTransformer", "ContentTransformer"):
        registry.register_transformer(name, "PropertyList", "Binary", lambda value: value, lambda value: value)
    return registry


def date(seconds):
    return None if seconds is None else EPOCH_2001 + datetime.timedelta(seconds=seconds)


def test_a_store_with_a_hierarchy_reads_as_sqlite3_reads_it(tmp_path):
    path = copy(tmp_path, "CoreDataPlus/SampleModel_V1.sqlite")
    registry = amber.Registry()
    # The app's Color class is its own: its bytes go to a transformer the program registers.
    registry.register_transformer("ColorTransformer", "Binary", "Binary", lambda value: value, lambda value: value)
    model = amber.Model.from_xcode(os.path.join(FIXTURES, "CoreDataPlus/SampleModel.xcdatamodeld"), registry=registry)
    assert any(note.startswith("Person.id") for note in model.notes)
    with amber.open(path, model) as store, store.context() as ctx:
        people = ctx.fetch("Person", sort=["lastName", "firstName"])
        expected = rows(path, "SELECT Z_PK, ZFIRSTNAME, ZLASTNAME, ZID, ZUPDATEDAT FROM ZPERSON ORDER BY ZLASTNAME, ZFIRSTNAME")
        assert len(people) == len(expected) > 0
        for person, (key, first, last, uid, updated) in zip(people, expected):
            assert (person["firstName"], person["lastName"]) == (first, last)
            assert person["id"] == uuid.UUID(bytes=uid)
            assert person["updatedAt"] == date(updated)
            cars = sorted(car["numberPlate"] for car in person["cars"])
            assert cars == sorted(plate for (plate,) in rows(path, f"SELECT ZNUMBERPLATE FROM ZCAR WHERE ZOWNER = {key}"))
        # Sub-entities share their root's table: each row's Z_ENT names its entity.
        numbers = dict(rows(path, "SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY"))
        per_entity = dict(rows(path, "SELECT Z_ENT, count(*) FROM ZCAR GROUP BY Z_ENT"))

        def rows_of(*names):
            return sum(per_entity.get(numbers[name], 0) for name in names)
        assert ctx.count("Car") == rows_of("Car", "SportCar", "ExpensiveSportCar") == 125
        assert ctx.count("SportCar") == rows_of("SportCar", "ExpensiveSportCar")
        assert ctx.count("ExpensiveSportCar") == rows_of("ExpensiveSportCar")
        fiat = ctx.fetch("Car", "maker == %@ AND owner.lastName BEGINSWITH[c] %@", "FIAT", "m")
        plain = [plate for plate, maker, last in rows(path, "SELECT c.ZNUMBERPLATE, c.ZMAKER, p.ZLASTNAME FROM ZCAR c JOIN ZPERSON p ON c.ZOWNER = p.Z_PK")
                 if maker == "FIAT" and last.lower().startswith("m")]
        assert sorted(car["numberPlate"] for car in fiat) == sorted(plain) and plain


def test_a_save_keeps_core_datas_bookkeeping(tmp_path):
    path = copy(tmp_path, "wibosco/CoreDataMigration_Example_1.sqlite")
    model = amber.Model.from_xcode(os.path.join(FIXTURES, "wibosco/CoreDataMigration_Example.xcdatamodeld"), "CoreDataMigration_Example")
    metadata = rows(path, "SELECT * FROM Z_METADATA")
    with amber.open(path, model) as store, store.context() as ctx:
        posts = ctx.fetch("Post", sort=["date"])
        assert [(p["postID"], p["color"], p["date"]) for p in posts] == [
            (post, color, date(when)) for post, color, when in rows(path, "SELECT ZPOSTID, ZCOLOR, ZDATE FROM ZPOST ORDER BY ZDATE")]
        posts[0]["color"] = "000000"
        ctx.delete(posts[1])
        when = EPOCH_2001 + datetime.timedelta(days=3, seconds=0.25)
        new = ctx.insert("Post", postID="from Python", color="ABCDEF", content="written by Amber", date=when)
        ctx.save()
        changed, deleted = posts[0].primary_key, posts[1].primary_key
        assert new.primary_key == 11
    # The changed row's version rose, the new row took the key after Z_MAX, which rose; Core Data's metadata is as it was.
    assert rows(path, f"SELECT Z_OPT, ZCOLOR FROM ZPOST WHERE Z_PK = {changed}") == [(2, "000000")]
    assert rows(path, f"SELECT count(*) FROM ZPOST WHERE Z_PK = {deleted}") == [(0,)]
    assert rows(path, "SELECT Z_ENT, Z_OPT, ZPOSTID, ZCOLOR, ZCONTENT, ZDATE FROM ZPOST WHERE Z_PK = 11") == [
        (1, 1, "from Python", "ABCDEF", "written by Amber", 3 * 86400 + 0.25)]
    assert rows(path, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Post'") == [(11,)]
    assert rows(path, "SELECT * FROM Z_METADATA") == metadata


def test_a_store_keeping_core_datas_history_refuses_saves_by_name(tmp_path):
    path = copy(tmp_path, "CoreDataPlus/SampleModel2_V1.sqlite")
    with amber.open(path, registry=sample_model2_registry()) as store, store.context() as ctx:
        ctx.fetch("Book", limit=1)[0]["title"] = "Changed"
        with pytest.raises(amber.UnsupportedError, match="persistent history"):
            ctx.save()
        assert ctx.has_changes
        ctx.rollback()  # leaving the block would save again


def test_a_later_model_version_is_refused_naming_each_difference(tmp_path):
    path = copy(tmp_path, "CoreDataPlus/SampleModel3_V1.sqlite")
    bundle = os.path.join(FIXTURES, "CoreDataPlus/SampleModel3.xcdatamodeld")
    with pytest.raises(amber.ModelError) as raised:
        amber.open(path, amber.Model.from_xcode(bundle, "SampleModel3_v3"))
    for difference in ("entity Pet is not in the store", "User.pet: table ZUSER has no column ZPET",
                       "column ZUSER.ZPETNAME is not in the model"):
        assert difference in str(raised.value)
    with pytest.raises(amber.ModelError, match="No Such Version"):
        amber.Model.from_xcode(bundle, "No Such Version")
    with amber.open(path, amber.Model.from_xcode(bundle)) as store, store.context() as ctx:
        assert sorted(user["petName"] for user in ctx.fetch("User")) == sorted(name for (name,) in rows(path, "SELECT ZPETNAME FROM ZUSER"))


def test_a_store_alone_opens_with_the_model_it_keeps(tmp_path):
    path = copy(tmp_path, "CoreDataPlus/SampleModel2_V1.sqlite")
    with amber.open(path, registry=sample_model2_registry()) as store, store.context() as ctx:
        pages = ctx.fetch("Page", "book.title BEGINSWITH %@", "title 2 ")
        expected = rows(path, "SELECT p.ZNUMBER, p.ZCONTENT FROM ZPAGE p JOIN ZBOOK b ON p.ZBOOK = b.Z_PK WHERE b.ZTITLE LIKE 'title 2 %'")
        assert sorted((page["number"], page["content"]) for page in pages) == sorted(expected) and expected
        assert ctx.count("Writer") == ctx.count("Author") == len(rows(path, "SELECT Z_PK FROM ZWRITER"))
        for book in ctx.fetch("Book", limit=5):
            (price,) = rows(path, f"SELECT printf('%.15g', ZPRICE) FROM ZBOOK WHERE ZUNIQUEID = x'{book['uniqueID'].hex}'")[0]
            assert book["price"] == decimal.Decimal(price)


def test_a_store_copied_into_an_amber_store_reads_the_same(tmp_path):
    path = copy(tmp_path, "wibosco/CoreDataMigration_Example_1.sqlite")
    model = amber.Model.from_xcode(os.path.join(FIXTURES, "wibosco/CoreDataMigration_Example.xcdatamodeld"), "CoreDataMigration_Example")
    destination = tmp_path / "posts.amber"
    assert amber.import_coredata(path, destination, model) == 10
    with amber.open(path, model) as source, amber.open(destination) as copied:
        def posts(store):
            return [(p.primary_key, p["postID"], p["color"], p["content"], p["date"]) for p in store.context().fetch("Post", sort=["date"])]
        assert posts(copied) == posts(source) and len(posts(source)) == 10
    with pytest.raises(amber.DestinationExistsError):
        amber.import_coredata(path, destination, model)
    with pytest.raises(amber.ModelError, match="is not in the store"):
        amber.import_coredata(path, tmp_path / "other.amber", amber.Model.from_xcode(os.path.join(FIXTURES, "wibosco/CoreDataMigration_Example.xcdatamodeld")))
    assert not (tmp_path / "other.amber").exists()
