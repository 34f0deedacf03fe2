import Foundation
import Testing
@testable import Amber
@testable import AmberStore
@testable import AmberValues

/// A store the suite runs on, opened fresh for each test.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case file, memory

    var testDescription: String { rawValue }

    /// A new, empty store of this kind with `model`; `cleanup` removes what it left.
    func open(_ model: Model, options: Store.Options = Store.Options()) throws -> (store: Store, cleanup: () -> Void) {
        switch self {
        case .memory:
            return (try Store(url: "memory:", model: model, options: options), {})
        case .file:
            let directory = temporaryDirectory()
            let url = "file://" + directory.appendingPathComponent("suite.amber").path
            return (try Store(url: url, model: model, options: options), { try? FileManager.default.removeItem(at: directory) })
        }
    }
}

/// The behaviours every store keeps, run against each store through the
/// contract: a new store passes when all of these pass on it.
@Suite struct StoreSuiteTests {
    @Test(arguments: StoreKind.allCases)
    func everyTypeReadsBackExactly(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(everyTypeModel())
        defer { cleanup() }
        var random = SplitMix64(seed: 37)
        var saved: [[String: Value]] = []
        let context = Context(store: store)
        for _ in 0..<200 {
            let values: [String: Value] = [
                "i16": .int(Int64(Int16.random(in: .min ... .max, using: &random))),
                "i32": .int(Int64(Int32.random(in: .min ... .max, using: &random))),
                "i64": .int(Int64.random(in: .min ... .max, using: &random)),
                "ratio": .double(Double(bitPattern: UInt64.random(in: 0 ... 0x7FEF_FFFF_FFFF_FFFF, using: &random))),
                "weight": .float(Float(bitPattern: UInt32.random(in: 0 ... 0x7F7F_FFFF, using: &random))),
                "name": .string(String((0..<Int.random(in: 0...40, using: &random)).map { _ in
                    Character(UnicodeScalar(UInt32.random(in: 0x20...0x2FF, using: &random)) ?? "x") })),
                "flag": .bool(Bool.random(using: &random)),
                "when": .date(Date(timeIntervalSinceReferenceDate: Double(Int32.random(in: .min ... .max, using: &random)) / 7)),
                "blob": .binary(Data((0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })),
                "key": .uuid(UUID()),
                "price": .decimal(Decimal(Int64.random(in: -1_000_000_000...1_000_000_000, using: &random)) / 1000),
                "link": Bool.random(using: &random) ? .null : .uri(try #require(URL(string: "https://example.com/\(Int.random(in: 0...999, using: &random))"))),
            ]
            let sample = try context.insert("Sample")
            for (key, value) in values { try sample.setValue(value, forKey: key) }
            saved.append(values)
        }
        try context.save()
        let read = try Context(store: store).fetch(FetchRequest("Sample", sortedBy: [SortKey("i64")]))
        let expected = saved.sorted { a, b in
            guard case .int(let x) = a["i64"], case .int(let y) = b["i64"] else { return false }
            return x < y
        }
        #expect(read.count == expected.count)
        for (object, values) in zip(read, expected) {
            for (key, value) in values { #expect(try object.value(forKey: key) == value, "\(kind): Sample.\(key)") }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func predicatesMatchABruteForceFilter(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        var random = SplitMix64(seed: 11)
        let context = Context(store: store)
        let authors = ["Le Guin", "Banks", "Butler", "Herbert"]
        for index in 0..<300 {
            try insertBook(context, "Book \(index)", authors[Int.random(in: 0..<4, using: &random)],
                           price: Bool.random(using: &random) ? .null : .decimal(Decimal(Int.random(in: 0...500, using: &random))),
                           pages: .int(Int64.random(in: 1...900, using: &random)))
        }
        try context.save()
        let books = try Context(store: store).fetch("Book")
        func int(_ object: ManagedObject, _ key: String) -> Int64? {
            if case .int(let value) = try? object.value(forKey: key) { return value }
            return nil
        }
        func text(_ object: ManagedObject, _ key: String) -> String {
            if case .string(let value) = try? object.value(forKey: key) { return value }
            return ""
        }
        for round in 0..<40 {
            let pages = Int64.random(in: 1...900, using: &random), author = authors[round % 4]
            let prefix = "Book \(round % 10)"
            let cases: [(FetchRequest, (ManagedObject) -> Bool)] = [
                (try FetchRequest("Book", where: "pages > %@", .int(pages)), { (int($0, "pages") ?? 0) > pages }),
                (try FetchRequest("Book", where: "pages <= %@ AND author == %@", .int(pages), .string(author)),
                 { (int($0, "pages") ?? 0) <= pages && text($0, "author") == author }),
                (try FetchRequest("Book", where: "author != %@ OR price == nil", .string(author)),
                 { text($0, "author") != author || (try? $0.value(forKey: "price")) == .null }),
                (try FetchRequest("Book", where: "title BEGINSWITH %@", .string(prefix)), { text($0, "title").hasPrefix(prefix) }),
            ]
            for (request, filter) in cases {
                let found = Set(try Context(store: store).fetch(request).map { text($0, "title") })
                #expect(found == Set(books.filter(filter).map { text($0, "title") }), "\(kind): \(String(describing: request.predicate))")
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func conflictsAreSettledByEveryMergePolicy(kind: StoreKind) throws {
        for policy in MergePolicy.allCases {
            let (store, cleanup) = try kind.open(booksModel())
            defer { cleanup() }
            let first = Context(store: store), second = Context(store: store)
            try insertBook(first, "Dune", "Herbert", pages: .int(400))
            try first.save()
            let mine = try #require(try first.fetch("Book").first), theirs = try #require(try second.fetch("Book").first)
            try theirs.setValue(.int(500), forKey: "pages")
            try theirs.setValue(.string("Frank Herbert"), forKey: "author")
            try second.save()
            try mine.setValue(.int(600), forKey: "pages")
            first.mergePolicy = policy
            let error = amberError { try first.save() }
            let stored = try #require(try Context(store: store).fetch("Book").first)
            switch policy {
            case .error:
                guard case .saveFailed(let problems)? = error else { Issue.record("\(kind): no conflict reported"); continue }
                #expect(problems.contains { $0.rule == .conflict }, "\(kind)")
                #expect(try stored.value(forKey: "pages") == .int(500))
            case .storeWins:
                #expect(error == nil, "\(kind) \(policy)")
                #expect(try stored.value(forKey: "pages") == .int(500))
            case .objectWins, .overwrite:
                #expect(error == nil, "\(kind) \(policy)")
                #expect(try stored.value(forKey: "pages") == .int(600))
                // objectWins keeps the store's other keys; overwrite writes every key as this context had it.
                #expect(try stored.value(forKey: "author") == .string(policy == .objectWins ? "Frank Herbert" : "Herbert"), "\(kind) \(policy)")
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func duplicatesAreRefusedNamingTheConstraint(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try context.save()
        try insertBook(context, "Dune", "Herbert")
        guard case .saveFailed(let problems)? = amberError({ try context.save() }) else {
            Issue.record("\(kind): a duplicate was saved")
            return
        }
        #expect(problems.map(\.rule) == [.uniqueness] && problems[0].place.contains("Book(title, author)"), "\(kind): \(problems)")
        #expect(try Context(store: store).count(FetchRequest("Book")) == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func observersHearOtherContextsSaves(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let writer = Context(store: store), reader = Context(store: store)
        let dune = try insertBook(writer, "Dune", "Herbert")
        try insertBook(writer, "Kindred", "Butler")
        try writer.save()
        let held = try reader.fetch("Book")
        var reports: [ChangeReport] = []
        let token = reader.addObserver { reports.append($0) }
        defer { reader.removeObserver(token) }
        try dune.setValue(.int(412), forKey: "pages")
        try writer.save()
        try reader.mergeSavedChanges()
        #expect(reports.count == 1)
        #expect(reports.first?.refreshed.map(\.keys) == [["pages"]], "\(kind)")
        #expect(try held.first { try $0.value(forKey: "title") == .string("Dune") }?.value(forKey: "pages") == .int(412))
    }

    @Test(arguments: StoreKind.allCases)
    func historyListsWhatEachSaveDid(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let start = try store.lastHistoryToken()
        let context = Context(store: store)
        context.name = "importer"
        context.transactionAuthor = "alice"
        let dune = try insertBook(context, "Dune", "Herbert")
        let kindred = try insertBook(context, "Kindred", "Butler")
        try insertBook(context, "Excession", "Banks")
        try context.save()
        try dune.setValue(.int(412), forKey: "pages")
        try dune.setValue(.string("Frank Herbert"), forKey: "author")
        try context.delete(kindred)
        try context.save()
        try context.save()  // nothing pending: no transaction
        let history = try store.history(after: start)
        #expect(history.count == 2)
        #expect(history.map(\.author) == ["alice", "alice"] && history.map(\.contextName) == ["importer", "importer"])
        #expect(history.allSatisfy { $0.changesRecorded })
        #expect(history.first?.changes.map(\.kind) == [.inserted, .inserted, .inserted])
        #expect(history.first?.changes.map(\.objectID.primaryKey) == [1, 2, 3])
        let second = try #require(history.last).changes
        #expect(second.map(\.kind) == [.updated, .deleted], "\(kind): \(second)")
        #expect(second.first?.changedKeys == ["author", "pages"] && second.first?.objectID == dune.objectID, "\(kind): \(second)")
        #expect(second.last?.objectID.primaryKey == 2 && second.last?.entityName == "Book")
        // After a token, only what came later; tokens order the history.
        #expect(try store.history(after: history[0].token).map(\.token) == [history[1].token])
        #expect(try store.history(after: history[1].token).isEmpty)
        #expect(try store.lastHistoryToken() == history[1].token)
    }

    @Test(arguments: StoreKind.allCases)
    func historyTokensOfOtherStoresAndPurgedRangesAreRefused(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let (other, cleanupOther) = try kind.open(booksModel())
        defer { cleanupOther() }
        let context = Context(store: store)
        for title in ["A", "B", "C"] {
            try insertBook(context, title, "X")
            try context.save()
        }
        let history = try store.history()
        #expect(history.count == 3)
        guard case .historyUnavailable(_, let reason)? = amberError({ _ = try store.history(after: other.lastHistoryToken()) }) else {
            Issue.record("\(kind): another store's token was read")
            return
        }
        #expect(reason.contains(other.identifier.uuidString))
        let later = HistoryToken(storeIdentifier: store.identifier, sequence: history[2].token.sequence + 5)
        #expect(amberError { _ = try store.history(after: later) }.map { "\($0)" }?.contains("ends at") == true)
        try store.purgeHistory(through: history[1].token)
        guard case .historyUnavailable(_, let purged)? = amberError({ _ = try store.history(after: history[0].token) }) else {
            Issue.record("\(kind): a purged range was read")
            return
        }
        #expect(purged.contains("purged"))
        #expect(try store.history(after: history[1].token).map(\.token) == [history[2].token])
        #expect(try store.history().map(\.token) == [history[2].token])
        #expect(HistoryToken(history[2].token.description) == history[2].token && HistoryToken("not a token") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func aStoreWithoutHistoryRecordsOnlyThatItSaved(kind: StoreKind) throws {
        var options = Store.Options()
        options.recordsHistory = false
        let (store, cleanup) = try kind.open(booksModel(), options: options)
        defer { cleanup() }
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try context.save()
        let history = try store.history()
        #expect(history.count == 1 && history[0].changesRecorded == false && history[0].changes.isEmpty, "\(kind)")
    }

    @Test(arguments: StoreKind.allCases)
    func capabilitiesSayWhatTheStoreCanDo(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        #expect(store.capabilities.contains([.history, .backups, .integrityChecks]))
        #expect(store.capabilities.contains(.sharedAcrossProcesses) == (kind == .file))
        #expect(try store.checkIntegrity().isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func subEntitiesComeWithTheirParentsFetches(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(Model(InheritanceTests.description))
        defer { cleanup() }
        let context = Context(store: store)
        for (entity, name) in [("Writer", "Woolf"), ("Poet", "Plath"), ("Editor", "Perkins"), ("Poet", "Rilke")] {
            try context.insert(entity).setValue(.string(name), forKey: "name")
        }
        try context.save()
        let reader = Context(store: store)
        let people = try reader.fetch(FetchRequest("Person", sortedBy: [.ascending("name")]))
        #expect(people.map(\.entity.name) == ["Editor", "Poet", "Poet", "Writer"], "\(kind)")
        #expect(try people.map { try $0.value(forKey: "name") } == ["Perkins", "Plath", "Rilke", "Woolf"], "\(kind)")
        #expect(try reader.count(FetchRequest("Writer")) == 3 && reader.count(FetchRequest("Poet")) == 2, "\(kind)")
    }

    @Test(arguments: StoreKind.allCases)
    func undoReachesBackAcrossSaves(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let context = Context(store: store)
        let book = try insertBook(context, "Dune", "Herbert")
        try context.save()
        context.undoStack = UndoStack()
        try book.setValue("Dune Messiah", forKey: "title")
        try context.save()
        #expect(try context.undo())
        try context.save()
        #expect(try Context(store: store).fetch("Book").first?.value(forKey: "title") == "Dune", "\(kind)")
    }

    @Test(arguments: StoreKind.allCases)
    func liveQueriesFollowOtherContextsSaves(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let writer = Context(store: store), reader = Context(store: store)
        try insertBook(writer, "Dune", "Herbert", pages: .int(400))
        try insertBook(writer, "Kindred", "Butler", pages: .int(90))
        try writer.save()
        let query = try LiveQuery(FetchRequest("Book", predicate: try FetchPredicate("pages > 100"), sortedBy: [.ascending("title")]), in: reader)
        #expect(try query.objects.map { try $0.value(forKey: "title") } == ["Dune"])
        let kindred = try #require(try writer.fetch("Book", where: "title == 'Kindred'").first)
        try kindred.setValue(.int(260), forKey: "pages")
        try insertBook(writer, "Excession", "Banks", pages: .int(450))
        try writer.save()
        try reader.mergeSavedChanges()
        #expect(try query.objects.map { try $0.value(forKey: "title") } == ["Dune", "Excession", "Kindred"], "\(kind)")
    }

    @Test(arguments: StoreKind.allCases)
    func derivedAndExtendedAttributesAreKept(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Attribute.integer64("bookCount").derived("books.@count")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Relationship.toOne("author", "Author", inverse: "books")
            }.extensible()
        }))
        defer { cleanup() }
        let context = Context(store: store)
        let author = try context.insert("Author")
        for title in ["Dune", "Children of Dune"] {
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            try book.setObject(author, forKey: "author")
            try book.setValue(.string("shelf \(title.count)"), forExtendedKey: "shelf")
        }
        try context.save()
        let reader = Context(store: store)
        #expect(try reader.fetch("Author").first?.value(forKey: "bookCount") == .int(2), "\(kind)")
        #expect(try Set(reader.fetch("Book").map { try $0.value(forExtendedKey: "shelf") }) == [.string("shelf 4"), .string("shelf 16")], "\(kind)")
        #expect(try reader.count(FetchRequest("Book", where: "shelf == 'shelf 4'")) == 1, "\(kind)")
    }
}
