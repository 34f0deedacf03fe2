import Foundation
import Testing
@testable import Amber
@testable import AmberStore
@testable import AmberValues

/// Batch updates and deletes by predicate, against a plain reference: the
/// same changes made in Swift on a copy of every row.
@Suite struct BatchChangeTests {
    static func model(bookRule: RelationshipDescription.DeleteRule = .nullify, requiredAuthor: Bool = false) throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Attribute.integer64("bookCount").derived("books.@count")
                Relationship.toMany("books", "Book", inverse: "author").deleteRule(bookRule)
                Relationship.toMany("tags", "Tag", inverse: "authors")
            }
            EntityDescription("Book") {
                Attribute.string("title").required()
                Attribute.integer16("pages").min(1)
                Attribute.integer64("copies")
                Attribute.decimal("price")
                Attribute.double("ratio")
                Attribute.float("weight")
                Attribute.boolean("isRead").defaultValue(false)
                Attribute.string("note").transient()
                Attribute.string("lowerTitle").derived("lowercase:(title)")
                requiredAuthor ? Relationship.toOne("author", "Author", inverse: "books").required()
                    : Relationship.toOne("author", "Author", inverse: "books").optional()
            }
            .unique("title")
            EntityDescription("Tag") {
                Attribute.string("label")
                Relationship.toMany("authors", "Author", inverse: "tags")
            }
        })
    }

    /// A store with `count` books by four authors, seeded; returns the store and each book's values by title.
    static func library(_ kind: StoreKind, count: Int = 300, seed: UInt64 = 5, model: Model? = nil) throws
        -> (store: Store, cleanup: () -> Void, books: [String: [String: Value]])
    {
        let (store, cleanup) = try kind.open(model ?? Self.model())
        let context = Context(store: store)
        var random = SplitMix64(seed: seed)
        var authors: [ManagedObject] = []
        for name in ["Le Guin", "Banks", "Butler", "Herbert"] {
            let author = try context.insert("Author")
            try author.setValue(.string(name), forKey: "name")
            authors.append(author)
        }
        var books: [String: [String: Value]] = [:]
        for index in 0..<count {
            let values: [String: Value] = [
                "title": .string("Book \(index)"), "pages": .int(Int64.random(in: 1...30_000, using: &random)),
                "copies": .int(Int64.random(in: -1_000...1_000, using: &random)),
                "price": Bool.random(using: &random) ? .null : .decimal(try #require(ScaledDecimal("\(Int.random(in: 0...99_999, using: &random)).25"))),
                "ratio": .double(Double.random(in: -10...10, using: &random)),
            ]
            let book = try context.insert("Book")
            for (key, value) in values { try book.setValue(value, forKey: key) }
            try book.setObject(authors[index % 4], forKey: "author")
            books["Book \(index)"] = values
        }
        try context.save()
        return (store, cleanup, books)
    }

    /// Every book as stored now, by title.
    static func stored(_ store: Store) throws -> [String: [String: Value]] {
        var found: [String: [String: Value]] = [:]
        for book in try Context(store: store).fetch("Book") {
            guard case .string(let title) = try book.value(forKey: "title") else { continue }
            found[title] = Dictionary(uniqueKeysWithValues: try ["title", "pages", "copies", "price", "ratio"].map { ($0, try book.value(forKey: $0)) })
        }
        return found
    }

    @Test(arguments: StoreKind.allCases)
    func updatesMatchAReferenceOverRandomPredicates(kind: StoreKind) throws {
        let (store, cleanup, initial) = try Self.library(kind)
        defer { cleanup() }
        var reference = initial, random = SplitMix64(seed: 99)
        let context = Context(store: store)
        for round in 0..<30 {
            let limit = Int64.random(in: 1...30_000, using: &random), add = Int64.random(in: -50...50, using: &random)
            let factor = Double.random(in: 0.5...2, using: &random)
            let request = try FetchRequest("Book", where: round % 2 == 0 ? "pages < %@" : "pages >= %@ OR copies < 0", .int(limit))
            func matches(_ values: [String: Value]) -> Bool {
                guard case .int(let pages) = values["pages"], case .int(let copies) = values["copies"] else { return false }
                return round % 2 == 0 ? pages < limit : (pages >= limit || copies < 0)
            }
            // The reference refuses what the store must refuse: any matching row whose pages leave 1...32767.
            let refused = reference.values.contains { values in
                guard matches(values), case .int(let pages) = values["pages"] else { return false }
                return !(1...32_767).contains(pages + add)
            }
            let result = amberResult { () throws(AmberError) in
                try context.batchUpdate(request, set: ["pages": .attribute("pages") + .value(.int(add)), "ratio": .attribute("ratio") * .value(.double(factor)),
                                                       "copies": .attribute("copies") - 1])
            }
            if refused {
                guard case .failure(.saveFailed(let problems)) = result else {
                    Issue.record("\(kind) round \(round): an update leaving pages out of range was written")
                    continue
                }
                #expect(problems.allSatisfy { $0.place == "Book.pages" }, "\(problems)")
            } else {
                guard case .success(let changed) = result else {
                    Issue.record("\(kind) round \(round): \(result)")
                    continue
                }
                var expectedCount = 0
                for (title, values) in reference where matches(values) {
                    guard case .int(let pages) = values["pages"], case .int(let copies) = values["copies"], case .double(let ratio) = values["ratio"] else { continue }
                    reference[title]?["pages"] = .int(pages + add)
                    reference[title]?["copies"] = .int(copies - 1)
                    reference[title]?["ratio"] = .double(ratio * factor)
                    expectedCount += 1
                }
                #expect(changed.objectIDs.count == expectedCount)
            }
            #expect(try Self.stored(store) == reference, "\(kind) round \(round)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func decimalArithmeticIsExactOrRefused(kind: StoreKind) throws {
        let (store, cleanup, initial) = try Self.library(kind, count: 50)
        defer { cleanup() }
        let context = Context(store: store)
        let factor = try #require(ScaledDecimal("1.1"))
        try context.batchUpdate(FetchRequest("Book", where: "price != nil"), set: ["price": .attribute("price") * .value(.decimal(factor))])
        for (title, values) in try Self.stored(store) {
            guard case .decimal(let before)? = initial[title]?["price"] else {
                #expect(values["price"] == .null)
                continue
            }
            guard case .decimal(let after)? = values["price"] else { Issue.record("\(title) lost its price"); continue }
            #expect(after.number == before.number * factor.number, "\(title): \(before) * 1.1 = \(after)")
        }
        // 38 digits times 38 digits, or 37 digits plus a carry into a 38th with a fraction, cannot be exact:
        // refused, naming the attribute, and nothing changed.
        let huge = try #require(ScaledDecimal("12345678901234567890123456789012345678"))
        try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 1'"), set: ["price": .value(.decimal(huge))])
        guard case .saveFailed(let problems)? = amberError({
            try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 1'"), set: ["price": .attribute("price") * .value(.decimal(huge))])
        }) else {
            Issue.record("an inexact decimal product was written")
            return
        }
        #expect(problems.map(\.place) == ["Book.price"] && problems[0].message.contains("exactly"), "\(problems)")
        let wide = try #require(ScaledDecimal("9999999999999999999999999999999999999"))
        try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 2'"), set: ["price": .value(.decimal(wide))])
        let half = amberError {
            try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 2'"), set: ["price": .attribute("price") + .value(.decimal(try #require(ScaledDecimal("0.5"))))])
        }
        // SQLite's decimal arithmetic stops at what a double-width integer holds; PostgreSQL's numeric keeps
        // the 38 digits exactly, and Amber holds them: exact either way, never rounded.
        #expect(kind == .postgresql ? half == nil : half != nil, "\(kind): \(String(describing: half))")
        try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 2'"), set: ["price": .attribute("price") - 1])
        // A sum keeps the larger scale, a product the scales added, as decimal arithmetic does.
        try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 4'"), set: ["price": .value(.decimal(try #require(ScaledDecimal("0.10"))))])
        try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 4'"),
                                set: ["price": .attribute("price") + .value(.decimal(try #require(ScaledDecimal("0.20"))))])
        #expect(try Self.stored(store)["Book 4"]?["price"] == .decimal(try #require(ScaledDecimal("0.30"))))
        try context.batchUpdate(FetchRequest("Book", where: "title == 'Book 4'"),
                                set: ["price": .attribute("price") * .value(.decimal(try #require(ScaledDecimal("1.5"))))])
        #expect(try Self.stored(store)["Book 4"]?["price"] == .decimal(try #require(ScaledDecimal("0.450"))))
        let wideLessOne = kind == .postgresql ? "9999999999999999999999999999999999998.5" : "9999999999999999999999999999999999998"
        #expect(try Self.stored(store)["Book 2"]?["price"] == .decimal(try #require(ScaledDecimal(wideLessOne))))
        #expect(try Self.stored(store)["Book 1"]?["price"] == .decimal(huge))
        #expect(try Self.stored(store)["Book 3"] == initial["Book 3"].map { values in
            var scaled = values
            if case .decimal(let price)? = values["price"] { scaled["price"] = .decimal(ScaledDecimal(price.number * factor.number)) }
            return scaled
        })
    }

    @Test(arguments: StoreKind.allCases)
    func rulesUniquenessAndUnsettableAttributesAreRefusedNamed(kind: StoreKind) throws {
        let (store, cleanup, _) = try Self.library(kind, count: 20)
        defer { cleanup() }
        let context = Context(store: store)
        let before = try Self.stored(store)
        let all = FetchRequest("Book")
        // A rule broken by a computed value: each object named.
        guard case .saveFailed(let minimum)? = amberError({ try context.batchUpdate(all, set: ["pages": .attribute("pages") * 0]) }) else {
            Issue.record("pages of 0 were written")
            return
        }
        #expect(minimum.count == 20 && minimum.allSatisfy { $0.rule == .minValue && $0.place == "Book.pages" && $0.objectID != nil })
        // Uniqueness: two books cannot take one title.
        guard case .saveFailed(let unique)? = amberError({ try context.batchUpdate(all, set: ["title": "Same"]) }) else {
            Issue.record("a duplicate title was written")
            return
        }
        #expect(unique.map(\.rule) == [.uniqueness] && unique[0].place == "Book(title)")
        // What a batch cannot set, or a constant a set would refuse.
        let refusals: [(KeyValuePairs<String, BatchValue>, String)] = [
            (["note": "x"], "Book.note"), (["lowerTitle": "x"], "Book.lowerTitle"), (["weight": .attribute("weight") * 2], "Book.weight"),
            (["pages": "many"], "Book.pages"), (["pages": 0], "Book.pages"), (["title": nil], "Book.title"),
            (["pages": .attribute("title") + 1], "Book.pages"), (["nosuch": 1], "Book.nosuch"),
            (["copies": .attribute("copies") * .value(.int(Int64.max))], "Book.copies"),  // an Integer 64 overflow
            (["title": .attribute("pages")], "same type"),
        ]
        for (assignments, place) in refusals {
            let error = amberError { try context.batchUpdate(all, set: assignments) }
            #expect(error.map { "\($0)" }?.contains(place) == true, "\(place): \(String(describing: error))")
        }
        #expect(try Self.stored(store) == before)
    }

    @Test(arguments: StoreKind.allCases)
    func heldObjectsOtherContextsTheHistoryAndDerivedValuesFollow(kind: StoreKind) throws {
        let (store, cleanup, _) = try Self.library(kind, count: 40)
        defer { cleanup() }
        let context = Context(store: store), other = Context(store: store)
        let held = try #require(try context.fetch("Book", where: "title == 'Book 3'").first)
        try held.setValue(.bool(true), forKey: "isRead")  // pending here, kept through the batch
        let seen = try #require(try other.fetch("Book", where: "title == 'Book 3'").first)
        var reports: [ChangeReport] = []
        let token = other.addObserver { reports.append($0) }
        defer { other.removeObserver(token) }
        let start = try store.lastHistoryToken()
        let result = try context.batchUpdate(FetchRequest("Book", where: "title IN %@", .array([.string("Book 3"), .string("Book 5")])),
                                             set: ["pages": 7, "title": .attribute("title")])
        #expect(result.objectIDs.count == 2)
        #expect(try held.value(forKey: "pages") == .int(7) && held.value(forKey: "isRead") == .bool(true))
        try other.mergeSavedChanges()
        #expect(try seen.value(forKey: "pages") == .int(7))
        #expect(reports.first?.refreshed.map(\.keys) == [["pages"]])
        let history = try store.history(after: start)
        #expect(history.count == 1 && history[0].changes.map(\.kind) == [.updated, .updated])
        #expect(history[0].changes.first?.changedKeys == ["pages", "title"])
        try context.save()  // the pending isRead saves over the batch's version
        #expect(try Context(store: store).fetch("Book", where: "title == 'Book 3'").first?.value(forKey: "isRead") == .bool(true))
        // A derived count follows a batch delete; the deleted objects leave the contexts holding them.
        let gone = try #require(try other.fetch("Book", where: "title == 'Book 4'").first)
        let deleted = try context.batchDelete(FetchRequest("Book", where: "author.name == 'Le Guin'"))
        #expect(deleted.objectIDs.count == 10)
        try other.mergeSavedChanges()
        #expect(gone.isDeleted || gone.context == nil)
        let leGuin = try #require(try Context(store: store).fetch("Author", where: "name == 'Le Guin'").first)
        #expect(try leGuin.value(forKey: "bookCount") == .int(0))
        #expect(try Context(store: store).count(FetchRequest("Book")) == 30)
    }

    @Test(arguments: StoreKind.allCases)
    func deleteRulesAreHonouredInTheStore(kind: StoreKind) throws {
        // Nullify: the books stay, without an author.
        do {
            let (store, cleanup, _) = try Self.library(kind, count: 12)
            defer { cleanup() }
            let context = Context(store: store)
            let tag = try context.insert("Tag")
            try tag.setValue("classic", forKey: "label")
            try tag.setObjects([try #require(try context.fetch("Author", where: "name == 'Banks'").first)], forKey: "authors")
            try context.save()
            let result = try context.batchDelete(FetchRequest("Author", where: "name == 'Banks'"))
            #expect(result.objectIDs.count == 1 && result.nullified.count == 3)
            let reader = Context(store: store)
            #expect(try reader.count(FetchRequest("Book", where: "author == nil")) == 3)
            #expect(try reader.fetch("Tag").first?.objects(forKey: "authors").isEmpty == true)
            #expect(try store.checkIntegrity().isEmpty)
        }
        // Deny and cascade refuse while linked; a required inverse refuses nullify; nothing changes.
        for (rule, required, place) in [(RelationshipDescription.DeleteRule.deny, false, "Author.books"), (.cascade, false, "Author.books"),
                                        (.nullify, true, "Book.author")] {
            let (store, cleanup, _) = try Self.library(kind, count: 12, model: Self.model(bookRule: rule, requiredAuthor: required))
            defer { cleanup() }
            let context = Context(store: store)
            guard case .saveFailed(let problems)? = amberError({ try context.batchDelete(FetchRequest("Author")) }) else {
                Issue.record("\(kind) \(rule): linked authors were deleted")
                continue
            }
            #expect(problems.map(\.place) == [place], "\(rule): \(problems)")
            #expect(try Context(store: store).count(FetchRequest("Author")) == 4)
            // Authors without books go.
            try context.batchDelete(FetchRequest("Book"))
            #expect(try context.batchDelete(FetchRequest("Author")).objectIDs.count == 4, "\(rule)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func batchDeletesLeaveNoLinkPointingAtNothing(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(Model(ModelDescription {
            EntityDescription("Person") {
                Attribute.string("name")
                Relationship.toOne("passport", "Passport", inverse: "owner")
                Relationship.toMany("friends", "Person", inverse: "friends")
            }
            EntityDescription("Passport") {
                Attribute.string("number")
                Relationship.toOne("owner", "Person", inverse: "passport")
            }
            EntityDescription("Club") {
                Relationship.toMany("members", "Person")  // one-way, into Person
            }
        }))
        defer { cleanup() }
        let context = Context(store: store)
        var people: [ManagedObject] = []
        for name in ["Ada", "Bo", "Cy"] {
            let person = try context.insert("Person")
            try person.setValue(.string(name), forKey: "name")
            let passport = try context.insert("Passport")
            try passport.setObject(person, forKey: "owner")
            people.append(person)
        }
        try people[2].setObjects([people[0], people[1]], forKey: "friends")
        let club = try context.insert("Club")
        try club.setObjects(people, forKey: "members")
        try context.save()
        let result = try context.batchDelete(FetchRequest("Person", where: "name != 'Cy'"))
        #expect(result.objectIDs.count == 2 && result.nullified.count == 2, "\(kind)")
        let reader = Context(store: store)
        #expect(try reader.count(FetchRequest("Passport", where: "owner == nil")) == 2, "\(kind)")
        let cy = try #require(try reader.fetch("Person").first)
        #expect(try cy.objects(forKey: "friends").isEmpty, "\(kind)")
        #expect(try reader.fetch("Club").first?.objects(forKey: "members").map { try $0.value(forKey: "name") } == ["Cy"], "\(kind)")
        #expect(try store.checkIntegrity().isEmpty)
    }
}

/// The result of a throwing call, with its AmberError.
func amberResult<T>(_ body: () throws(AmberError) -> T) -> Result<T, AmberError> {
    do throws(AmberError) {
        return .success(try body())
    } catch {
        return .failure(error)
    }
}