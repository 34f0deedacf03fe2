import Foundation
import Testing
@testable import Amber
@testable import AmberPostgreSQLStore
@testable import AmberSQL
@testable import AmberSQLiteStore
@testable import AmberValues

/// The server the PostgreSQL tests use: `AMBER_TEST_POSTGRES`, which the test
/// command sets to a throwaway cluster (scripts/postgres.sh). Without it the
/// tests are skipped, except in CI (`CI` set), where they fail.
enum TestServer {
    static let url = ProcessInfo.processInfo.environment["AMBER_TEST_POSTGRES"]
    static let required = url != nil || ProcessInfo.processInfo.environment["CI"] != nil

    /// The URL of a new store on the test server, in a schema of its own
    /// (`cleanup` drops it and everything in it).
    static func storeURL() throws -> (url: String, cleanup: () -> Void) {
        let url = try #require(url, "AMBER_TEST_POSTGRES names no server: the test command starts one (scripts/postgres.sh)")
        let schema = "amber_store_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        return (url + (url.contains("?") ? "&" : "?") + "schema=\(schema)", {
            let connection = try? PGConnection(conninfo: url, place: "test server")
            try? connection?.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        })
    }

    /// A connection to the test server, in a schema of its own (dropped by `cleanup`).
    static func connect() throws -> (connection: PGConnection, cleanup: () -> Void) {
        let url = try #require(url, "AMBER_TEST_POSTGRES names no server: the test command starts one (scripts/postgres.sh)")
        let connection = try PGConnection(conninfo: url, place: "test server")
        let schema = "amber_test_\(UUID().uuidString.prefix(8).lowercased())"
        try connection.execute("CREATE EXTENSION IF NOT EXISTS unaccent; CREATE SCHEMA \(schema); SET search_path TO \(schema), public")
        return (connection, { try? connection.execute("DROP SCHEMA \(schema) CASCADE") })
    }
}

/// What SQL stores share, proven on a second database: the predicate
/// compiler, fetch queries and the table layout, with PostgreSQL's dialect,
/// against a live server.
// Serialized: each test creates the unaccent extension if it is missing, which two at once would race for.
@Suite(.serialized, .enabled(if: TestServer.required, "no PostgreSQL server: set AMBER_TEST_POSTGRES (the test command does)"))
struct PostgreSQLTests {
    /// Authors and books, with every kind of value the predicates below compare.
    static func model() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Attribute.integer32("born")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title").required()
                Attribute.string("subtitle")
                Attribute.integer64("pages")
                Attribute.decimal("price")
                Attribute.double("rating")
                Attribute.boolean("isRead")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        })
    }

    /// One row as the reference holds it.
    struct Row {
        var key: Int64
        var values: [String: Value]
        func text(_ key: String) -> String? { if case .string(let s) = values[key] { s } else { nil } }
        func int(_ key: String) -> Int64? { if case .int(let i) = values[key] { i } else { nil } }
        func decimal(_ key: String) -> Decimal? { if case .decimal(let d) = values[key] { d.number } else { nil } }
    }

    @Test func theSharedCompilerMatchesABruteForceFilter() throws {
        let (connection, cleanup) = try TestServer.connect()
        defer { cleanup() }
        let model = try Self.model(), dialect = PostgreSQLDialect()
        let author = try model.entity(named: "Author"), book = try model.entity(named: "Book")
        let authors = TableMapping(entity: author, model: model, dialect: dialect), books = TableMapping(entity: book, model: model, dialect: dialect)
        for sql in authors.createSQL + books.createSQL + TableMapping.joinTableSQL(model: model, dialect: dialect) { try connection.execute(sql) }

        var random = SplitMix64(seed: 38)
        let names = ["Le Guin", "Banks", "Éowyn", "eowyn", "O'Brien"]
        let titles = ["Dune", "dune", "Éclat", "eclat", "L'Étranger", "Zoë", "100% pure", "a_b", "Solaris", "The Dispossessed"]
        var authorRows: [Row] = [], bookRows: [Row] = []
        func insert(_ mapping: TableMapping, _ row: Row, entity: Entity) throws {
            let bindings: [Value] = [.int(row.key), .int(Int64(entity.index + 1))] + mapping.columns.map { row.values[$0.name] ?? .null }
            _ = try connection.query(mapping.insertSQL, bindings)
        }
        for (index, name) in names.enumerated() {
            let row = Row(key: Int64(index + 1), values: ["name": .string(name), "born": Bool.random(using: &random) ? .null
                : .int(Int64.random(in: 1900...2000, using: &random))])
            try insert(authors, row, entity: author)
            authorRows.append(row)
        }
        for key in 1...200 {
            var values: [String: Value] = [
                "title": .string(titles[Int.random(in: 0..<titles.count, using: &random)]),
                "pages": .int(Int64.random(in: 1...900, using: &random)),
                "rating": .double(Double(Int.random(in: 0...50, using: &random)) / 10),
                "isRead": .bool(Bool.random(using: &random)),
            ]
            if Bool.random(using: &random) { values["subtitle"] = .string(titles[Int.random(in: 0..<titles.count, using: &random)]) }
            // Decimals with their written scale: 12.30 stays 12.30, and equals 12.3.
            if Int.random(in: 0..<3, using: &random) > 0 {
                let cents = Int.random(in: 0...5000, using: &random)
                values["price"] = .decimal(try #require(ScaledDecimal("\(cents / 100).\(String(format: "%02d", cents % 100))")))
            }
            if Int.random(in: 0..<4, using: &random) > 0 { values["author"] = .int(Int64.random(in: 1...Int64(names.count), using: &random)) }
            let row = Row(key: Int64(key), values: values)
            try insert(books, row, entity: book)
            bookRows.append(row)
        }

        func fold(_ text: String?, _ flags: Int64) -> String? { text.map { TextFolding.fold($0, flags: flags) } }
        let ci = ComparisonOptions.caseInsensitive.rawValue, cd = ci | ComparisonOptions.diacriticInsensitive.rawValue
        func authorOf(_ row: Row) -> Row? { row.int("author").flatMap { key in authorRows.first { $0.key == key } } }
        func booksOf(_ row: Row) -> [Row] { bookRows.filter { $0.int("author") == row.key } }
        let bookCases: [(String, [Value], (Row) -> Bool)] = [
            ("pages < %@", [.int(300)], { ($0.int("pages") ?? 0) < 300 }),
            ("pages >= %@ AND isRead == YES", [.int(450)], { ($0.int("pages") ?? 0) >= 450 && $0.values["isRead"] == .bool(true) }),
            ("NOT (pages < %@)", [.int(700)], { !(($0.int("pages") ?? 0) < 700) }),
            ("pages BETWEEN {100, 200}", [], { (100...200).contains($0.int("pages") ?? 0) }),
            ("price > %@", [.decimal(ScaledDecimal(Decimal(25)))], { ($0.decimal("price") ?? -1) > 25 }),
            ("price == 12.3 OR price == 7", [], { $0.decimal("price") == Decimal(string: "12.3") || $0.decimal("price") == 7 }),
            ("price == nil", [], { $0.values["price"] == nil }),
            ("rating >= 2.5", [], { if case .double(let r) = $0.values["rating"] { r >= 2.5 } else { false } }),
            ("subtitle != %@", [.string("Dune")], { $0.text("subtitle") != "Dune" }),
            ("title CONTAINS[c] %@", [.string("DU")], { fold($0.text("title"), ci)?.contains("du") ?? false }),
            ("title BEGINSWITH %@", [.string("D")], { $0.text("title")?.hasPrefix("D") ?? false }),
            ("title ENDSWITH[cd] %@", [.string("AT")], { fold($0.text("title"), cd)?.hasSuffix("at") ?? false }),
            ("title ==[cd] %@", [.string("ECLAT")], { fold($0.text("title"), cd) == "eclat" }),
            ("title LIKE %@", [.string("?une")], { ["Dune", "dune"].contains($0.text("title") ?? "") }),
            ("title LIKE %@", [.string("100% *")], { $0.text("title") == "100% pure" }),
            ("title LIKE %@", [.string("a_b")], { $0.text("title") == "a_b" }),
            ("title MATCHES[c] %@", [.string("d.*e")], { ["Dune", "dune"].contains($0.text("title") ?? "") }),
            ("title IN %@", [.array([.string("Zoë"), .string("Solaris")])], { ["Zoë", "Solaris"].contains($0.text("title") ?? "") }),
            ("author.name ==[cd] %@", [.string("EOWYN")], { fold(authorOf($0)?.text("name"), cd) == "eowyn" }),
            ("author.born > %@", [.int(1950)], { (authorOf($0)?.int("born") ?? .min) > 1950 }),
            ("author == nil", [], { $0.values["author"] == nil }),
        ]
        for (format, arguments, expected) in bookCases {
            let request = FetchRequest("Book", predicate: try FetchPredicate(format, arguments: arguments))
            try #expect(keys(request, books, model, connection) == bookRows.filter(expected).map(\.key), "Book: \(format) \(arguments)")
        }
        let authorCases: [(String, [Value], (Row) -> Bool)] = [
            ("ANY books.pages > %@", [.int(850)], { booksOf($0).contains { ($0.int("pages") ?? 0) > 850 } }),
            ("ALL books.isRead == YES", [], { booksOf($0).allSatisfy { $0.values["isRead"] == .bool(true) } }),
            ("books.@count > %@", [.int(40)], { booksOf($0).count > 40 }),
            ("books.@sum.pages > %@", [.int(20_000)], { booksOf($0).reduce(0) { $0 + ($1.int("pages") ?? 0) } > 20_000 }),
            ("name BEGINSWITH[c] %@", [.string("é")], { fold($0.text("name"), ci)?.hasPrefix("é") ?? false }),
        ]
        for (format, arguments, expected) in authorCases {
            let request = FetchRequest("Author", predicate: try FetchPredicate(format, arguments: arguments))
            try #expect(keys(request, authors, model, connection) == authorRows.filter(expected).map(\.key), "Author: \(format) \(arguments)")
        }

        // Order, limit and offset; and a count, as a store asks for them.
        var ordered = try FetchRequest("Book", where: "pages > %@", .int(100), sortedBy: [SortKey("title"), SortKey("pages", ascending: false)])
        ordered.limit = 7
        ordered.offset = 5
        let reference = bookRows.filter { ($0.int("pages") ?? 0) > 100 }.sorted {
            ($0.text("title") ?? "", -($0.int("pages") ?? 0), $0.key) < ($1.text("title") ?? "", -($1.int("pages") ?? 0), $1.key)
        }
        #expect(try keys(ordered, books, model, connection) == Array(reference.dropFirst(5).prefix(7).map(\.key)))
        let count = try FetchQuery(request: ordered, mapping: books, model: model, columns: "", counting: true)
        #expect(try connection.query(count.sql, count.bindings).int64(0, 0) == 7)
    }

    /// The keys `request` selects, in the query's order (by key unless it sorts).
    private func keys(_ request: FetchRequest, _ mapping: TableMapping, _ model: Model, _ connection: PGConnection) throws -> [Int64] {
        let query = try FetchQuery(request: request, mapping: mapping, model: model, columns: "_pk")
        let rows = try connection.query(query.sql, query.bindings)
        return (0..<rows.count).map { rows.int64($0, 0) }
    }

    @Test func decimalsKeepTheirScaleAndTextKeepsEveryCharacter() throws {
        let (connection, cleanup) = try TestServer.connect()
        defer { cleanup() }
        try connection.execute("CREATE TABLE t (d numeric, s text, b bytea)")
        let text = "Zoë \u{1F600} 'quoted' ?", bytes = Data([0, 1, 0xFF, 0x5C, 0x27])
        _ = try connection.query("INSERT INTO t VALUES (?, ?, ?)", [.decimal(try #require(ScaledDecimal("12.30"))), .string(text), .binary(bytes)])
        let rows = try connection.query("SELECT d::text, s, encode(b, 'hex') FROM t WHERE s = ?", [.string(text)])
        #expect(rows.count == 1)
        #expect(rows.text(0, 0) == "12.30")
        #expect(rows.text(0, 1) == text)
        #expect(rows.text(0, 2) == "0001ff5c27")
        #expect(throws: AmberError.self) { try connection.query("SELECT ?", [.string("a\u{0}b")]) }
    }

    /// The server error `body` throws, if it throws one.
    private func serverError(_ body: () throws(AmberError) -> Void) -> (store: String, state: String, message: String)? {
        do {
            try body()
        } catch {
            if case .server(let store, let state, let message) = error { return (store, state, message) }
            Issue.record("not a server error: \(error)")
        }
        return nil
    }

    /// Values read in their binary forms (how fetches read rows) equal the
    /// server's own text of them: numeric of every sign, weight and scale
    /// (seeded), and integers and floats at their edges.
    @Test func binaryFormsReadAsTheServerWritesThem() throws {
        let (connection, cleanup) = try TestServer.connect()
        defer { cleanup() }
        var random = SplitMix64(seed: 77)
        var numbers = ["0", "0.00", "1", "-1", "12.30", "0.00100", "-999.9", "10000", "99999999", "0.0001", "123456789012345678901234567890.12345678"]
        for _ in 0..<300 {
            let whole = (0..<Int(random.next() % 12)).map { _ in String(random.next() % 10) }.joined()
            let fraction = (0..<Int(random.next() % 12)).map { _ in String(random.next() % 10) }.joined()
            let text = (whole.isEmpty ? "0" : whole) + (fraction.isEmpty ? "" : "." + fraction)
            numbers.append(random.next() % 3 == 0 ? "-" + text : text)
        }
        for number in numbers {
            let sql = "SELECT ?::numeric"
            let text = try connection.query(sql, [.string(number)]).text(0, 0)
            let binary = try connection.query(sql, [.string(number)], binaryResults: true)
            let read = try binary.withBytes(0, 0) { (bytes) throws(AmberError) in PGBinary.numericText(bytes) }
            #expect(read == text, "\(number): \(read ?? "nil") for \(text)")
        }
        for (sql, expected) in [("SELECT (-32768)::smallint", Int64(Int16.min)), ("SELECT 2147483647::integer", Int64(Int32.max)),
                                ("SELECT (-9223372036854775808)::bigint", Int64.min), ("SELECT 42::bigint", 42)] {
            #expect(try connection.query(sql, binaryResults: true).int64(0, 0) == expected, "\(sql)")
        }
        for value in [0.1, -0.0, .pi, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.infinity] {
            let rows = try connection.query("SELECT ?::double precision, ?::real", [.double(value), .float(Float(value))], binaryResults: true)
            #expect(try rows.withBytes(0, 0) { (bytes) throws(AmberError) in PGBinary.real(bytes) }?.bitPattern == value.bitPattern)
            #expect(try rows.withBytes(0, 1) { (bytes) throws(AmberError) in PGBinary.real(bytes) } == Double(Float(value)))
        }
    }

    @Test func serverErrorsCarryTheirSQLStateAndWords() throws {
        let (connection, cleanup) = try TestServer.connect()
        defer { cleanup() }
        let missing = serverError { () throws(AmberError) in _ = try connection.query("SELECT * FROM no_such_table WHERE x = ?", [.int(1)]) }
        #expect(missing?.state == "42P01" && missing?.message.contains("no_such_table") == true, "\(String(describing: missing))")
        try connection.execute("CREATE TABLE u (k integer UNIQUE)")
        _ = try connection.query("INSERT INTO u VALUES (?)", [.int(1)])
        let duplicate = serverError { () throws(AmberError) in _ = try connection.query("INSERT INTO u VALUES (?)", [.int(1)]) }
        #expect(duplicate?.state == "23505", "\(String(describing: duplicate))")
        // A database that does not exist, and a port with no server: the reason, not a crash.
        let url = try #require(TestServer.url)
        let unknown = serverError { () throws(AmberError) in
            _ = try PGConnection(conninfo: url.replacingOccurrences(of: "/amber", with: "/no_such_database"), place: "missing")
        }
        #expect(unknown?.store == "missing" && unknown?.state == "08001" && unknown?.message.contains("no_such_database") == true,
                "\(String(describing: unknown))")
        let nowhere = serverError { () throws(AmberError) in
            _ = try PGConnection(conninfo: "postgresql://amber@127.0.0.1:1/amber?connect_timeout=2", place: "nowhere")
        }
        #expect(nowhere?.state == "08001" && nowhere?.message.contains("connect") == true, "\(String(describing: nowhere))")
    }

    @Test func parametersAreNumberedOutsideQuotesOnly() {
        #expect(PGConnection.numberingParameters(#"SELECT '?', "a?" FROM t WHERE x = ? AND y IN (?, 'it''s ?')"#)
            == #"SELECT '?', "a?" FROM t WHERE x = $1 AND y IN ($2, 'it''s ?')"#)
    }
}

/// Core Data's LIKE read once for every dialect: wildcards, escapes, and each dialect's own syntax for them.
@Test func likePatternsAreReadOnceAndWrittenPerDialect() {
    #expect(LikePattern.parts(of: #"a\*b?c*[\"#) == [.literal("a"), .literal("*"), .literal("b"), .oneCharacter, .literal("c"), .anyRun, .literal("[")])
    #expect(PostgreSQLDialect().like("t", pattern: #"100% *_\?"#).pattern == #"100\% %\_?"#)
    #expect(SQLiteDialect().like("t", pattern: #"a\*b?[c]"#).pattern == "a[*]b?[[]c]")
}
