"""Classes `amber generate python` makes from a model file: typed round
trips, inheritance, relationships, renamed names, a model the classes do not
fit, and mypy --strict on a program that uses them."""
import datetime
import decimal
import json
import os
import site
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import amber

from conftest import LIBRARY_MODEL as MODEL


def test_every_type_reads_back_exactly_after_save_and_reopen(library, tmp_path):
    path = tmp_path / "typed.amber"
    published = datetime.datetime(2021, 10, 22, 8, 30, 15, 250000, tzinfo=datetime.timezone.utc)
    isbn = uuid.uuid4()
    with amber.open(path, amber.Model.from_file(MODEL)) as store:
        ctx = store.context()
        book = ctx.insert(library.Book, title="Dune", pages=412, small=-32768, big=2**63 - 1, price=decimal.Decimal("12.30"),
                          rating=4.25, inPrint=True, published=published, cover=b"\x00\xff", isbn=isbn,
                          link="https://example.org/dune?x=1")
        book.class_ = "fiction"  # `class`, renamed
        book.extras = [1, "two"]
        assert isinstance(book, library.Book)
        ctx.save()
    with amber.open(path, amber.Model.from_file(MODEL)) as store:
        [book] = store.context().fetch(library.Book)
        assert type(book).__mro__[1] is library.Book
        assert (book.title, book.pages, book.small, book.big) == ("Dune", 412, -32768, 2**63 - 1)
        assert str(book.price) == "12.30" and book.rating == 4.25 and book.inPrint is True
        assert book.published == published and book.cover == b"\x00\xff" and book.isbn == isbn
        assert book.link == "https://example.org/dune?x=1" and book.extras == [1, "two"]
        assert book.class_ == "fiction" and book["class"] == "fiction"


def test_objects_come_as_their_own_entitys_class_and_relationships_are_typed(library):
    ctx = amber.open(None, amber.Model.from_file(MODEL)).context()
    author = ctx.insert(library.Author, name="Frank Herbert")
    novel = ctx.insert(library.Novel, title="Dune", genre="science fiction", author=author)
    essay = ctx.insert(library.Book, title="Essays")
    author.books.add(essay)
    chapter = ctx.insert(library.Chapter, heading="One", book=novel)
    ctx.save()
    books = ctx.fetch(library.Book, sort=["title"])
    assert [type(book).__mro__[1] for book in books] == [library.Novel, library.Book]
    assert isinstance(books[0], library.Book) and books[0].genre == "science fiction"
    assert set(author.books) == {novel, essay} and novel.author is author
    assert list(novel.chapters) == [chapter] and chapter.book is novel
    assert ctx.count(library.Novel) == 1 and ctx.count(library.Book, "title == %@", "Essays") == 1


def test_classes_that_do_not_fit_the_model_are_refused_naming_each_difference(library, tmp_path):
    description = json.loads(MODEL.read_text())
    book = next(entity for entity in description["entities"] if entity["name"] == "Book")
    book["attributes"] = [a for a in book["attributes"] if a["name"] != "rating"]
    next(a for a in book["attributes"] if a["name"] == "pages")["type"] = "string"
    with amber.open(None, amber.Model.from_dict(description)) as store:
        ctx = store.context()
        with pytest.raises(amber.ModelError) as raised:
            ctx.insert(library.Book, title="Dune")
        assert "Book.rating: the class has the attribute, the model does not" in str(raised.value)
        assert "Book.pages: the class reads integer32, the model has string" in str(raised.value)
        assert ctx.count("Book") == 0  # nothing was inserted
    with pytest.raises(amber.ArgumentError):
        amber.open(None, amber.Model.from_file(MODEL)).context().fetch(int)  # type: ignore[arg-type]


PROGRAM = '''
import amber
import library


def long_titles(ctx: amber.Context) -> list[str]:
    return [book.title for book in ctx.fetch(library.Book, "pages > %@", 300)]


def add(ctx: amber.Context) -> library.Author | None:
    novel = ctx.insert(library.Novel, title="Dune")
    novel.pages = 412
    novel.genre = "science fiction"
    for chapter in novel.chapters:
        print(chapter.heading)
    return novel.author
'''


def mypy(folder: Path, program: str) -> subprocess.CompletedProcess:
    (folder / "program.py").write_text(program)
    env = dict(os.environ)
    # An installed amber mypy finds itself (and refuses site-packages in MYPYPATH); one from the source tree it is shown.
    amber_root = Path(amber.__file__).resolve().parents[1]
    installed = {Path(path).resolve() for path in site.getsitepackages() + [site.getusersitepackages()]}
    if amber_root not in installed:
        env["MYPYPATH"] = str(amber_root)
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir", os.devnull, "program.py", "library.py"],
                          cwd=folder, capture_output=True, text=True, env=env)


def test_the_generated_module_and_a_program_using_it_pass_mypy_strict(generated):
    pytest.importorskip("mypy")
    checked = mypy(generated, PROGRAM)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The check has teeth: a str where the model says integer is an error.
    wrong = mypy(generated, PROGRAM.replace("novel.pages = 412", 'novel.pages = "many"'))
    assert wrong.returncode == 1 and 'program.py:12: error: Incompatible types in assignment' in wrong.stdout, wrong.stdout


def test_classes_come_before_the_models_first_objects(library):
    ctx = amber.open(None, amber.Model.from_file(MODEL)).context()
    ctx.insert("Book", title="Dune")
    with pytest.raises(amber.MisuseError) as raised:
        ctx.fetch(library.Book)
    assert "Book objects were made already" in str(raised.value)
    assert [book.title for book in ctx.fetch("Book")] == ["Dune"]  # the dynamic API goes on as before
    model = amber.Model.from_file(MODEL).use(library.CLASSES)
    with amber.open(None, model) as store:
        assert isinstance(store.context().insert("Book", title="Dune"), library.Book)  # names give the classes too
