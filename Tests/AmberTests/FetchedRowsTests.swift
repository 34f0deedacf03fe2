import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Fetched objects read their values from the fetch's compact rows until they
/// change: these tests compare that representation with the values written,
/// with a plain SQLite query, and with the object's own slot array after it changes.
@Suite struct FetchedRowsTests {
    /// A random value of `attribute`'s type (nil one time in six).
    private func randomValue(_ type: AttributeType, _ random: inout SplitMix64) -> Value {
        if Int.random(in: 0..<6, using: &random) == 0 { return .null }
        func text() -> String {
            let alphabet = Array("abcXYZ09 _é€😀\u{301}")
            return String((0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" })
        }
        switch type {
        case .integer16: return .int(Int64(Int16.random(in: .min ... .max, using: &random)))
        case .integer32: return .int(Int64(Int32.random(in: .min ... .max, using: &random)))
        case .integer64: return .int(Int64.random(in: .min ... .max, using: &random))
        case .decimal: return .decimal(Decimal(Int64.random(in: -1_000_000...1_000_000, using: &random)) / 1000)
        case .double: return .double(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF) * (Bool.random(using: &random) ? 1 : -1))
        case .float: return .float(Float.random(in: -1e6...1e6, using: &random))
        case .string: return .string(text())
        case .boolean: return .bool(Bool.random(using: &random))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &random)))
        case .binary: return .binary(Data((0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case .uuid: return .uuid(UUID())
        case .uri: return .uri(URL(string: "https://example.org/\(Int.random(in: 0...999, using: &random))?q=\(random.next())") ?? URL(fileURLWithPath: "/"))
        case .transformable, .undefined, .objectID: return .null
        }
    }

    /// What a plain SQLite query returns for a column of `type`, read into a Value independently of the store's code.
    private func plainValue(_ statement: OpaquePointer?, _ column: Int32, _ type: AttributeType) -> Value {
        if sqlite3_column_type(statement, column) == SQLITE_NULL { return .null }
        let text = { String(cString: sqlite3_column_text(statement, column)) }
        let bytes = { Data(bytes: sqlite3_column_blob(statement, column), count: Int(sqlite3_column_bytes(statement, column))) }
        switch type {
        case .integer16, .integer32, .integer64: return .int(sqlite3_column_int64(statement, column))
        case .boolean: return .bool(sqlite3_column_int64(statement, column) != 0)
        case .double: return .double(sqlite3_column_double(statement, column))
        case .float: return .float(Float(sqlite3_column_double(statement, column)))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, column)))
        case .string: return .string(text())
        case .decimal: return Decimal(string: text()).map(Value.decimal) ?? .string(text())
        case .uri: return URL(string: text()).map(Value.uri) ?? .string(text())
        case .binary: return sqlite3_column_bytes(statement, column) == 0 ? .binary(Data()) : .binary(bytes())
        case .uuid: return bytes().withUnsafeBytes { .uuid(UUID(uuid: $0.loadUnaligned(as: uuid_t.self))) }
        case .transformable, .undefined, .objectID: return .null
        }
    }

    @Test func fetchedValuesEqualWhatWasSavedAndAPlainSQLiteQuery() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("rows.amber").path
        let model = try everyTypeModel()
        let entity = try model.entity(named: "Sample")
        var random = SplitMix64(seed: 11)
        var written: [Int64: [Value]] = [:]
        do {
            let context = Context(store: try Store(path: path, model: model))
            var inserted: [(ManagedObject, [Value])] = []
            for _ in 0..<500 {
                let object = try context.insert(entity)
                let values = entity.attributes.map { randomValue($0.type, &random) }
                for (attribute, value) in zip(entity.attributes, values) { try object.setValue(value, for: attribute) }
                inserted.append((object, values))
            }
            try context.save()
            for (object, values) in inserted { written[try #require(object.objectID.primaryKey)] = values }
        }

        let store = try Store(path: path, model: model)
        let context = Context(store: store)
        let objects = try context.fetch(FetchRequest("Sample"))
        #expect(objects.count == 500)
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        let columns = entity.attributes.map { "\"\($0.name)\"" }.joined(separator: ", ")
        #expect(sqlite3_prepare_v2(db, "SELECT _pk, \(columns) FROM Sample ORDER BY _pk", -1, &statement, nil) == SQLITE_OK)
        defer { sqlite3_finalize(statement) }
        var plain: [Int64: [Value]] = [:]
        while sqlite3_step(statement) == SQLITE_ROW {
            plain[sqlite3_column_int64(statement, 0)] = entity.attributes.enumerated().map { plainValue(statement, Int32($0.offset + 1), $0.element.type) }
        }

        for object in objects {
            #expect(object.row != nil, "a fetched object reads its row until it changes")
            let pk = try #require(object.objectID.primaryKey)
            let read = try entity.attributes.map { try object.value(for: $0) }
            #expect(read == written[pk], "object \(pk): values differ from those saved")
            #expect(read == plain[pk], "object \(pk): values differ from a plain SQLite query")
            for (value, expected) in zip(read, written[pk] ?? []) { #expect(value.className == expected.className) }
            #expect(object.row != nil, "reading does not give the object its own values")
        }
        // Changing one attribute gives the object its own values: the others read the same as before.
        for object in objects.prefix(50) {
            let before = try entity.attributes.map { try object.value(for: $0) }
            try object.setValue(.string("changed"), forKey: "name")
            #expect(object.row == nil)
            let after = try entity.attributes.map { try object.value(for: $0) }
            for (index, attribute) in entity.attributes.enumerated() where attribute.name != "name" {
                #expect(after[index] == before[index], "\(attribute) changed when name was set")
            }
            #expect(try object.committedValues()["name"] == before[6])
            #expect(object.changedValues().keys.sorted() == (before[6] == .string("changed") ? [] : ["name"]))
        }
        context.rollback()
        for object in objects.prefix(50) {
            #expect(try object.value(forKey: "name") == written[try #require(object.objectID.primaryKey)]?[6])
        }
    }

    /// Each case writes one column with a plain SQL UPDATE that Amber would never write; the fetch is refused,
    /// naming the attribute and the row (its key: the row to mend or delete).
    @Test(arguments: [
        ("name", "CAST(x'C328' AS TEXT)", "not valid UTF-8"),
        ("weight", "0.1", "not exact as a Float"),
        ("i16", "40000", "out of range"),
        ("key", "x'0102'", "2 bytes"),
        ("price", "'twelve'", "\"twelve\""),
        ("flag", "'yes'", "text"),
        ("flag", "2", "2, out of range"),
        ("link", "'not a uri with spaces'", "\"not a uri with spaces\""),
    ])
    func storedValuesAmberWouldNeverWriteAreRefusedNamingTheAttribute(column: String, sql: String, given: String) throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("corrupt.amber").path
        let model = try everyTypeModel()
        do {
            let context = Context(store: try Store(path: path, model: model))
            _ = try context.insert("Sample")
            try context.save()
        }
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "UPDATE Sample SET \"\(column)\" = \(sql)", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        let context = Context(store: try Store(path: path, model: model))
        let error = amberError { _ = try context.fetch(FetchRequest("Sample")) }
        guard case .invalidValue(let place, _, let found) = error else {
            Issue.record("expected invalidValue, got \(String(describing: error))")
            return
        }
        #expect(place == "Sample.\(column) of row 1")
        #expect(found.contains(given), "\(found)")
    }

    @Test func transformedValuesDecodeOnceWhileReadingTheRowAndSurviveTheFirstChange() throws {
        let counter = CallCounter()
        let registry = try colorRegistry(counter: counter)
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title").required()
                Attribute.transformable("cover", valueClass: "Color", transformers: ["ColorToData"])
                Attribute.string("note").transient().defaultValue(.string("draft"))
            }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let writer = Context(store: store)
        for i in 0..<20 {
            let book = try writer.insert("Book")
            try book.setValue(.string("Book \(i)"), forKey: "title")
            try book.setValue(try color(Float(i), 0, 0, 1, in: registry), forKey: "cover")
        }
        try writer.save()
        counter.reset()

        let reader = Context(store: store)
        let books = try reader.fetch(FetchRequest("Book", sortedBy: [SortKey("title")]))
        #expect(counter.reverse == 0, "lazy decoding: nothing decoded at fetch")
        let first = try #require(books.first)
        #expect(try first.value(forKey: "note") == .string("draft"), "a transient attribute starts at its default")
        let cover = try first.value(forKey: "cover")
        #expect(cover == (try color(0, 0, 0, 1, in: registry)))
        _ = try first.value(forKey: "cover")
        #expect(counter.reverse == 1, "decoded once, then read from the fetch's cache")
        #expect(first.row != nil)
        try first.setValue(.string("Retitled"), forKey: "title")
        #expect(first.row == nil)
        #expect(try first.value(forKey: "cover") == cover)
        #expect(try first.value(forKey: "note") == .string("draft"))
        #expect(counter.reverse == 1, "the decoded value moved with the object's own values")
        #expect(!first.isUpdated || first.changedValues().keys.sorted() == ["title"])
        try reader.save()
        #expect(counter.forward == 0, "an unchanged cover is not encoded again")

        let check = Context(store: store)
        let again = try check.fetch("Book", where: "title == %@", "Retitled")
        #expect(try again.first?.value(forKey: "cover") == cover)
    }

    /// A transformer that reaches the object it is decoding (a callback
    /// setting a value) does not leave a stale cache behind: later reads see
    /// the decoded value, whichever representation the object ended in.
    @Test func aTransformerChangingItsObjectWhileDecodingLeavesNoStaleCache() throws {
        final class Target: @unchecked Sendable { var object: ManagedObject? }
        let target = Target()
        let registry = Registry()
        try registry.declare(.structure(name: "Color", fields: ["r", "g", "b", "a"].map { FieldDescription($0, .float) }))
        try registry.register(Transformer(
            name: "ColorToData", from: "Color", to: "Binary", source: "test",
            forward: { value in
                guard case .custom(let color) = value else { return .null }
                return .binary(color.bytes)
            },
            reverse: { value in
                // Re-entering: the first decode changes another attribute of the same object.
                if let object = target.object {
                    target.object = nil
                    try object.setValue(.string("changed while decoding"), forKey: "title")
                }
                guard case .binary(let data) = value else { return .null }
                return .custom(CustomValue(className: "Color", bytes: data))
            }))
        let model = try coverModel(registry)
        let store = try Store.inMemory(model: model)
        let writer = Context(store: store)
        let book = try writer.insert("Book")
        try book.setValue(.string("Dune"), forKey: "title")
        let cover = try color(1, 2, 3, 4, in: registry)
        try book.setValue(cover, forKey: "cover")
        try writer.save()

        let reader = Context(store: store)
        let fetched = try #require(try reader.fetch(FetchRequest("Book")).first)
        target.object = fetched
        #expect(try fetched.value(forKey: "cover") == cover)
        #expect(fetched.row == nil, "the callback's change gave the object its own values")
        #expect(try fetched.value(forKey: "cover") == cover, "no stale cache: the second read decodes again or reads the right value")
        #expect(try fetched.value(forKey: "title") == .string("changed while decoding"))
        #expect(fetched.changedValues().keys.sorted() == ["title"])
    }

    /// Decoded values of a fetch are dropped as their objects change or go
    /// away, so one surviving object does not keep every decoded value alive.
    @Test func decodedValuesLeaveWithTheirObjects() throws {
        let registry = try colorRegistry()
        let store = try Store.inMemory(model: try coverModel(registry))
        let writer = Context(store: store)
        for i in 0..<3 {
            let book = try writer.insert("Book")
            try book.setValue(.string("Book \(i)"), forKey: "title")
            try book.setValue(try color(Float(i), 0, 0, 1, in: registry), forKey: "cover")
        }
        try writer.save()
        let reader = Context(store: store)
        let cover = try store.model.entity(named: "Book").attribute(named: "cover")
        var books: [ManagedObject] = try reader.fetch(FetchRequest("Book", sortedBy: [SortKey("title")]))
        for book in books { _ = try book.value(for: cover) }
        let batch = try #require(books[0].row)
        #expect(batch.decodedValue(1, cover) == (try color(1, 0, 0, 1, in: registry)))
        try books[2].setValue(.string("Changed"), forKey: "title")
        #expect(batch.decodedValue(2, cover) == .null, "a changed object took its decoded value along")
        #expect(try books[2].value(for: cover) == (try color(2, 0, 0, 1, in: registry)))
        books.remove(at: 1)
        #expect(batch.decodedValue(1, cover) == .null, "a freed object's decoded value is dropped")
        #expect(try books[0].value(for: cover) == (try color(0, 0, 0, 1, in: registry)))
    }

    /// A save writes only the columns that changed: a value another program
    /// wrote to a column this context did not change survives the update.
    /// An object whose only change is unstored still moves to the row's new
    /// version, so its next save meets no conflict.
    @Test func updatesWriteOnlyTheChangedColumns() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("partial.amber").path
        let model = try booksModel()
        do {
            let context = Context(store: try Store(path: path, model: model))
            try insertBook(context, "Dune", "Herbert", pages: .int(412))
            try context.save()
        }
        let context = Context(store: try Store(path: path, model: model))
        let book = try #require(try context.fetch(FetchRequest("Book")).first)
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        #expect(sqlite3_exec(db, "UPDATE Book SET author = 'F. Herbert'", nil, nil, nil) == SQLITE_OK)
        try book.setValue(.int(500), forKey: "pages")
        try context.save()
        var statement: OpaquePointer?
        #expect(sqlite3_prepare_v2(db, "SELECT author, pages, _version FROM Book", -1, &statement, nil) == SQLITE_OK)
        defer { sqlite3_finalize(statement) }
        #expect(sqlite3_step(statement) == SQLITE_ROW)
        #expect(String(cString: sqlite3_column_text(statement, 0)) == "F. Herbert", "an unchanged column was rewritten")
        #expect(sqlite3_column_int64(statement, 1) == 500)
        #expect(sqlite3_column_int64(statement, 2) == 2)

        try book.setValue(.string("a note"), forKey: "note")  // transient: no column changes
        try context.save()
        try book.setValue(.int(501), forKey: "pages")
        try context.save()  // no conflict: the transient-only save moved the object to the row's version
        let check = Context(store: try Store(path: path, model: model))
        #expect(try check.fetch(FetchRequest("Book")).first?.value(forKey: "pages") == .int(501))
    }
}
