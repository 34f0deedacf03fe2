import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

@Suite struct RoundTripTests {
    @Test func everyAttributeTypeRoundTripsThroughAFileStore() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("types.amber").path
        let model = try everyTypeModel()
        let when = Date(timeIntervalSinceReferenceDate: 812_345_678.123_456_7)
        let key = UUID()
        let expected: [String: Value] = [
            "i16": .int(-32768), "i32": .int(2_147_483_647), "i64": .int(Int64.min),
            "price": .decimal(try #require(Decimal(string: "12345678901234567890.123456789012345678"))),
            "ratio": .double(0.1 + 0.2), "weight": .float(3.14159), "name": .string("Crème brûlée 🍮"),
            "flag": .bool(true), "when": .date(when), "blob": .binary(Data([0, 1, 2, 255, 0])),
            "key": .uuid(key), "link": .uri(try #require(URL(string: "https://example.com/a?b=c#d"))),
        ]
        do {
            let store = try Store(path: path, model: model)
            let context = Context(store: store)
            let sample = try context.insert("Sample")
            for (name, value) in expected { try sample.setValue(value, forKey: name) }
            let empty = try context.insert("Sample")
            try empty.setValue(.binary(Data()), forKey: "blob")
            try empty.setValue(.string(""), forKey: "name")
            try context.save()
        }
        let reopened = try Store(path: path, model: model)
        let objects = try Context(store: reopened).fetch("Sample", sortedBy: [.ascending("i16")])
        #expect(objects.count == 2)
        let filled = try #require(objects.first { (try? $0.value(forKey: "flag")) == .bool(true) })
        for (name, value) in expected {
            #expect(try filled.value(forKey: name) == value, "\(name)")
        }
        let empty = try #require(objects.first { (try? $0.value(forKey: "flag")) == .null })
        #expect(try empty.value(forKey: "blob") == .binary(Data()))
        #expect(try empty.value(forKey: "name") == .string(""))
        #expect(try empty.value(forKey: "price") == .null)
    }

    @Test func storedColumnsAreReadableByPlainSQLite() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("plain.amber").path
        do {
            let context = Context(store: try Store(path: path, model: try everyTypeModel()))
            let sample = try context.insert("Sample")
            try sample.setValue(.uuid(UUID()), forKey: "key")
            try sample.setValue(.decimal(try #require(Decimal(string: "0.1"))), forKey: "price")
            try sample.setValue(.date(Date(timeIntervalSince1970: 0)), forKey: "when")
            try context.save()
        }
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        let sql = "SELECT length(key), typeof(key), price, datetime(\"when\" + 978307200, 'unixepoch'), (SELECT value FROM _amber_metadata WHERE key = 'format') FROM Sample"
        #expect(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK)
        defer { sqlite3_finalize(statement) }
        #expect(sqlite3_step(statement) == SQLITE_ROW)
        #expect(sqlite3_column_int(statement, 0) == 16)
        #expect(String(cString: sqlite3_column_text(statement, 1)) == "blob")
        #expect(String(cString: sqlite3_column_text(statement, 2)) == "0.1")
        #expect(String(cString: sqlite3_column_text(statement, 3)) == "1970-01-01 00:00:00")
        #expect(String(cString: sqlite3_column_text(statement, 4)) == "1")
    }

    @Test func storeIsInWALMode() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("wal.amber").path
        _ = try Store(path: path, model: try booksModel())
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        #expect(sqlite3_step(statement) == SQLITE_ROW)
        #expect(String(cString: sqlite3_column_text(statement, 0)) == "wal")
    }

    @Test func integerWidthsAreRangeChecked() throws {
        let context = Context(store: try Store.inMemory(model: try everyTypeModel()))
        let sample = try context.insert("Sample")
        let error = amberError { try sample.setValue(.int(40_000), forKey: "i16") }
        #expect(error?.description == "Sample.i16: expected Integer 16, given Integer 40000 (out of range -32768...32767)")
        #expect(amberError { try sample.setValue(.int(Int64(Int32.max) + 1), forKey: "i32") } != nil)
        try sample.setValue(.int(Int64(Int32.max)), forKey: "i32")
        #expect(try sample.value(forKey: "i16") == .null, "a rejected value changes nothing")
    }

    @Test func wrongClassIsRejectedAndNothingChanges() throws {
        let context = Context(store: try Store.inMemory(model: try everyTypeModel()))
        let sample = try context.insert("Sample")
        try sample.setValue("first", forKey: "name")
        let error = amberError { try sample.setValue(.int(5), forKey: "name") }
        #expect(error == .invalidValue(place: "Sample.name", expected: "String", given: "Integer 5"))
        #expect(try sample.value(forKey: "name") == "first")
        #expect(amberError { try sample.setValue(.string("1"), forKey: "price") } != nil)
        // Lossless conversions are accepted.
        try sample.setValue(.int(7), forKey: "price")
        #expect(try sample.value(forKey: "price") == .decimal(7))
        try sample.setValue(.int(2), forKey: "ratio")
        #expect(try sample.value(forKey: "ratio") == .double(2))
    }

    @Test func unknownAttributeNamesTheEntityAndTheNearestName() throws {
        let context = Context(store: try Store.inMemory(model: try booksModel()))
        let book = try context.insert("Book")
        let error = amberError { try book.setValue("x", forKey: "titel") }
        #expect(error?.description == "Book.titel: no such attribute; did you mean title?")
        #expect(amberError { _ = try context.insert("Bok") }?.description == "Bok: no such entity; did you mean Book?")
    }

    @Test func handlesResolveOnceAndRejectForeignAttributes() throws {
        let model = try booksModel()
        let other = try everyTypeModel()
        let context = Context(store: try Store.inMemory(model: model))
        let title = try model.entity(named: "Book").attribute(named: "title")
        let book = try context.insert("Book")
        try book.setValue("Dune", for: title)
        #expect(try book.value(for: title) == "Dune")
        let foreign = try other.entity(named: "Sample").attribute(named: "name")
        #expect(amberError { try book.setValue("x", for: foreign) } == .foreignAttribute(attribute: "Sample.name", object: book.description))
    }
}
