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
        #expect(amberError { try hobbit.setObject(ann, for: library.writer) }?.description.hasPrefix("Book.author: expected a Author, given amber://") == true)
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
            for (name, titles) in [("Tolkien", ["Hobbit", "Silmarillion"]), ("Austen", ["Emma"])] {
                let author = try library.insert(context, library.author, name)
                for title in titles { try library.insert(context, library.book, title).setObject(author, for: library.writer) }
            }
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
            for (name, titles) in [("Tolkien", ["Hobbit", "Silmarillion"]), ("Austen", ["Emma"])] {
                let author = try library.insert(context, library.author, name)
                for title in titles { try library.insert(context, library.book, title).setObject(author, for: library.writer) }
            }
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
        description.entities[0].relationships[0] = description.entities[0].relationships[0].count(1...2).deleteRule(.nullify)
        description.entities[1].relationships[0] = description.entities[1].relationships[0].optional()
        let library = try Library(description)
        defer { library.remove() }
        let context = try library.context()
        let tolkien = try library.insert(context, library.author, "Tolkien")
        guard case .saveFailed(let few) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(few.map(\.description) == ["\(tolkien.objectID): Author.books: has 0 members, fewer than its minimum of 1"])
        for title in ["A", "B", "C"] { try tolkien.add(try library.insert(context, library.book, title), to: library.books) }
        guard case .saveFailed(let many) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(many.map(\.description) == ["\(tolkien.objectID): Author.books: has 3 members, more than its maximum of 2"])
        try tolkien.remove(try tolkien.objects(for: library.books)[0], from: library.books)
        try context.save()
        #expect(library.rows("SELECT count(*) FROM Book WHERE author IS NOT NULL") == ["2"])
    }
}
