import Foundation
import Testing
@testable import Amber
@testable import AmberStore
@testable import AmberValues

/// A store the suite runs on, opened fresh for each test.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case file, memory, postgresql

    var testDescription: String { rawValue }

    /// Every kind, PostgreSQL only where a test server is given (always in CI: see `TestServer`).
    static var allCases: [StoreKind] { TestServer.required ? [.file, .memory, .postgresql] : [.file, .memory] }

    /// A new, empty store of this kind with `model`; `cleanup` removes what it left.
    func open(_ model: Model, options: Store.Options = Store.Options()) throws -> (store: Store, cleanup: () -> Void) {
        switch self {
        case .memory:
            return (try Store(url: "memory:", model: model, options: options), {})
        case .file:
            let directory = temporaryDirectory()
            let url = "file://" + directory.appendingPathComponent("suite.amber").path
            return (try Store(url: url, model: model, options: options), { try? FileManager.default.removeItem(at: directory) })
        case .postgresql:
            // A schema of its own on the test server, dropped afterwards.
            let (url, cleanup) = try TestServer.storeURL()
            return (try Store(url: url, model: model, options: options), cleanup)
        }
    }

    /// Whether the store outlives its `Store` object, so that opening its
    /// URL again finds what was saved (a file does; `memory:` names a new,
    /// empty store each time it is opened).
    var persists: Bool {
        switch self {
        case .file, .postgresql: true
        case .memory: false
        }
    }

    /// Whether opening the store with a model of another shape migrates it
    /// (an in-memory store has nothing to migrate: each opening is a new store).
    var migrates: Bool { persists }

    /// Opens the store `store` was opened on again, with `model` (migrating
    /// it when `model` differs from the one it was made with); nil for a
    /// kind that does not persist, which has no such store to open.
    func reopen(_ store: Store, model: Model, options: Store.Options = Store.Options()) throws -> Store? {
        guard persists else { return nil }
        return try Store(url: store.url, model: model, options: options)
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

    /// Sorting puts nil first going up and last going down, and a
    /// case-insensitive sort orders folded text by its bytes, on every
    /// store: a live query places changed rows by those rules without
    /// asking the store, so it must end equal to a fresh fetch.
    @Test(arguments: StoreKind.allCases)
    func sortsOrderNilAndFoldedTextAsLiveQueriesPlaceThem(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(Model(ModelDescription {
            EntityDescription("Item") {
                Attribute.string("name")
                Attribute.integer32("rank")
            }
        }))
        defer { cleanup() }
        let writer = Context(store: store), reader = Context(store: store)
        let names: [String?] = ["b", "B", "a", "É", "e", "Zoë", "zoe", nil, "äpfel", "Apfel"]
        func add(_ index: Int, _ name: String?) throws {
            let item = try writer.insert("Item")
            try item.setValue(name.map(Value.string) ?? .null, forKey: "name")
            try item.setValue(index % 3 == 0 ? .null : .int(Int64(index % 4)), forKey: "rank")
        }
        for (index, name) in names.prefix(5).enumerated() { try add(index, name) }
        try writer.save()
        let byName = FetchRequest("Item", sortedBy: [SortKey("name", caseInsensitive: true), SortKey("rank", ascending: false)])
        let query = try LiveQuery(byName, in: reader)
        for (index, name) in names.enumerated().dropFirst(5) { try add(index, name) }
        try writer.save()
        try reader.mergeSavedChanges()
        let fresh = try Context(store: store).fetch(byName)
        #expect(try query.objects.map { try $0.value(forKey: "name") } == fresh.map { try $0.value(forKey: "name") }, "\(kind)")
        #expect(try fresh.first?.value(forKey: "name") == .null, "\(kind): nil first going up")
        let ranks = try Context(store: store).fetch(FetchRequest("Item", sortedBy: [SortKey("rank", ascending: false)]))
        #expect(try ranks.last?.value(forKey: "rank") == .null && ranks.first?.value(forKey: "rank") == .int(3), "\(kind): nil last going down")
    }

    /// A context waits for others' saves: another context on the store, and
    /// (where the store persists) another connection saving from another thread.
    @Test(arguments: StoreKind.allCases)
    func waitingWakesWhenOthersSave(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(booksModel())
        defer { cleanup() }
        let reader = Context(store: store)
        #expect(try !reader.waitForSavedChanges(timeout: .milliseconds(50)), "\(kind): nothing was saved")
        let others = try [store] + (kind.reopen(store, model: store.model).map { [$0] } ?? [])
        for (index, other) in others.enumerated() {
            let failure = Locked<String?>(nil)
            let saver = Thread {
                usleep(100_000)
                do {
                    let context = Context(store: other)
                    try insertBook(context, "Book \(index)", "Someone")
                    try context.save()
                } catch {
                    failure.mutate { $0 = "\(error)" }
                }
            }
            saver.start()
            let start = ContinuousClock.now
            #expect(try reader.waitForSavedChanges(timeout: .seconds(30)), "\(kind), saver \(index)")
            #expect(ContinuousClock.now - start < .seconds(20), "\(kind): woke by the save, not the timeout")
            while saver.isExecuting { usleep(1_000) }
            #expect(failure.value == nil, "\(failure.value ?? "")")
            try reader.mergeSavedChanges()
            #expect(try reader.count(FetchRequest("Book")) == index + 1, "\(kind), saver \(index)")
            #expect(try !reader.waitForSavedChanges(timeout: .milliseconds(30)), "\(kind): everything was merged")
        }
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
        #expect(store.capabilities.contains([.history, .integrityChecks]))
        #expect(store.capabilities.contains(.sharedAcrossProcesses) == (kind != .memory))
        #expect(try store.checkIntegrity().isEmpty)
        // A server's backups are the server's: the refusal says what to use.
        #expect(store.capabilities.contains(.backups) == (kind != .postgresql))
        if kind == .postgresql {
            #expect { try store.backup(to: "/tmp/never") } throws: { "\($0)".contains("pg_dump") }
        }
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

    /// A live query sorted by an extended attribute holding numbers and
    /// text places each row another context saves as a fresh fetch orders
    /// it (numbers before text, absent values first).
    @Test(arguments: StoreKind.allCases)
    func liveQueriesSortByExtendedAttributesAsFetchesDo(kind: StoreKind) throws {
        let model = try Model(ModelDescription {
            EntityDescription("Book") { Attribute.string("title") }.extensible()
        })
        let (store, cleanup) = try kind.open(model)
        defer { cleanup() }
        let writer = Context(store: store), reader = Context(store: store)
        var random = SplitMix64(seed: 41)
        let shelves: [Value] = [.int(3), .int(-2), .double(2.5), .string("B2"), .string("a1"), .string("b,\"x\" (y)"), .bool(true), .null]
        func add(_ count: Int) throws {
            for _ in 0..<count {
                let book = try writer.insert("Book")
                try book.setValue(.string("t\(random.next() % 1000)"), forKey: "title")
                try book.setValue(shelves[Int(random.next() % UInt64(shelves.count))], forExtendedKey: "shelf")
            }
        }
        try add(10)
        try writer.save()
        var request = FetchRequest("Book", sortedBy: [SortKey("shelf"), SortKey("title")])
        let judgedInMemory = try LiveQuery(request, in: reader)
        request.includesPendingChanges = false
        let judgedByStore = try LiveQuery(request, in: reader)
        for _ in 0..<4 {
            try add(5)
            for book in try writer.fetch("Book").prefix(3) {
                try book.setValue(shelves[Int(random.next() % UInt64(shelves.count))], forExtendedKey: "shelf")
            }
            try writer.save()
            try reader.mergeSavedChanges()
            let fresh = try Context(store: store).fetch(request).map(\.objectID)
            #expect(try judgedInMemory.objects.map(\.objectID) == fresh, "\(kind)")
            #expect(try judgedByStore.objects.map(\.objectID) == fresh, "\(kind)")
        }
    }

    /// A live query in a context with unsaved inserts, sets (of extended
    /// values of mixed types too) and deletions, brought up to date by
    /// processPendingChanges and by merges of another context's saves, holds
    /// what a fetch returns on every store.
    @Test(arguments: StoreKind.allCases)
    func liveQueriesShowPendingChangesAsFetchesDo(kind: StoreKind) throws {
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer32("pages")
            }.extensible()
        })
        let (store, cleanup) = try kind.open(model)
        defer { cleanup() }
        let writer = Context(store: store), reader = Context(store: store)
        var random = SplitMix64(seed: 47)
        let shelves: [Value] = [.int(3), .int(-2), .double(2.5), .string("B2"), .string("a1"), .bool(true), .null]
        func shelf() -> Value { shelves[Int(random.next() % UInt64(shelves.count))] }
        func add(_ context: Context, _ count: Int) throws {
            for _ in 0..<count {
                let book = try context.insert("Book")
                try book.setValue(.string("t\(random.next() % 1000)"), forKey: "title")
                try book.setValue(.int(Int64(random.next() % 300)), forKey: "pages")
                try book.setValue(shelf(), forExtendedKey: "shelf")
            }
        }
        try add(writer, 20)
        try writer.save()
        let request = try FetchRequest("Book", where: "pages > 100", sortedBy: [SortKey("shelf"), SortKey("title", ascending: false)])
        let query = try LiveQuery(request, in: reader)
        for step in 0..<30 {
            let books = try reader.fetch("Book")
            switch random.next() % 4 {
            case 0: try add(reader, 2)
            case 1: if let book = books.randomElement(using: &random) { try reader.delete(book) }
            case 2: try books.randomElement(using: &random)?.setValue(.int(Int64(random.next() % 300)), forKey: "pages")
            default: try books.randomElement(using: &random)?.setValue(shelf(), forExtendedKey: "shelf")
            }
            if step % 5 == 4 {
                try add(writer, 3)
                try writer.save()
                try reader.mergeSavedChanges()
            } else {
                try reader.processPendingChanges()
            }
            #expect(query.objects == (try reader.fetch(request)), "\(kind), step \(step)")
        }
        try reader.save()
        let saved = try Context(store: store).fetch(request).map(\.objectID)
        #expect(query.objects.map(\.objectID) == saved, "\(kind)")
    }

    @Test(arguments: StoreKind.allCases)
    func derivedAndExtendedAttributesAreKept(kind: StoreKind) throws {
        let model = try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Attribute.integer64("bookCount").derived("books.@count")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Relationship.toOne("author", "Author", inverse: "books")
            }.extensible()
        })
        let (store, cleanup) = try kind.open(model)
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

    /// Random operations on a graph of authors, books and tags (new books,
    /// moves from either side, deletes, many-to-many links and unlinks from
    /// either side, saves, rollbacks, fresh contexts), seeded, against a
    /// plain reference: after every step both sides of every relationship in
    /// the working context match the reference, and after every save a new
    /// context reads exactly the saved reference back from the store.
    @Test(arguments: StoreKind.allCases)
    func randomGraphOperationsMatchAPlainReference(kind: StoreKind) throws {
        var description = libraryDescription()
        description.entities[1].relationships[0] = description.entities[1].relationships[0].optional()
        description.entities[0].relationships[0] = description.entities[0].relationships[0].deleteRule(.nullify)
        let (store, cleanup) = try kind.open(try Model(description))
        defer { cleanup() }
        let authorEntity = try store.model.entity(named: "Author"), bookEntity = try store.model.entity(named: "Book")
        let tagEntity = try store.model.entity(named: "Tag")
        let books = try authorEntity.relationship(named: "books"), writer = try bookEntity.relationship(named: "author")
        let tags = try bookEntity.relationship(named: "tags"), tagged = try tagEntity.relationship(named: "books")
        var random = SplitMix64(seed: 12)
        // The reference: by title, the author's name (or nil) and the tag labels, as saved and as pending.
        typealias Graph = [String: (author: String?, tags: Set<String>)]
        var saved: Graph = [:], current: Graph = [:]
        let authorNames = ["A0", "A1", "A2", "A3"], tagLabels = ["t0", "t1", "t2"]
        var context = Context(store: store)
        for name in authorNames { try context.insert(authorEntity).setValue(.string(name), forKey: "name") }
        for label in tagLabels { try context.insert(tagEntity).setValue(.string(label), forKey: "label") }
        try context.save()
        var nextTitle = 0
        func text(_ object: ManagedObject, _ key: String) throws -> String {
            guard case .string(let value) = try object.value(forKey: key) else { return "?" }
            return value
        }
        func find(_ entity: String, _ key: String, _ value: String) throws -> ManagedObject {
            // A fetch reads saved rows; new objects are found among the inserted ones.
            if let new = try context.insertedObjects.first(where: { try $0.entity.name == entity && $0.value(forKey: key) == .string(value) }) {
                return new
            }
            return try #require(try context.fetch(entity, where: "\(key) == %@", .string(value)).first)
        }
        /// Both sides of every relationship `context` holds against `graph`.
        func check(_ context: Context, _ graph: Graph, _ place: String) throws {
            for author in try context.fetch("Author") {
                let name = try text(author, "name")
                let expected = graph.filter { $0.value.author == name }.keys.sorted()
                #expect(try author.objects(for: books).map { try text($0, "title") }.sorted() == expected, "\(kind) \(place) \(name)")
                #expect(try author.count(of: books) == expected.count, "\(kind) \(place) count of \(name)")
            }
            for tag in try context.fetch("Tag") {
                let label = try text(tag, "label")
                let expected = graph.filter { $0.value.tags.contains(label) }.keys.sorted()
                #expect(try tag.objects(for: tagged).map { try text($0, "title") }.sorted() == expected, "\(kind) \(place) \(label)")
            }
            for book in try context.fetch("Book") + context.insertedObjects.filter({ $0.entity === bookEntity }) {
                let title = try text(book, "title")
                #expect(try book.object(for: writer).map { try text($0, "name") } == graph[title]?.author, "\(kind) \(place) \(title)")
                #expect(try Set(book.objects(for: tags).map { try text($0, "label") }) == graph[title]?.tags ?? [], "\(kind) \(place) \(title) tags")
            }
        }
        /// What a new context reads from `store`: exactly the saved graph, every object and link.
        func checkStored(in store: Store, _ place: String) throws {
            let fresh = Context(store: store)
            #expect(try fresh.fetch("Book").map { try text($0, "title") }.sorted() == saved.keys.sorted(), "\(kind) \(place) books")
            #expect(try fresh.fetch("Author").map { try text($0, "name") }.sorted() == authorNames, "\(kind) \(place) authors")
            #expect(try fresh.fetch("Tag").map { try text($0, "label") }.sorted() == tagLabels, "\(kind) \(place) tags")
            try check(fresh, saved, place)
        }
        for step in 0..<400 {
            let titles = current.keys.sorted()
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:  // a new book, maybe with an author
                let title = "B\(nextTitle)"
                nextTitle += 1
                let book = try context.insert(bookEntity)
                try book.setValue(.string(title), forKey: "title")
                let author = Bool.random(using: &random) ? authorNames.randomElement(using: &random) : nil
                if let author { try book.setObject(try find("Author", "name", author), for: writer) }
                current[title] = (author, [])
            case 2, 3:  // move a book, from either side
                guard let title = titles.randomElement(using: &random) else { continue }
                let book = try find("Book", "title", title)
                let author = Int.random(in: 0...authorNames.count, using: &random)
                if author == authorNames.count {
                    try book.setObject(nil, for: writer)
                    current[title]?.author = nil
                } else {
                    try find("Author", "name", authorNames[author]).add(book, to: books)
                    current[title]?.author = authorNames[author]
                }
            case 4:  // delete a book
                guard let title = titles.randomElement(using: &random) else { continue }
                try context.delete(try find("Book", "title", title))
                current[title] = nil
            case 5, 6:  // link or unlink a tag, from either side
                guard let title = titles.randomElement(using: &random), let label = tagLabels.randomElement(using: &random) else { continue }
                let book = try find("Book", "title", title), tag = try find("Tag", "label", label)
                if current[title]?.tags.contains(label) == true {
                    if Bool.random(using: &random) { try book.remove(tag, from: tags) } else { try tag.remove(book, from: tagged) }
                    current[title]?.tags.remove(label)
                } else {
                    if Bool.random(using: &random) { try book.add(tag, to: tags) } else { try tag.add(book, to: tagged) }
                    current[title]?.tags.insert(label)
                }
            case 7, 8:
                try context.save()
                saved = current
                try checkStored(in: store, "step \(step) saved")
            default:
                if Bool.random(using: &random) {
                    context.rollback()
                } else {
                    // What was not saved is gone; where the store persists, the new context is on the store opened again.
                    context = Context(store: try kind.reopen(store, model: store.model) ?? store)
                }
                current = saved
            }
            try check(context, current, "step \(step)")
        }
        #expect(nextTitle > 50 && !saved.isEmpty, "\(kind): the operations built a graph")
        if let reopened = try kind.reopen(store, model: store.model) { try checkStored(in: reopened, "reopened") }
    }

    /// Version 1 of the migration row: authors and their notes.
    static func migrationVersion1() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Relationship.toMany("notes", "Note", inverse: "author")
            }
            EntityDescription("Note") {
                Attribute.string("title").required()
                Attribute.string("body")
                Attribute.integer32("pages")
                Attribute.double("rating")
                Attribute.string("draftOnly")
                Relationship.toOne("author", "Author", inverse: "notes")
            }
        })
    }

    /// Version 2: `body` renamed to `text`, `draftOnly` removed, `status`
    /// added with a default and `summary` added without one.
    static func migrationVersion2() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Relationship.toMany("notes", "Note", inverse: "author")
            }
            EntityDescription("Note") {
                Attribute.string("title").required()
                Attribute.string("text").renamed(from: "body")
                Attribute.integer32("pages")
                Attribute.double("rating")
                Attribute.string("status").defaultValue("draft")
                Attribute.string("summary")
                Relationship.toOne("author", "Author", inverse: "notes")
            }
        })
    }

    /// A store made with one model and opened again with the next keeps
    /// every object: each value reads back (a renamed attribute under its
    /// new name), an added attribute holds its default (or nil without
    /// one), a removed one is gone, links survive, and the migrated store
    /// saves as any other. A store that does not persist has nothing to
    /// migrate: opening its URL with the new model is a new, empty store,
    /// and the store that was open keeps its model and objects.
    @Test(arguments: StoreKind.allCases)
    func reopeningWithTheNextModelMigratesEveryObject(kind: StoreKind) throws {
        let version1 = try Self.migrationVersion1(), version2 = try Self.migrationVersion2()
        let (first, cleanup) = try kind.open(version1)
        defer { cleanup() }
        var random = SplitMix64(seed: 41)
        let authorNames = ["Borges", "Cortázar", "Lispector"]
        // The reference: by title, the values written with version 1.
        var written: [String: (body: Value, pages: Value, rating: Value, author: String?)] = [:]
        do {
            let context = Context(store: first)
            let authors = try authorNames.map { (name) throws -> ManagedObject in
                let author = try context.insert("Author")
                try author.setValue(.string(name), forKey: "name")
                return author
            }
            for index in 0..<60 {
                let title = "N\(index)"
                let body: Value = Bool.random(using: &random) ? .string("body of \(title) " + String(repeating: "é", count: index % 7)) : .null
                let pages: Value = Bool.random(using: &random) ? .int(Int64(Int32.random(in: .min ... .max, using: &random))) : .null
                let rating: Value = Bool.random(using: &random) ? .double(Double(Int.random(in: -1000...1000, using: &random)) / 8) : .null
                let author = Bool.random(using: &random) ? Int.random(in: authors.indices, using: &random) : nil
                let note = try context.insert("Note")
                try note.setValue(.string(title), forKey: "title")
                try note.setValue(body, forKey: "body")
                try note.setValue(pages, forKey: "pages")
                try note.setValue(rating, forKey: "rating")
                try note.setValue(.string("scratch \(index)"), forKey: "draftOnly")
                try note.setObject(author.map { authors[$0] }, forKey: "author")
                written[title] = (body, pages, rating, author.map { authorNames[$0] })
            }
            try context.save()
        }
        guard kind.persists else {
            #expect(try kind.reopen(first, model: version2) == nil, "\(kind)")
            let other = try Store(url: first.url, model: version2)
            #expect(other.identifier != first.identifier && other.model.versionHash == version2.versionHash, "\(kind)")
            #expect(try Context(store: other).count(FetchRequest("Note")) == 0, "\(kind): a new store is empty")
            #expect(try Context(store: other).count(FetchRequest("Author")) == 0, "\(kind): a new store is empty")
            let kept = Context(store: first)
            #expect(first.model.versionHash == version1.versionHash)
            #expect(try kept.count(FetchRequest("Note")) == written.count, "\(kind): the open store keeps its objects")
            #expect(try kept.fetch("Note", where: "title == 'N0'").first?.value(forKey: "draftOnly") == "scratch 0", "\(kind)")
            return
        }
        guard kind.migrates else {
            // Refused, naming what differs, and the store is left as it was.
            #expect { _ = try kind.reopen(first, model: version2) } throws: { error in
                guard case AmberError.modelMismatch(_, let differences) = error else { return false }
                return differences.contains { $0.contains("Note") } && differences.contains { $0.contains("migrate") }
            }
            #expect(try Context(store: try #require(try kind.reopen(first, model: version1))).count(FetchRequest("Note")) == written.count)
            return
        }
        let identifier = first.identifier
        let store = try #require(try kind.reopen(first, model: version2, options: .removingData))
        #expect(store.identifier == identifier && store.model.versionHash == version2.versionHash, "\(kind)")
        func readBack(_ store: Store, _ place: String) throws {
            let context = Context(store: store)
            let notes = try context.fetch("Note")
            #expect(notes.count == written.count, "\(kind) \(place)")
            for note in notes {
                guard case .string(let title) = try note.value(forKey: "title"), let expected = written[title] else {
                    Issue.record("\(kind) \(place): a note no one wrote: \(try note.value(forKey: "title"))")
                    continue
                }
                #expect(try note.value(forKey: "text") == expected.body, "\(kind) \(place) \(title).text")
                #expect(try note.value(forKey: "pages") == expected.pages, "\(kind) \(place) \(title).pages")
                #expect(try note.value(forKey: "rating") == expected.rating, "\(kind) \(place) \(title).rating")
                #expect(try note.value(forKey: "status") == "draft", "\(kind) \(place) \(title).status")
                #expect(try note.value(forKey: "summary") == .null, "\(kind) \(place) \(title).summary")
                #expect(try note.object(forKey: "author")?.value(forKey: "name") == expected.author.map(Value.string), "\(kind) \(place) \(title).author")
                #expect(amberError { _ = try note.value(forKey: "body") } != nil, "\(kind) \(place): the old name is gone")
                #expect(amberError { _ = try note.value(forKey: "draftOnly") } != nil, "\(kind) \(place): a removed attribute is gone")
            }
            for author in try context.fetch("Author") {
                let name = try author.value(forKey: "name")
                let expected = written.filter { $0.value.author.map(Value.string) == name }.count
                #expect(try author.objects(forKey: "notes").count == expected, "\(kind) \(place) \(name)'s notes")
            }
        }
        try readBack(store, "migrated")
        // The migrated store saves as any other: a new note takes the default, a changed one keeps its change.
        let context = Context(store: store)
        let added = try context.insert("Note")
        try added.setValue("N60", forKey: "title")
        let changed = try #require(try context.fetch("Note", where: "title == 'N1'").first)
        try changed.setValue("done", forKey: "status")
        try context.save()
        let reader = Context(store: store)
        #expect(try reader.fetch("Note", where: "title == 'N60'").first?.value(forKey: "status") == "draft", "\(kind)")
        #expect(try reader.fetch("Note", where: "title == 'N1'").first?.value(forKey: "status") == "done", "\(kind)")
        #expect(try reader.count(FetchRequest("Note", where: "status == 'draft'")) == written.count, "\(kind)")
        // Opened once more with version 2, nothing is migrated again and every value is still there.
        try changed.setValue("draft", forKey: "status")
        try context.delete(added)
        try context.save()
        try readBack(try #require(try kind.reopen(store, model: version2)), "opened again")
    }
}
