import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// Derived attributes: computed by the store at save from the object, its
/// to-one destinations and its to-many members, read-only to callers.
@Suite("Derived attributes") struct DerivedAttributeTests {
    static func description() -> ModelDescription {
        ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Attribute.integer64("bookCount").derived("books.@count")
                Attribute.integer64("pageTotal").derived("books.@sum.pages")
                Attribute.double("priceTotal").derived("books.@sum.price")
                Attribute.double("averagePrice").derived("books.@avg.price")
                Attribute.date("firstPublished").derived("books.@min.published")
                Attribute.integer64("longest").derived("books.@max.pages")
                Attribute.date("touched").derived("now()")
                Relationship.toMany("books", "Book", inverse: "author")
                Relationship.toOne("mentor", "Author", inverse: "mentees")
                Relationship.toMany("mentees", "Author", inverse: "mentor")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.string("canonicalTitle").derived("canonical:(title)").indexed()
                Attribute.string("lowerTitle").derived("lowercase:(title)")
                Attribute.string("upperTitle").derived("uppercase:(title)")
                Attribute.integer64("pages")
                Attribute.double("price")
                Attribute.date("published")
                Attribute.string("authorName").derived("author.name")
                Attribute.string("mentorName").derived("author.mentor.name")
                Attribute.integer64("tagCount").derived("tags.@count")
                Relationship.toOne("author", "Author", inverse: "books")
                Relationship.toMany("tags", "Tag", inverse: "books")
            }
            EntityDescription("Tag") {
                Attribute.string("label")
                Attribute.integer64("bookCount").derived("books.@count")
                Relationship.toMany("books", "Book", inverse: "tags")
            }
        }
    }

    static let titles = [
        "Cien años de soledad", "CIEN AÑOS", "Ἡ Ὀδύσσεια", "ὀδύσσεια", "Война и мир", "ВОЙНА", "İstanbul Hatırası", "istanbul",
        "Straße der Ölsucher", "STRASSE", "Tiếng Việt có dấu", "tieng viet", "吾輩は猫である", "ノルウェイの森", "ألف ليلة وليلة",
        "ספר הזוהר", "Ça m'est égal", "ca m'est egal", "Crème brûlée", "CREME BRULEE", "e\u{301}te\u{301}", "ÉTÉ", "Æsop's ﬁbles",
        "Ǆemal", "ǅemal", "ǆemal", "Øresund", "øresund", "Łódź", "LODZ", "Ελληνικά ΣΟΦΙΑ", "σοφια", "🙂 smile", "Zürich", "zurich",
    ]

    @Test("canonical: agrees with CONTAINS[cd] on titles in many scripts; lowercase: and uppercase: are Swift's")
    func canonicalAgreesWithFoldedSearch() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = Context(store: try Store(path: directory.appendingPathComponent("d.amber").path, model: try Model(Self.description())))
        for title in Self.titles { try context.insert("Book").setValue(.string(title), forKey: "title") }
        try context.save()
        for book in try context.fetch("Book") {
            guard case .string(let title) = try book.value(forKey: "title") else { throw AmberError.notAStore(path: "", reason: "no title") }
            #expect(try book.value(forKey: "canonicalTitle") == .string(title.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)))
            #expect(try book.value(forKey: "lowerTitle") == .string(title.lowercased()))
            #expect(try book.value(forKey: "upperTitle") == .string(title.uppercased()))
        }
        // Every title, and pieces of it, as the searched-for text.
        var queries = Set(Self.titles)
        for title in Self.titles {
            let characters = Array(title)
            for start in stride(from: 0, to: characters.count, by: 3) { queries.insert(String(characters[start..<min(start + 4, characters.count)])) }
        }
        let books = try context.fetch("Book")
        let stored = try books.map { book -> Data in if case .string(let text) = try book.value(forKey: "canonicalTitle") { Data(text.utf8) } else { Data() } }
        for query in queries.sorted() {
            // The slow path, folding every row's title, is the reference for [cd].
            let folded = try context.fetch("Book", where: "canonicalTitle CONTAINS[cd] %@", .string(query))
            let plain = try context.fetch("Book", where: "title CONTAINS[cd] %@", .string(query))
            #expect(Set(folded.map(ObjectIdentifier.init)) == Set(plain.map(ObjectIdentifier.init)), "\(query)")
            // One option: the column is already folded, so only the query is (bytes compared, as SQLite's instr does).
            for (options, fold) in [("[c]", String.CompareOptions.caseInsensitive), ("[d]", .diacriticInsensitive)] {
                let needle = Data(query.folding(options: fold, locale: nil).utf8)
                let expected = books.indices.filter { needle.isEmpty || stored[$0].range(of: needle) != nil }.map { ObjectIdentifier(books[$0]) }
                let found = try context.fetch("Book", where: "canonicalTitle CONTAINS\(options) %@", .string(query))
                #expect(Set(found.map(ObjectIdentifier.init)) == Set(expected), "\(options) \(query)")
            }
        }
    }

    @Test("aggregates, key paths and now() follow inserts, deletes, moves and links (random operations, fixed seed)",
          arguments: StoreKind.allCases)
    func aggregatesFollowTheGraph(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Model(Self.description()))
        defer { cleanup() }
        let here = Context(store: store), there = Context(store: store)
        var random = SplitMix64(seed: 15)
        let base = Date(timeIntervalSinceReferenceDate: 700_000_000)
        var serial = 0
        for name in ["Ada", "Borges", "Calvino", "Duras"] { try here.insert("Author").setValue(.string(name), forKey: "name") }
        for label in ["red", "green"] { try here.insert("Tag").setValue(.string(label), forKey: "label") }
        try here.save()
        let started = Date()
        for step in 0..<120 {
            let context = step % 3 == 2 ? there : here
            let authors = try context.fetch("Author"), books = try context.fetch("Book"), tags = try context.fetch("Tag")
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let live = books.filter { !$0.isDeleted }
                switch Int.random(in: 0..<9, using: &random) {
                case 0, 1:
                    serial += 1
                    let book = try context.insert("Book")
                    try book.setValue(.string("Book \(serial)"), forKey: "title")
                    try book.setValue(.int(Int64.random(in: 1...900, using: &random)), forKey: "pages")
                    try book.setValue(Bool.random(using: &random) ? .double(Double(Int.random(in: 1...4000, using: &random)) / 100) : .null, forKey: "price")
                    try book.setValue(.date(base.addingTimeInterval(Double(Int.random(in: 0...1000, using: &random)) * 86_400)), forKey: "published")
                    try book.setObject(authors.randomElement(using: &random), forKey: "author")
                case 2:
                    if let book = live.randomElement(using: &random) { try context.delete(book) }
                case 3:
                    try live.randomElement(using: &random)?.setObject(authors.randomElement(using: &random), forKey: "author")
                case 4:
                    try live.randomElement(using: &random)?.setValue(.int(Int64.random(in: 1...900, using: &random)), forKey: "pages")
                case 5:
                    try live.randomElement(using: &random)?.setObject(nil, forKey: "author")
                case 6:
                    if let book = live.randomElement(using: &random), let tag = tags.randomElement(using: &random) {
                        if try book.objects(forKey: "tags").contains(where: { $0 === tag }) {
                            try book.remove(tag, from: book.entity.relationship(named: "tags"))
                        } else {
                            try book.add(tag, to: book.entity.relationship(named: "tags"))
                        }
                    }
                case 7:
                    if let author = authors.randomElement(using: &random) {
                        serial += 1
                        try author.setValue(.string("Name \(serial)"), forKey: "name")
                    }
                default:
                    if let author = authors.randomElement(using: &random) {
                        try author.setObject(authors.filter { $0 !== author }.randomElement(using: &random), forKey: "mentor")
                    }
                }
            }
            try context.save()
            try here.mergeSavedChanges()
            try check(here)
        }
        // Values held by the context agree with a fresh read, and a fetch can test and sort by them.
        let fresh = Context(store: store)
        try check(fresh)
        let busy = try fresh.fetch("Author", where: "bookCount >= 2", sortedBy: [.descending("pageTotal")])
        let counted = try fresh.fetch("Author").filter { try $0.objects(forKey: "books").count >= 2 }
        #expect(Set(busy.map(ObjectIdentifier.init)) == Set(counted.map(ObjectIdentifier.init)))
        let totals = try busy.map { try $0.value(forKey: "pageTotal") }
        #expect(totals == totals.sorted { if case .int(let a) = $0, case .int(let b) = $1 { a > b } else { false } })
        for author in try fresh.fetch("Author") {
            guard case .date(let touched) = try author.value(forKey: "touched") else {
                Issue.record("\(author) has no touched date")
                continue
            }
            #expect(touched >= started.addingTimeInterval(-1) && touched <= Date())
        }
    }

    /// Every derived value equals what the graph in memory says.
    private func check(_ context: Context) throws {
        for author in try context.fetch("Author") {
            let books = try author.objects(forKey: "books")
            let pages = try books.map { book -> Int64 in if case .int(let n) = try book.value(forKey: "pages") { n } else { 0 } }
            let prices = try books.compactMap { book -> Double? in if case .double(let p) = try book.value(forKey: "price") { p } else { nil } }
            let dates = try books.compactMap { book -> Date? in if case .date(let d) = try book.value(forKey: "published") { d } else { nil } }
            let place = "\(try author.value(forKey: "name"))"
            #expect(try author.value(forKey: "bookCount") == .int(Int64(books.count)), "\(place)")
            #expect(try author.value(forKey: "pageTotal") == .int(pages.reduce(0, +)), "\(place)")
            #expect(try author.value(forKey: "longest") == (pages.max().map { .int($0) } ?? .null), "\(place)")
            #expect(try author.value(forKey: "firstPublished") == (dates.min().map { .date($0) } ?? .null), "\(place)")
            guard case .double(let total) = try author.value(forKey: "priceTotal") else {
                Issue.record("\(place): no price total")
                continue
            }
            #expect(abs(total - prices.reduce(0, +)) < 1e-9, "\(place)")
            if prices.isEmpty {
                #expect(try author.value(forKey: "averagePrice") == .null)
            } else if case .double(let average) = try author.value(forKey: "averagePrice") {
                #expect(abs(average - prices.reduce(0, +) / Double(prices.count)) < 1e-9, "\(place)")
            }
        }
        for book in try context.fetch("Book") {
            let author = try book.object(forKey: "author")
            #expect(try book.value(forKey: "authorName") == (author.map { try $0.value(forKey: "name") } ?? .null))
            let mentor = try author?.object(forKey: "mentor")
            #expect(try book.value(forKey: "mentorName") == (mentor.map { try $0.value(forKey: "name") } ?? .null))
            #expect(try book.value(forKey: "tagCount") == .int(Int64(try book.objects(forKey: "tags").count)))
        }
        for tag in try context.fetch("Tag") {
            #expect(try tag.value(forKey: "bookCount") == .int(Int64(try tag.objects(forKey: "books").count)))
        }
    }

    @Test("a derived attribute is read-only; the saved report lists the derived keys that moved, on objects not saved too",
          arguments: StoreKind.allCases)
    func readOnlyAndReported(kind: StoreKind) throws {
        let model = try Model(Self.description())
        let (store, cleanup) = try kind.open(model)
        defer { cleanup() }
        let context = Context(store: store)
        let author = try context.insert("Author")
        try author.setValue(.string("Ada"), forKey: "name")
        #expect(throws: AmberError.self) { try author.setValue(.int(3), forKey: "bookCount") }
        do {
            try author.setValue(.int(3), forKey: "bookCount")
        } catch {
            #expect("\(error)".contains("Author.bookCount") && "\(error)".contains("books.@count"))
        }
        let book = try model.entity(named: "Book")
        #expect(throws: AmberError.self) {
            try context.insert(book, setting: [try book.attribute(named: "canonicalTitle")], to: [.string("x")])
        }
        try context.save()
        #expect(try author.value(forKey: "bookCount") == .int(0))
        var reports: [ChangeReport] = []
        context.addObserver { reports.append($0) }
        let novel = try context.insert("Book")
        try novel.setValue(.string("Émile"), forKey: "title")
        try novel.setObject(author, forKey: "author")
        try context.save()
        #expect(try novel.value(forKey: "canonicalTitle") == .string("emile") && novel.hasChanges == false)
        #expect(try author.value(forKey: "bookCount") == .int(1) && author.hasChanges == false)
        let updated = reports.last?.updated.first { $0.object === author }
        #expect(updated?.keys.contains("bookCount") == true && updated?.keys.contains("touched") == true)
        // Saving again works: the versions the triggers moved were read back.
        try author.setValue(.string("Ada L."), forKey: "name")
        try context.save()
        #expect(try novel.value(forKey: "authorName") == .string("Ada L."))
        // A store opened again keeps its derived values (SQLite makes its triggers again; PostgreSQL's are the schema's).
        guard let again = try kind.reopen(store, model: model) else { return }
        let reopened = Context(store: again)
        let second = try reopened.insert("Book")
        try second.setValue(.string("ÉTÉ"), forKey: "title")
        try second.setObject(try reopened.fetch("Author")[0], forKey: "author")
        try reopened.save()
        #expect(try second.value(forKey: "canonicalTitle") == .string("ete"))
        #expect(try reopened.fetch("Author")[0].value(forKey: "bookCount") == .int(2))
    }

    /// Two now() attributes on one row: each is set at insert and moves
    /// with every other change, and neither sets off the other without end
    /// (PostgreSQL's triggers fire again for a trigger's own updates).
    @Test("two now() attributes on one row keep time and do not set each other off", arguments: StoreKind.allCases)
    func twoNowAttributes(kind: StoreKind) throws {
        let model = try Model(ModelDescription {
            EntityDescription("Note") {
                Attribute.string("text")
                Attribute.date("modified").derived("now()")
                Attribute.date("touched").derived("now()")
                Attribute.string("copy").derived("text")
            }
        })
        let (store, cleanup) = try kind.open(model)
        defer { cleanup() }
        let context = Context(store: store)
        let note = try context.insert("Note")
        try note.setValue("first", forKey: "text")
        try context.save()
        let before = try [note.value(forKey: "modified"), note.value(forKey: "touched")]
        #expect(before.allSatisfy { if case .date = $0 { true } else { false } }, "\(kind): \(before)")
        usleep(2_000)
        try note.setValue("second", forKey: "text")
        try context.save()
        #expect(try note.value(forKey: "copy") == "second", "\(kind)")
        let after = try [note.value(forKey: "modified"), note.value(forKey: "touched")]
        for (old, new) in zip(before, after) {
            guard case .date(let was) = old, case .date(let now) = new else { Issue.record("\(kind): no dates"); continue }
            #expect(now > was, "\(kind): \(was) then \(now)")
        }
    }

    @Test("a destination inserted after its source in the same save is read; overwrite keeps the store's derived values; the expression is part of the model hash")
    func orderPoliciesAndHash() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("d.amber").path
        let model = try Model(Self.description())
        let store = try Store(path: path, model: model)
        let here = Context(store: store), there = Context(store: store)
        let book = try here.insert("Book")
        try book.setValue(.string("First"), forKey: "title")
        let author = try here.insert("Author"), mentor = try here.insert("Author")
        try author.setValue(.string("Ada"), forKey: "name")
        try mentor.setValue(.string("Grace"), forKey: "name")
        try book.setObject(author, forKey: "author")
        try author.setObject(mentor, forKey: "mentor")
        try here.save()
        #expect(try book.value(forKey: "authorName") == .string("Ada") && book.value(forKey: "mentorName") == .string("Grace"))
        // Another context adds a book; this one renames the author with .overwrite, holding the old count.
        let theirs = try there.fetch("Author", where: "name == 'Ada'")[0]
        let second = try there.insert("Book")
        try second.setValue(.string("Second"), forKey: "title")
        try second.setObject(theirs, forKey: "author")
        try there.save()
        here.mergePolicy = .overwrite
        try author.setValue(.string("Ada L."), forKey: "name")
        try here.save()
        #expect(try author.value(forKey: "bookCount") == .int(2))
        #expect(try Context(store: store).fetch("Author", where: "name == 'Ada L.'")[0].value(forKey: "bookCount") == .int(2))
        // Another expression is another model: without migration the store says so; with it, every value is computed anew.
        var changed = Self.description()
        if let index = changed.entities.firstIndex(where: { $0.name == "Book" }),
           let slot = changed.entities[index].attributes.firstIndex(where: { $0.name == "lowerTitle" })
        {
            changed.entities[index].attributes[slot].derivation = "uppercase:(title)"
        }
        var strict = Store.Options()
        strict.migratesStore = false
        #expect(throws: AmberError.self) { _ = try Store(path: path, model: try Model(changed), options: strict) }
        let migrated = Context(store: try Store(path: path, model: try Model(changed)))
        for book in try migrated.fetch("Book") {
            guard case .string(let title) = try book.value(forKey: "title") else { continue }
            #expect(try book.value(forKey: "lowerTitle") == .string(title.uppercased()))
        }
    }

    @Test("a bad expression is a bind error with its place and position", arguments: [
        ("canonical:(nmae)", "at 12", "name"),
        ("books.@cnt", "at 7", "@count"),
        ("canon:(title)", "at 1", "canonical"),
        ("canonical:(age)", "at 12", "needs a string"),
        ("canonical:title", "at 11", "in parentheses"),
        ("author..name", "at 8", "empty name"),
        ("books.@sum", "at 7", "one attribute"),
        ("books.@count.x", "at 14", "nothing may follow"),
        ("books.title.@count", "at 13", "follows a to-many relationship of the entity itself"),
        ("name.length", "at 1", "cannot go on"),
        ("now()", "at 1", "date"),
        ("", "at 1", "empty expression"),
    ])
    func badExpressions(expression: String, position: String, words: String) throws {
        let description = ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Attribute.integer64("age")
                Attribute.string("probe").derived(expression)
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("pages")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        }
        var message = ""
        do {
            _ = try Model(description)
        } catch {
            message = "\(error)"
        }
        #expect(message.contains("Author.probe") && message.contains(position) && message.contains(words), "\(message)")
    }

    @Test("the model file carries derived expressions; wrong types and rules are refused")
    func jsonAndRules() throws {
        let model = try Model(Self.description())
        let text = model.description.jsonText()
        #expect(text.contains("\"derived\"") && text.contains("books.@sum.pages"))
        let again = try Model(try ModelDescription(json: Data(text.utf8)))
        #expect(try again.entity(named: "Book").attribute(named: "canonicalTitle").derivation?.form == .function(.canonical, keyPath: ["title"]))
        for (attribute, words) in [
            (Attribute.integer32("count").derived("books.@count"), "integer64"),
            (Attribute.string("count").derived("books.@count").required(), "required"),
            (Attribute.string("count").derived("name").transient(), "transient"),
            (Attribute.string("count").derived("books.@sum.title"), "needs numbers"),
            (Attribute.string("count").derived("canonical:(shadow)"), "derived itself"),
        ] {
            let description = ModelDescription {
                EntityDescription("Author") {
                    Attribute.string("name")
                    Attribute.string("shadow").derived("lowercase:(name)")
                    attribute
                    Relationship.toMany("books", "Book", inverse: "author")
                }
                EntityDescription("Book") {
                    Attribute.string("title")
                    Relationship.toOne("author", "Author", inverse: "books")
                }
            }
            var message = ""
            do { _ = try Model(description) } catch { message = "\(error)" }
            #expect(message.contains("Author.count") && message.contains(words), "\(message)")
        }
    }
}
