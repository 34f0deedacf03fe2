import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// Relationships in a context: both sides kept in step, faults, saves that
/// link new objects, delete rules and the rules a save checks.
@Suite struct RelationshipContextTests {
    private struct Library {
        let directory = temporaryDirectory()
        let path: String
        let model: Model
        let author, book, person, passport: Entity
        let books, writer, translator, passportOf, holder: Relationship

        init(_ description: ModelDescription = libraryDescription()) throws {
            path = directory.appendingPathComponent("library.amber").path
            model = try Model(description)
            author = try model.entity(named: "Author")
            book = try model.entity(named: "Book")
            person = try model.entity(named: "Person")
            passport = try model.entity(named: "Passport")
            books = try author.relationship(named: "books")
            writer = try book.relationship(named: "author")
            translator = try book.relationship(named: "translator")
            passportOf = try person.relationship(named: "passport")
            holder = try passport.relationship(named: "holder")
        }

        func context() throws -> Context { Context(store: try Store(path: path, model: model)) }

        func insert(_ context: Context, _ entity: Entity, _ name: String) throws -> ManagedObject {
            let object = try context.insert(entity)
            try object.setValue(.string(name), forKey: entity === book ? "title" : entity === passport ? "number" : "name")
            return object
        }

        /// `SELECT sql` on the store's file, each row's columns joined by spaces.
        func rows(_ sql: String) -> [String] {
            var db: OpaquePointer?
            guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return ["cannot open"] }
            defer { sqlite3_close(db) }
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { return ["error: \(sql)"] }
            defer { sqlite3_finalize(statement) }
            var result: [String] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                result.append((0..<sqlite3_column_count(statement)).map {
                    sqlite3_column_type(statement, $0) == SQLITE_NULL ? "NULL" : String(cString: sqlite3_column_text(statement, $0))
                }.joined(separator: " "))
            }
            return result
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }

        /// Tolkien (Hobbit, Silmarillion) and Austen (Emma), new objects pointing at new objects.
        func insertAuthorsAndBooks(_ context: Context) throws {
            for (name, titles) in [("Tolkien", ["Hobbit", "Silmarillion"]), ("Austen", ["Emma"])] {
                let author = try insert(context, self.author, name)
                for title in titles { try insert(context, book, title).setObject(author, for: writer) }
            }
        }
    }

    private func names(_ objects: [ManagedObject]) throws -> [String] {
        try objects.map { (object) throws in
            guard case .string(let text) = try object.value(forKey: object.entity.name == "Book" ? "title" : "name") else { return "?" }
            return text
        }.sorted()
    }

    @Test func settingEitherSideKeepsTheOtherInStep() throws {
        let library = try Library()
        defer { library.remove() }
        let context = try library.context()
        let tolkien = try library.insert(context, library.author, "Tolkien"), austen = try library.insert(context, library.author, "Austen")
        let hobbit = try library.insert(context, library.book, "Hobbit"), emma = try library.insert(context, library.book, "Emma")
        try hobbit.setObject(tolkien, for: library.writer)
        #expect(try tolkien.objects(for: library.books) == [hobbit] && tolkien.count(of: library.books) == 1)
        try tolkien.add(emma, to: library.books)
        #expect(try emma.object(for: library.writer) === tolkien && names(tolkien.objects(for: library.books)) == ["Emma", "Hobbit"])
        // Moving a member: it leaves the old owner's members at once.
        try austen.add(emma, to: library.books)
        #expect(try names(tolkien.objects(for: library.books)) == ["Hobbit"] && austen.objects(for: library.books) == [emma])
        try austen.remove(emma, from: library.books)
        #expect(try emma.object(for: library.writer) == nil && austen.count(of: library.books) == 0)
        try austen.remove(hobbit, from: library.books)  // not a member: nothing happens
        #expect(try hobbit.object(for: library.writer) === tolkien)
        // One-to-one: taking another's partner leaves it with none.
        let ann = try library.insert(context, library.person, "Ann"), bob = try library.insert(context, library.person, "Bob")
        let card = try library.insert(context, library.passport, "P1")
        try ann.setObject(card, for: library.passportOf)
        #expect(try card.object(for: library.holder) === ann)
        try card.setObject(bob, for: library.holder)
        #expect(try ann.object(for: library.passportOf) == nil && bob.object(for: library.passportOf) === card)
    }

    @Test func wrongDestinationsAreRefusedAndChangeNothing() throws {
        let library = try Library()
        defer { library.remove() }
        let context = try library.context(), other = try library.context()
        let tolkien = try library.insert(context, library.author, "Tolkien"), hobbit = try library.insert(context, library.book, "Hobbit")
        let ann = try library.insert(context, library.person, "Ann")
        try hobbit.setObject(tolkien, for: library.writer)
        #expect(amberError { try hobbit.setObject(ann, for: library.writer) }?.description.hasPrefix("Book.author: expected an Author, given amber://") == true)
        let stranger = try library.insert(other, library.author, "Stranger")
        #expect(amberError { try hobbit.setObject(stranger, for: library.writer) }?.description.contains("of another context") == true)
        #expect(amberError { try tolkien.add(ann, to: library.books) }?.description.hasPrefix("Author.books: expected a Book") == true)
        #expect(amberError { _ = try hobbit.objects(for: library.writer) }?.description
            == "Book.author: expected a to-many relationship, given a to-one relationship")
        #expect(amberError { _ = try ann.object(for: library.writer) }?.description.hasPrefix("Book.author is not a relationship of amber://") == true)
        let gone = try library.insert(context, library.author, "Gone")
        try context.delete(gone)
        #expect(amberError { try hobbit.setObject(gone, for: library.writer) }?.description.contains("expected an object that is not deleted") == true)
        #expect(try hobbit.object(for: library.writer) === tolkien && tolkien.objects(for: library.books) == [hobbit])
    }

    @Test func savedLinksReadBackAsFaultsThatAreUniqued() throws {
        let library = try Library()
        defer { library.remove() }
        do {
            let context = try library.context()
            // New objects point at new objects: the save gives them keys first, then writes every row once.
            try library.insertAuthorsAndBooks(context)
            let ann = try library.insert(context, library.person, "Ann"), card = try library.insert(context, library.passport, "P1")
            try card.setObject(ann, for: library.holder)
            try context.save()
            #expect(try ann.object(for: library.passportOf) === card)
        }
        #expect(library.rows("SELECT b.title, a.name FROM Book b JOIN Author a ON a._pk = b.author ORDER BY b.title")
            == ["Emma Austen", "Hobbit Tolkien", "Silmarillion Tolkien"])
        #expect(library.rows("SELECT p.name, c.number, c.holder = p._pk FROM Person p JOIN Passport c ON c._pk = p.passport") == ["Ann P1 1"])
        let context = try library.context()
        let books = try context.fetch("Book", sortedBy: [SortKey("title")])
        let first = try #require(try books[1].object(for: library.writer)), second = try #require(try books[2].object(for: library.writer))
        #expect(first === second && first.isFault)
        #expect(try first.value(forKey: "name") == .string("Tolkien") && !first.isFault)
        #expect(try first.count(of: library.books) == 2 && first.links == nil)  // counted, not loaded
        #expect(try first.objects(for: library.books).map(\.objectID) == [books[1].objectID, books[2].objectID])
        #expect(try first.objects(for: library.books)[0] === books[1])
        // A fetch gives a fault its row.
        let austen = try #require(try books[0].object(for: library.writer))
        #expect(austen.isFault)
        _ = try context.fetch("Author")
        #expect(!austen.isFault)
        #expect(try austen.value(forKey: "name") == .string("Austen"))
    }

    @Test func movesAndCountsSeePendingChanges() throws {
        let library = try Library()
        defer { library.remove() }
        do {
            let context = try library.context()
            let tolkien = try library.insert(context, library.author, "Tolkien")
            _ = try library.insert(context, library.author, "Austen")
            for title in ["A", "B", "C"] { try library.insert(context, library.book, title).setObject(tolkien, for: library.writer) }
            try context.save()
        }
        let context = try library.context()
        let authors = try context.fetch("Author", sortedBy: [SortKey("name")])
        let (austen, tolkien) = (authors[0], authors[1])
        let b = try #require(try context.fetch("Book", where: "title == 'B'").first)
        try b.setObject(austen, for: library.writer)
        let d = try library.insert(context, library.book, "D")
        try d.setObject(tolkien, for: library.writer)
        #expect(try tolkien.count(of: library.books) == 3 && austen.count(of: library.books) == 1)
        #expect(try names(tolkien.objects(for: library.books)) == ["A", "C", "D"])
        let a = try #require(try context.fetch("Book", where: "title == 'A'").first)
        try context.delete(a)  // nullify: it leaves Tolkien's books
        #expect(try names(tolkien.objects(for: library.books)) == ["C", "D"] && tolkien.count(of: library.books) == 2)
        context.rollback()
        #expect(try names(tolkien.objects(for: library.books)) == ["A", "B", "C"] && austen.count(of: library.books) == 0)
        #expect(try b.object(for: library.writer) === tolkien)
    }

    @Test func deleteRulesCascadeNullifyAndDeny() throws {
        let library = try Library()
        defer { library.remove() }
        do {
            let context = try library.context()
            try library.insertAuthorsAndBooks(context)
            let ann = try library.insert(context, library.person, "Ann")
            try ann.setObject(try library.insert(context, library.passport, "P1"), for: library.passportOf)
            try context.save()
        }
        let context = try library.context()
        // Cascade: the author's books go with it, in the same save.
        let tolkien = try #require(try context.fetch("Author", where: "name == 'Tolkien'").first)
        try context.delete(tolkien)
        #expect(context.deletedObjects.count == 3)
        try context.save()
        #expect(library.rows("SELECT title FROM Book") == ["Emma"] && library.rows("SELECT name FROM Author") == ["Austen"])
        // Deny: a passport that still has a holder cannot go; the save keeps every change.
        let card = try #require(try context.fetch("Passport").first)
        try context.delete(card)
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(problems.map(\.description).contains { $0.contains("Passport.holder: has the deny rule and still points at amber://") })
        #expect(problems.first?.rule == .deny && context.deletedObjects == [card])
        context.rollback()
        // Deleting the holder cascades to the passport, whose deny rule then points at nothing left.
        let ann = try #require(try card.object(for: library.holder))
        try context.delete(ann)
        try context.save()
        #expect(library.rows("SELECT count(*) FROM Passport") == ["0"] && library.rows("SELECT count(*) FROM Person") == ["0"])
    }

    /// Objects whose deletion was saved leave the context; their loaded
    /// members (author ↔ books is a cycle) may not keep them alive.
    @Test func deletedObjectsWithLoadedMembersAreReleased() throws {
        let library = try Library()
        defer { library.remove() }
        do {
            let context = try library.context()
            try library.insertAuthorsAndBooks(context)
            try context.save()
        }
        let context = try library.context()
        weak var author: ManagedObject?
        weak var book: ManagedObject?
        try {
            let tolkien = try #require(try context.fetch("Author", where: "name == 'Tolkien'").first)
            let members = try tolkien.objects(forKey: "books")
            #expect(members.count == 2)
            #expect(try members.first?.object(for: library.writer) === tolkien)  // the way back: a cycle
            (author, book) = (tolkien, members.first)
            try context.delete(tolkien)
            try context.save()
        }()
        #expect(author == nil && book == nil)
        #expect(library.rows("SELECT title FROM Book") == ["Emma"])
    }

    @Test func aSaveRefusesBrokenLinks() throws {
        let library = try Library()
        defer { library.remove() }
        let context = try library.context()
        // Required to-one.
        let orphan = try library.insert(context, library.book, "Orphan")
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(problems.map(\.description) == ["\(orphan.objectID): Book.author: is required"])
        // A one-way link to a new object dropped before the save.
        let tolkien = try library.insert(context, library.author, "Tolkien"), ghost = try library.insert(context, library.person, "Ghost")
        try orphan.setObject(tolkien, for: library.writer)
        try orphan.setObject(ghost, for: library.translator)
        try context.delete(ghost)
        guard case .saveFailed(let second) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(second.map(\.description) == ["\(orphan.objectID): Book.translator: points at a new object that is not being saved"])
        // A saved one-way link into a saved object this save deletes.
        let translator = try library.insert(context, library.person, "Translator")
        try orphan.setObject(translator, for: library.translator)
        try context.save()
        try context.delete(translator)
        guard case .saveFailed(let third) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(third.map(\.description) == ["\(orphan.objectID): Book.translator: points at \(translator.objectID), which this save deletes"])
        try orphan.setObject(nil, for: library.translator)
        try context.save()
        #expect(library.rows("SELECT translator FROM Book") == ["NULL"] && library.rows("SELECT count(*) FROM Person") == ["0"])
    }

    @Test func countsAreCheckedAtSave() throws {
        var description = libraryDescription()
        description.entities[0].relationships[0] = description.entities[0].relationships[0].count(2...3).deleteRule(.nullify)
        description.entities[1].relationships[0] = description.entities[1].relationships[0].optional()
        let library = try Library(description)
        defer { library.remove() }
        let context = try library.context()
        // As in Core Data, an optional relationship may be empty whatever its minimum.
        let tolkien = try library.insert(context, library.author, "Tolkien")
        try context.save()
        try tolkien.add(try library.insert(context, library.book, "A"), to: library.books)
        guard case .saveFailed(let few) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(few.map(\.description) == ["\(tolkien.objectID): Author.books: has 1 member, fewer than its minimum of 2"])
        for title in ["B", "C", "D"] { try tolkien.add(try library.insert(context, library.book, title), to: library.books) }
        guard case .saveFailed(let many) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(many.map(\.description) == ["\(tolkien.objectID): Author.books: has 4 members, more than its maximum of 3"])
        try tolkien.remove(try tolkien.objects(for: library.books)[0], from: library.books)
        try context.save()
        #expect(library.rows("SELECT count(*) FROM Book WHERE author IS NOT NULL") == ["3"])
        // A required one must have its minimum, empty or not.
        var required = libraryDescription()
        required.entities[0].relationships[0] = required.entities[0].relationships[0].count(2...3).required().deleteRule(.nullify)
        required.entities[1].relationships[0] = required.entities[1].relationships[0].optional()
        let strict = try Library(required)
        defer { strict.remove() }
        let other = try strict.context()
        let lewis = try strict.insert(other, strict.author, "Lewis")
        guard case .saveFailed(let none) = amberError({ try other.save() }) else { Issue.record("expected a failed save"); return }
        #expect(none.map(\.description) == ["\(lewis.objectID): Author.books: has 0 members, fewer than its minimum of 2"])
    }

    @Test func manyToManyOrderedSelfAndOneWayLinksRoundTrip() throws {
        let library = try Library()
        defer { library.remove() }
        let tags = try library.book.relationship(named: "tags"), tagged = try library.model.entity(named: "Tag").relationship(named: "books")
        let following = try library.person.relationship(named: "following"), followers = try library.person.relationship(named: "followers")
        let shelfBooks = try library.model.entity(named: "Shelf").relationship(named: "books")
        do {
            let context = try library.context()
            let tolkien = try library.insert(context, library.author, "Tolkien")
            let hobbit = try library.insert(context, library.book, "Hobbit"), emma = try library.insert(context, library.book, "Emma")
            for book in [hobbit, emma] { try book.setObject(tolkien, for: library.writer) }
            let fantasy = try context.insert("Tag"), classic = try context.insert("Tag")
            try fantasy.setValue(.string("fantasy"), forKey: "label")
            try classic.setValue(.string("classic"), forKey: "label")
            try hobbit.add(fantasy, to: tags)
            try hobbit.add(classic, to: tags)
            try classic.add(emma, to: tagged)  // from the other side
            try hobbit.add(fantasy, to: tags)  // already a member: nothing changes
            #expect(try hobbit.objects(for: tags) == [fantasy, classic] && fantasy.objects(for: tagged) == [hobbit])
            #expect(try Set(classic.objects(for: tagged)) == [hobbit, emma] && emma.objects(for: tags) == [classic])
            let ann = try library.insert(context, library.person, "Ann"), bob = try library.insert(context, library.person, "Bob")
            try ann.add(bob, to: following)
            #expect(try bob.objects(for: followers) == [ann] && ann.objects(for: followers).isEmpty)
            let shelf = try context.insert("Shelf")
            try shelf.add(emma, to: shelfBooks)
            try shelf.add(hobbit, to: shelfBooks)
            try context.save()
        }
        #expect(library.rows(#"SELECT b.title, t.label, j.source_order FROM "_amber_Book.tags" j JOIN Book b ON b._pk = j.source JOIN Tag t ON t._pk = j.target ORDER BY 1, 3"#)
            == ["Emma classic 0", "Hobbit fantasy 0", "Hobbit classic 1"])
        #expect(library.rows(#"SELECT a.name, b.name FROM "_amber_Person.followers" j JOIN Person a ON a._pk = j.target JOIN Person b ON b._pk = j.source"#)
            == ["Ann Bob"])
        let context = try library.context()
        let hobbit = try #require(try context.fetch("Book", where: "title == 'Hobbit'").first)
        let labels = { (book: ManagedObject) throws -> [Value] in try book.objects(for: tags).map { try $0.value(forKey: "label") } }
        #expect(try labels(hobbit) == [.string("fantasy"), .string("classic")])
        let shelf = try #require(try context.fetch("Shelf").first)
        #expect(try shelf.objects(for: shelfBooks).map { try $0.value(forKey: "title") } == [.string("Emma"), .string("Hobbit")])
        #expect(try shelf.count(of: shelfBooks) == 2)
        // Reordering an ordered relationship: remove and add again puts it last.
        let fantasy = try hobbit.objects(for: tags)[0]
        try hobbit.remove(fantasy, from: tags)
        try hobbit.add(fantasy, to: tags)
        #expect(try fantasy.count(of: tagged) == 1)
        // Deleting a tag takes it out of every book's tags (nullify) and out of the join table.
        let classic = try hobbit.objects(for: tags)[0]
        try context.delete(classic)
        #expect(try labels(hobbit) == [.string("fantasy")])
        try context.save()
        #expect(library.rows(#"SELECT count(*) FROM "_amber_Book.tags""#) == ["1"])
        let fresh = try library.context()
        #expect(try labels(try #require(try fresh.fetch("Book", where: "title == 'Hobbit'").first)) == [.string("fantasy")])
        // An object whose context went away has no relationships to follow.
        let stray = try #require(try library.context().fetch("Book", where: "title == 'Hobbit'").first)
        #expect(amberError { _ = try stray.objects(for: tags) }?.description.contains("belongs to no context") == true)
        #expect(amberError { _ = try stray.object(for: library.writer) }?.description.contains("belongs to no context") == true)
        // A one-way to-many that still lists a deleted book refuses the save; removing it first lets it through.
        let emma = try #require(try context.fetch("Book", where: "title == 'Emma'").first)
        try context.delete(emma)
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(problems.map(\.description) == ["\(shelf.objectID): Shelf.books: still lists \(emma.objectID), which this save deletes"])
        context.rollback()
        try shelf.remove(emma, from: shelfBooks)
        try context.delete(emma)
        try context.save()
        #expect(library.rows(#"SELECT count(*) FROM "_amber_Shelf.books""#) == ["1"])
        let bob = try #require(try context.fetch("Person", where: "name == 'Bob'").first)
        try context.delete(bob)
        try context.save()
        #expect(library.rows(#"SELECT count(*) FROM "_amber_Person.followers""#) == ["0"])
    }

    /// SQLite layout, not behaviour (the store suite's
    /// `randomGraphOperationsMatchAPlainReference` holds that on every store):
    /// a to-one is a column of the source's row holding the destination's
    /// key, a many-to-many link is one row of the join table whichever side
    /// made it, and moving, unlinking or deleting changes exactly those rows.
    @Test func linksAreAColumnAndJoinTableRowsInTheFile() throws {
        var description = libraryDescription()
        description.entities[1].relationships[0] = description.entities[1].relationships[0].optional()
        let library = try Library(description)
        defer { library.remove() }
        let tags = try library.book.relationship(named: "tags"), tagEntity = try library.model.entity(named: "Tag")
        let tagged = try tagEntity.relationship(named: "books")
        let context = try library.context()
        let tolkien = try library.insert(context, library.author, "Tolkien"), austen = try library.insert(context, library.author, "Austen")
        let hobbit = try library.insert(context, library.book, "Hobbit"), emma = try library.insert(context, library.book, "Emma")
        let silmarillion = try library.insert(context, library.book, "Silmarillion")
        let fantasy = try context.insert(tagEntity), classic = try context.insert(tagEntity)
        try fantasy.setValue("fantasy", forKey: "label")
        try classic.setValue("classic", forKey: "label")
        try hobbit.setObject(tolkien, for: library.writer)
        try austen.add(emma, to: library.books)
        try hobbit.add(fantasy, to: tags)
        try classic.add(hobbit, to: tagged)
        try classic.add(emma, to: tagged)
        try context.save()
        func authors() -> [String] {
            library.rows(#"SELECT b.title, coalesce(a.name, '-') FROM Book b LEFT JOIN Author a ON a._pk = b.author ORDER BY 1"#)
        }
        func links() -> [String] {
            library.rows(#"SELECT b.title, t.label FROM "_amber_Book.tags" j JOIN Book b ON b._pk = j.source JOIN Tag t ON t._pk = j.target ORDER BY 1, 2"#)
        }
        #expect(authors() == ["Emma Austen", "Hobbit Tolkien", "Silmarillion -"])
        #expect(links() == ["Emma classic", "Hobbit classic", "Hobbit fantasy"])
        // A move from the to-many side, a to-one cleared, an unlink from the tag's side, a link, a linked book deleted.
        try tolkien.add(silmarillion, to: library.books)
        try emma.setObject(nil, for: library.writer)
        try fantasy.remove(hobbit, from: tagged)
        try silmarillion.add(fantasy, to: tags)
        try context.delete(hobbit)
        try context.save()
        #expect(authors() == ["Emma -", "Silmarillion Tolkien"])
        #expect(links() == ["Emma classic", "Silmarillion fantasy"])
        #expect(library.rows(#"SELECT count(*) FROM "_amber_Book.tags""#) == ["2"])
    }

    /// Counted statements, not timings: a prefetch reads each relationship of
    /// a fetch in one query, and a fault fires once.
    @Test func prefetchReadsEachRelationshipInOneQueryAndFaultsFireOnce() throws {
        let library = try Library()
        defer { library.remove() }
        let tags = try library.book.relationship(named: "tags")
        do {
            let context = try library.context()
            let labels = try (0..<4).map { (index) throws -> ManagedObject in
                let tag = try context.insert("Tag")
                try tag.setValue(.string("t\(index)"), forKey: "label")
                return tag
            }
            for a in 0..<20 {
                let author = try library.insert(context, library.author, "A\(a)")
                for b in 0..<5 {
                    let book = try library.insert(context, library.book, "A\(a)B\(b)")
                    try book.setObject(author, for: library.writer)
                    try book.add(labels[(a + b) % 4], to: tags)
                }
            }
            try context.save()
        }
        let context = try library.context()
        let store = context.store
        var before = store.statementCount
        let books = try context.fetch(FetchRequest("Book", prefetching: ["author"]))
        #expect(store.statementCount - before == 2 && books.count == 100)
        before = store.statementCount
        let names = try Set(books.map { try #require(try $0.object(for: library.writer)).value(forKey: "name") })
        #expect(names.count == 20 && store.statementCount == before)

        before = store.statementCount
        let authors = try context.fetch(FetchRequest("Author", prefetching: ["books", "books.tags"]))
        #expect(store.statementCount - before <= 4)
        before = store.statementCount
        var links = 0
        for author in authors {
            #expect(try author.count(of: library.books) == 5)
            for book in try author.objects(for: library.books) { links += try book.objects(for: tags).count }
        }
        #expect(links == 100 && store.statementCount == before)

        // Without a prefetch, each author is a fault read once, however often it is read.
        let fresh = try library.context()
        let plain = try fresh.fetch(FetchRequest("Book"))
        before = fresh.store.statementCount
        for _ in 0..<3 { for book in plain { _ = try book.object(for: library.writer)?.value(forKey: "name") } }
        #expect(fresh.store.statementCount - before == 20)
        #expect(amberError { _ = try fresh.fetch(FetchRequest("Book", prefetching: ["autor"])) }?.description
            == "Book.autor: no such relationship; did you mean author?")
    }

    /// A prefetch from every author reads the books in one pass over their
    /// table and groups them here; from some authors it looks each one's
    /// books up. Both must give each author exactly the books that point at
    /// it as this context has them: checked against the books themselves on
    /// a random graph with unsaved moves, inserts and deletions.
    @Test func prefetchedMembersAreTheBooksThatPointAtEachAuthor() throws {
        let library = try Library()
        defer { library.remove() }
        var random = SplitMix64(seed: 12)
        do {
            let context = try library.context()
            let authors = try (0..<40).map { try library.insert(context, library.author, "A\($0)") }
            for index in 0..<400 {
                let book = try library.insert(context, library.book, "B\(index)")
                try book.setObject(authors[Int(random.next() % 40)], for: library.writer)
            }
            try context.save()
        }
        for round in 0..<6 {
            let context = try library.context()
            let books = try context.fetch(FetchRequest("Book"))
            var every = try context.fetch(FetchRequest("Author"))
            for book in books where random.next() % 5 == 0 {
                try book.setObject(every[Int(random.next() % UInt64(every.count))], for: library.writer)
            }
            let added = try (0..<10).map { (index) throws -> ManagedObject in
                let book = try library.insert(context, library.book, "new \(round).\(index)")
                try book.setObject(every[Int(random.next() % UInt64(every.count))], for: library.writer)
                return book
            }
            for book in books where random.next() % 20 == 0 { try context.delete(book) }
            // Odd rounds load some authors' books by key first; the prefetch of every author then reads the rest.
            let some = round % 2 == 0 ? []
                : try context.fetch(FetchRequest("Author", predicate: try FetchPredicate("name BEGINSWITH 'A1'"), prefetching: ["books"]))
            every = try context.fetch(FetchRequest("Author", prefetching: ["books"]))
            #expect(every.count == 40 && some.count == (round % 2 == 0 ? 0 : 11))
            for author in every {
                let expected = try (books + added).filter { try !$0.deletedFlag && $0.object(for: library.writer) === author }
                let members = try author.objects(for: library.books)
                let name = try author.value(forKey: "name")
                #expect(Set(members.map(ObjectIdentifier.init)) == Set(expected.map(ObjectIdentifier.init)) && members.count == expected.count,
                        "round \(round), \(name)")
            }
            try context.save()
        }
    }

    @Test func setObjectsReplacesAndReordersAllOrNothing() throws {
        let library = try Library()
        defer { library.remove() }
        let tags = try library.book.relationship(named: "tags")
        let labels = { (book: ManagedObject) throws -> [Value] in try book.objects(for: tags).map { try $0.value(forKey: "label") } }
        do {
            let context = try library.context()
            let tolkien = try library.insert(context, library.author, "Tolkien")
            let hobbit = try library.insert(context, library.book, "Hobbit")
            try hobbit.setObject(tolkien, for: library.writer)
            let made = try ["a", "b", "c"].map { (label) throws -> ManagedObject in
                let tag = try context.insert("Tag")
                try tag.setValue(.string(label), forKey: "label")
                return tag
            }
            try hobbit.setObjects(made, for: tags)
            try context.save()
            try hobbit.setObjects([made[2], made[0]], for: tags)   // reorder and drop one
            #expect(try labels(hobbit) == [.string("c"), .string("a")])
            #expect(amberError { try hobbit.setObjects([made[0], made[0]], for: tags) }?.description.contains("each object once") == true)
            #expect(amberError { try hobbit.setObjects([made[1], tolkien], for: tags) }?.description.hasPrefix("Book.tags: expected a Tag") == true)
            #expect(try labels(hobbit) == [.string("c"), .string("a")])  // the refused calls changed nothing
            // On a to-many whose inverse is a to-one, members move.
            let austen = try library.insert(context, library.author, "Austen")
            try austen.setObjects([hobbit], forKey: "books")
            #expect(try hobbit.object(for: library.writer) === austen && tolkien.count(of: library.books) == 0)
            try context.save()
        }
        let context = try library.context()
        let hobbit = try #require(try context.fetch("Book").first)
        #expect(try labels(hobbit) == [.string("c"), .string("a")])
        #expect(library.rows(#"SELECT t.label, j.source_order FROM "_amber_Book.tags" j JOIN Tag t ON t._pk = j.target ORDER BY 2"#)
            == ["c 0", "a 1"])
    }

    /// An ordered to-many whose inverse is a to-one keeps its order in the members' table.
    @Test func orderedOneToManyKeepsItsOrder() throws {
        var description = libraryDescription()
        description.entities[0].relationships[0] = description.entities[0].relationships[0].ordered()
        let library = try Library(description)
        defer { library.remove() }
        let titles = { (author: ManagedObject) throws -> [Value] in try author.objects(for: library.books).map { try $0.value(forKey: "title") } }
        do {
            let context = try library.context()
            let tolkien = try library.insert(context, library.author, "Tolkien")
            for title in ["C", "A", "B"] { try tolkien.add(try library.insert(context, library.book, title), to: library.books) }
            try context.save()
            #expect(try titles(tolkien) == [.string("C"), .string("A"), .string("B")])
        }
        #expect(library.rows("SELECT title, _order_author FROM Book ORDER BY _order_author") == ["C 0", "A 1", "B 2"])
        let context = try library.context()
        let tolkien = try #require(try context.fetch("Author").first)
        #expect(try titles(tolkien) == [.string("C"), .string("A"), .string("B")])
        let members = try tolkien.objects(for: library.books)
        try tolkien.setObjects([members[2], members[0], members[1]], for: library.books)
        try context.save()
        let fresh = try library.context()
        let again = try #require(try fresh.fetch("Author").first)
        #expect(try titles(again) == [.string("B"), .string("C"), .string("A")])
    }

    /// Cascades through a cycle (a ring of one-to-ones that cascade both ways) delete each object once and stop.
    @Test func cascadesThroughCyclesEnd() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Node") {
                Attribute.integer32("number")
                Relationship.toOne("next", "Node", inverse: "previous").deleteRule(.cascade)
                Relationship.toOne("previous", "Node", inverse: "next").deleteRule(.cascade)
                Relationship.toMany("children", "Node", inverse: "parent").deleteRule(.cascade)
                Relationship.toOne("parent", "Node", inverse: "children")
            }
        })
        let context = Context(store: try Store.inMemory(model: model))
        let ring = try (0..<5).map { (number) throws -> ManagedObject in
            let node = try context.insert("Node")
            try node.setValue(.int(Int64(number)), forKey: "number")
            return node
        }
        for (index, node) in ring.enumerated() { try node.setObject(ring[(index + 1) % ring.count], forKey: "next") }
        #expect(try ring[2].object(forKey: "previous") === ring[1] && ring[0].object(forKey: "previous") === ring[4])
        // A deep chain of children, to show the cascade is not recursive.
        var parent = ring[0]
        for number in 5..<2005 {
            let child = try context.insert("Node")
            try child.setValue(.int(Int64(number)), forKey: "number")
            try child.setObject(parent, forKey: "parent")
            parent = child
        }
        try context.save()
        try context.delete(ring[3])
        #expect(context.deletedObjects.count == 2005)
        try context.save()
        #expect(try context.count(FetchRequest("Node")) == 0)
    }
}
