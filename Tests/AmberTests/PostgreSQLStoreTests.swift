import Foundation
import Testing
@testable import Amber
@testable import AmberPostgreSQLStore
@testable import AmberValues

/// What the PostgreSQL store does beyond the store suite (which runs on it
/// too): several connections on one store as several processes or hosts
/// would hold them, concurrent writers, the server going away, addresses
/// that name no store, and what it refuses by name.
@Suite(.serialized, .enabled(if: TestServer.required, "no PostgreSQL server: set AMBER_TEST_POSTGRES (the test command does)"))
struct PostgreSQLStoreTests {
    /// A new store on the test server and a second `Store` on the same
    /// schema: another connection, as another process or host has.
    func twoConnections(_ model: Model) throws -> (Store, Store, () -> Void) {
        let (url, cleanup) = try TestServer.storeURL()
        let first = try Store(url: url, model: model)
        return (first, try Store(url: url, model: model), cleanup)
    }

    @Test func anotherConnectionMergesExactlyWhatWasSaved() throws {
        let (here, there, cleanup) = try twoConnections(booksModel())
        defer { cleanup() }
        #expect(here.identifier == there.identifier, "one store, two connections")
        let writer = Context(store: here)
        let dune = try insertBook(writer, "Dune", "Herbert", pages: .int(400))
        try insertBook(writer, "Kindred", "Butler")
        try writer.save()
        let reader = Context(store: there)
        let held = try reader.fetch(FetchRequest("Book", sortedBy: [.ascending("title")]))
        var reports: [ChangeReport] = []
        let token = reader.addObserver { reports.append($0) }
        defer { reader.removeObserver(token) }
        try reader.mergeSavedChanges()
        #expect(reports.isEmpty, "nothing was saved since the fetch")
        try dune.setValue(.int(412), forKey: "pages")
        try insertBook(writer, "Excession", "Banks")
        try writer.save()
        try reader.mergeSavedChanges()
        // The history said what changed: one update (with its key) and one insert, not a comparison of everything held.
        #expect(reports.count == 1)
        #expect(reports.first?.refreshed.map(\.object.objectID) == [dune.objectID])
        #expect(reports.first?.refreshed.map(\.keys) == [["pages"]])
        #expect(reports.first?.inserted.count == 1)
        #expect(try held[0].value(forKey: "pages") == .int(412))
        #expect(try reader.count(FetchRequest("Book")) == 3)
    }

    /// Four writers, each with its own connection, add one to the same
    /// counter 25 times, refreshing and trying again on a conflict: optimistic
    /// locking through row versions loses no increment.
    @Test func concurrentIncrementsAreNeverLost() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Counter") {
                Attribute.string("name").required()
                Attribute.integer64("value").required().defaultValue(0)
            }
        })
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        do {
            let context = Context(store: try Store(url: url, model: model))
            try context.insert("Counter").setValue(.string("hits"), forKey: "name")
            try context.save()
        }
        let writers = 4, increments = 25
        let conflicts = Locked(0), failures = Locked<[String]>([]), ready = Locked(0)
        // Threads of their own: the barrier below needs all writers running at once, whatever the cores.
        let finished = Locked(0)
        @Sendable func writer() {
            defer { finished.mutate { $0 += 1 } }
            var held: (Context, ManagedObject)?
            do {
                let context = Context(store: try Store(url: url, model: model))
                held = (context, try #require(try context.fetch("Counter").first))
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
            // Every writer holds the counter at the same version before any writes: the first saves must collide.
            ready.mutate { $0 += 1 }
            while ready.value < writers { usleep(200) }
            guard let (context, counter) = held else { return }
            do {
                for _ in 0..<increments {
                    while true {
                        guard case .int(let value) = try counter.value(forKey: "value") else { return failures.mutate { $0.append("no value") } }
                        try counter.setValue(.int(value + 1), forKey: "value")
                        guard let error = amberError({ try context.save() }) else { break }
                        guard case .saveFailed(let problems) = error, problems.allSatisfy({ $0.rule == .conflict }) else { throw error }
                        conflicts.mutate { $0 += 1 }
                        try context.refresh(counter, mergeChanges: false)
                    }
                }
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
        }
        for _ in 0..<writers { Thread { writer() }.start() }
        while finished.value < writers { usleep(1_000) }
        #expect(failures.value.isEmpty, "\(failures.value)")
        let stored = try Context(store: try Store(url: url, model: model)).fetch("Counter").first
        #expect(try stored?.value(forKey: "value") == .int(Int64(writers * increments)))
        #expect(conflicts.value > 0, "the writers never met: the test proved nothing")
    }

    /// A connection the server dropped (a restart, a network cut): the call
    /// that finds it gone fails saying so and the context keeps its changes;
    /// the next call connects again and the save goes through, once.
    @Test func aDroppedConnectionFailsOneCallThenReconnects() throws {
        let (base, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        // libpq names the session, so only this store's is ended (other tests run beside this one).
        let name = "dropped_\(UUID().uuidString.prefix(8))", url = base + "&application_name=\(name)"
        let store = try Store(url: url, model: booksModel())
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try context.save()
        try insertBook(context, "Kindred", "Butler")
        // The store's session is ended, as a server restart or a network cut would end it.
        let admin = try PGConnection(conninfo: try #require(TestServer.url), place: "admin")
        let ended = try admin.query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?", [.string(name)])
        #expect(ended.int64(0, 0) == 1)
        let error = amberError { try context.save() }
        #expect("\(error.map { "\($0)" } ?? "saved")".contains("went away"), "\(String(describing: error))")
        #expect(context.hasChanges, "the context keeps what it could not save")
        try context.save()
        #expect(try Context(store: try Store(url: url, model: booksModel())).count(FetchRequest("Book")) == 2)
    }

    @Test func addressesThatNameNoStoreSayWhy() throws {
        let base = try #require(TestServer.url)
        guard case .server(_, let state, let message)? = amberError({
            _ = try Store(url: base.replacingOccurrences(of: "/amber", with: "/no_such_database"), model: booksModel())
        }) else { Issue.record("an unknown database opened"); return }
        #expect(state == "08001" && message.contains("no_such_database"), "\(message)")
        // The password is never part of how the store is named.
        let withPassword = base.replacingOccurrences(of: "amber@", with: "amber:hunter2@") + "?schema=Bad-Name"
        guard case .invalidStoreURL(let named, let part, _)? = amberError({ _ = try Store(url: withPassword, model: booksModel()) }) else {
            Issue.record("a schema name that needs quoting was taken"); return
        }
        #expect(part == "schema=Bad-Name" && !named.contains("hunter2"))
        // A schema holding other tables is not taken for a store.
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let admin = try PGConnection(conninfo: base, place: "admin")
        let schema = try #require(url.split(separator: "=").last)
        try admin.execute("CREATE SCHEMA \(schema); CREATE TABLE \(schema).orders (id int)")
        #expect(throws: AmberError.self) { _ = try Store(url: url, model: booksModel()) }
    }

    @Test func aTableAlteredBehindAmbersBackIsNamed() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let store = try Store(url: url, model: booksModel())
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try context.save()
        let admin = try PGConnection(conninfo: try #require(TestServer.url), place: "admin")
        let schema = try #require(url.split(separator: "=").last)
        try admin.execute("ALTER TABLE \(schema).\"Book\" ALTER COLUMN pages TYPE text; UPDATE \(schema).\"Book\" SET pages = 'many'")
        guard case .invalidValue(let place, _, let given)? = amberError({ _ = try Context(store: store).fetch("Book") }) else {
            Issue.record("a column of the wrong type was read"); return
        }
        #expect(place == "Book.pages of row 1" && given.contains("many"), "\(place): \(given)")
    }

    /// An entity's many new rows travel by COPY: every type, text holding
    /// COPY's own escapes, every byte value, links to stored and new objects,
    /// all read back exactly (seeded).
    @Test func manyNewRowsTravelByCopyExactly() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let model = try Model(ModelDescription {
            EntityDescription("Shelf") {
                Attribute.string("name")
                Relationship.toMany("items", "Item", inverse: "shelf")
            }
            EntityDescription("Item") {
                Attribute.string("text")
                Attribute.binary("bytes")
                Attribute.integer16("small")
                Attribute.integer64("big")
                Attribute.double("real")
                Attribute.float("single")
                Attribute.date("when")
                Attribute.decimal("amount")
                Attribute.uuid("id")
                Attribute.uri("link")
                Attribute.boolean("flag")
                Relationship.toOne("shelf", "Shelf", inverse: "items")
            }
        })
        let store = try Store(url: url, model: model)
        let first = Context(store: store)
        let stored = try first.insert("Shelf")
        try stored.setValue("stored", forKey: "name")
        try first.save()
        let context = Context(store: store)
        let shelves = [try #require(try context.fetch("Shelf").first), try context.insert("Shelf")]
        try shelves[1].setValue("new", forKey: "name")
        var random = SplitMix64(seed: 38)
        let pieces = ["\t", "\n", "\r", "\\", "\\N", "\\x00", "é", "🙂", "\"", " ", "a", ",", "{", "}"]
        var expected: [String: [String: Value]] = [:]
        for index in 0..<700 {
            let item = try context.insert("Item")
            var values: [String: Value] = [
                "text": .string("\(index):" + (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "" }.joined()),
                "bytes": .binary(Data((0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })),
                "small": .int(Int64.random(in: Int64(Int16.min)...Int64(Int16.max), using: &random)),
                "big": .int(Int64.random(in: Int64.min...Int64.max, using: &random)),
                "real": .double([Double.infinity, -.infinity, -0.0, .leastNormalMagnitude / 4, .pi, Double.random(in: -1e300...1e300, using: &random)]
                    .randomElement(using: &random) ?? 0),
                "single": .float(Float.random(in: -1e30...1e30, using: &random)),
                "when": .date(Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &random))),
                "amount": .decimal(try #require(ScaledDecimal("\(Int.random(in: -99_999...99_999, using: &random)).\(Int.random(in: 10...99, using: &random))"))),
                "id": .uuid(UUID()),
                "link": .uri(try #require(URL(string: "https://example.org/\(index)?q=a%20b"))),
                "flag": .bool(Bool.random(using: &random)),
            ]
            if index % 7 == 0 { values["text"] = .null; values["bytes"] = .null; values["amount"] = .null }
            for (key, value) in values { try item.setValue(value, forKey: key) }
            if index % 3 != 2 { try item.setObject(shelves[index % 3], forKey: "shelf") }
            values["shelf"] = index % 3 == 2 ? .null : .string(index % 3 == 0 ? "stored" : "new")
            expected["\(index)"] = values
        }
        try context.save()
        let reader = Context(store: store)
        let items = try reader.fetch("Item")
        #expect(items.count == 700)
        for item in items {
            let found = try item.value(forKey: "big")
            guard let (_, values) = expected.first(where: { $0.value["big"] == found }) else {
                Issue.record("an item no one wrote: \(found)")
                continue
            }
            for (key, value) in values where key != "shelf" {
                let read = try item.value(forKey: key)
                #expect(read.isIdentical(to: value), "\(key): \(read) for \(value)")
            }
            #expect(try item.object(forKey: "shelf")?.value(forKey: "name") ?? .null == values["shelf"])
        }
        #expect(try reader.fetch("Shelf", where: "name == 'stored'").first?.objects(forKey: "items").count == 234)
    }

    /// A floating overflow in a batch that also computes an integer names
    /// the attributes, as the server reported it (it used to list no problem).
    @Test func aBatchFloatingOverflowIsNamed() throws {
        let (store, cleanup, _) = try BatchChangeTests.library(.postgresql, count: 20)
        defer { cleanup() }
        let context = Context(store: store)
        guard case .saveFailed(let problems)? = amberError({
            try context.batchUpdate(FetchRequest("Book"), set: ["copies": .attribute("copies") + 1, "ratio": .attribute("ratio") * 1e308])
        }) else {
            Issue.record("a floating overflow was not refused")
            return
        }
        #expect(problems.count == 1 && problems[0].place.contains("Book.ratio") && problems[0].message.contains("overflow"), "\(problems)")
    }

    @Test func hostileTextIsStoredAsText() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let store = try Store(url: url, model: booksModel())
        let context = Context(store: store)
        let hostile = ["'); DROP TABLE \"Book\"; --", "$1", "?", "\\x00", "' OR '1'='1", "é\u{301}🙂"]
        for title in hostile { try insertBook(context, title, "O'Brien") }
        try context.save()
        let reader = Context(store: store)
        #expect(try Set(reader.fetch("Book").map { try $0.value(forKey: "title") }) == Set(hostile.map(Value.string)))
        #expect(try reader.count(FetchRequest("Book", where: "title == %@", .string(hostile[0]))) == 1)
        // NUL cannot be kept by PostgreSQL's text: refused, naming the attribute, nothing written.
        try insertBook(context, "a\u{0}b", "Nobody")
        #expect { try context.save() } throws: { "\($0)".contains("Book.title") && "\($0)".contains("NUL") }
        #expect(try reader.count(FetchRequest("Book")) == hostile.count)
    }

    /// numeric keeps a decimal's scale but writes no exponent and no
    /// negative zero: those two are refused, naming the attribute, and the rest read back as written.
    @Test func decimalsNumericCannotKeepAreRefusedNamed() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let store = try Store(url: url, model: booksModel())
        let context = Context(store: store)
        for (index, text) in ["12.30", "0.00100", "999.9"].enumerated() {
            try insertBook(context, "Kept \(index)", "A", price: .decimal(try Value.decimal(parsing: text)))
        }
        try context.save()
        let kept = try Context(store: store).fetch(FetchRequest("Book", sortedBy: [SortKey("title")])).map { try $0.value(forKey: "price").description }
        #expect(kept == ["12.30", "0.00100", "999.9"])
        for (text, why) in [("9E+2", "exponent"), ("-0.00", "negative zero")] {
            let refused = Context(store: store)
            try insertBook(refused, "Refused \(text)", "A", price: .decimal(try Value.decimal(parsing: text)))
            #expect { try refused.save() } throws: { "\($0)".contains("Book.price") && "\($0)".contains(why) }
        }
    }

    /// Derived values are the server's: its triggers keep them in every
    /// transaction that writes the store, a program writing plain SQL too,
    /// and a batch change reports the rows they moved.
    @Test func theServerKeepsDerivedValuesWhoeverWrites() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let model = try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Attribute.integer64("bookCount").derived("books.@count")
                Attribute.integer64("pageTotal").derived("books.@sum.pages")
                Attribute.date("touched").derived("now()")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("pages")
                Attribute.string("authorName").derived("author.name")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        })
        let store = try Store(url: url, model: model)
        let context = Context(store: store)
        let author = try context.insert("Author")
        try author.setValue("Le Guin", forKey: "name")
        for (title, pages) in [("Lathe", 184), ("Tehanu", 252)] {
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            try book.setValue(.int(Int64(pages)), forKey: "pages")
            try book.setObject(author, forKey: "author")
        }
        try context.save()
        #expect(try author.value(forKey: "bookCount") == 2 && author.value(forKey: "pageTotal") == 436)
        let touched = try author.value(forKey: "touched")
        // Another program, in plain SQL: the server's triggers keep every derived value, and the touch time.
        let admin = try PGConnection(conninfo: try #require(TestServer.url), place: "admin")
        let schema = try #require(url.split(separator: "=").last)
        try admin.execute("INSERT INTO \(schema).\"Book\" (_pk, _entity, _version, title, pages, author) "
            + "SELECT 100, 2, 1, 'Earthsea', 200, _pk FROM \(schema).\"Author\"; UPDATE \(schema).\"Author\" SET name = 'Ursula'")
        let reader = Context(store: store)
        let stored = try #require(try reader.fetch("Author").first)
        #expect(try stored.value(forKey: "bookCount") == 3 && stored.value(forKey: "pageTotal") == 636)
        #expect(try stored.value(forKey: "touched") != touched)
        #expect(try Set(reader.fetch("Book").map { try $0.value(forKey: "authorName") }) == ["Ursula"])
        // A batch change moves them too, and the contexts holding the objects hear of it.
        try context.mergeSavedChanges()
        let result = try context.batchUpdate(FetchRequest("Book", where: "title == 'Lathe'"), set: ["pages": .attribute("pages") + 16])
        #expect(result.objectIDs.count == 1)
        #expect(try author.value(forKey: "pageTotal") == 652, "the context holding the author reads the new total")
        _ = try context.batchDelete(FetchRequest("Book", where: "pages < 210"))
        #expect(try author.value(forKey: "bookCount") == 1 && author.value(forKey: "pageTotal") == 252)
    }
}

/// The server stopped as a power cut would stop it (`scripts/postgres.sh
/// crash`) while a large save is in flight, and started again. Alone in its
/// own run (the test command runs it after the others, naming the server's
/// folder in `AMBER_TEST_POSTGRES_DIR`): it cuts every connection.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["AMBER_TEST_POSTGRES_DIR"] != nil,
                "run alone by the test command, with AMBER_TEST_POSTGRES_DIR naming the server's folder"))
struct PostgreSQLCrashTests {
    @Test func aServerKilledDuringASaveLosesNothingAndKeepsTheChanges() throws {
        let directory = try #require(ProcessInfo.processInfo.environment["AMBER_TEST_POSTGRES_DIR"])
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let store = try Store(url: url, model: booksModel())
        let context = Context(store: store)
        try insertBook(context, "Before", "Anyone")
        try context.save()
        let count = 20_000
        for index in 0..<count { try insertBook(context, "Book \(index)", "Author \(index % 97)", pages: .int(Int64(index % 900 + 1))) }
        // The server goes down a moment into the save, and comes back.
        let crashed = Locked<String?>(nil)
        let crasher = Thread {
            usleep(150_000)
            // system(3), not Process: Foundation's waitUntilExit never returned on this thread here.
            let status = system("bash scripts/postgres.sh crash '\(directory)'")
            crashed.mutate { $0 = status == 0 ? "" : "postgres.sh crash exited with \(status)" }
        }
        crasher.start()
        let failure = amberError { try context.save() }
        while crashed.value == nil { usleep(10_000) }
        #expect(crashed.value == "", "\(crashed.value ?? "")")
        // Nothing partial: the store holds the first save alone, or every book.
        let stored = try Context(store: try Store(url: url, model: booksModel())).count(FetchRequest("Book"))
        if let failure {
            #expect("\(failure)".contains("went away") || "\(failure)".contains("08006") || "\(failure)".contains("57P01"), "\(failure)")
            #expect(stored == 1, "a failed save left \(stored - 1) of its books")
            #expect(context.hasChanges, "the context keeps what it could not save")
            try context.save()
        } else {
            Issue.record("the save finished before the server went down: the crash came too late to test anything")
        }
        #expect(try Context(store: try Store(url: url, model: booksModel())).count(FetchRequest("Book")) == count + 1)
    }
}
