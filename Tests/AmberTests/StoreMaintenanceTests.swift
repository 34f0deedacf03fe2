import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// Checking, backing up, vacuuming and checkpointing a store, and what a
/// closed store leaves on disk.
@Suite struct StoreMaintenanceTests {
    private static func graphModel() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("batch")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        })
    }

    /// Runs `sql` on the file at `path` through a connection of its own.
    private func execute(_ sql: String, on path: String) {
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        #expect(sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK, "\(sql)")
    }

    private func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
    }

    @Test func checkFindsBrokenLinksAndFilesThatAreNotStores() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("graph.amber").path
        let model = try Self.graphModel()
        do {
            let store = try Store(path: path, model: model)
            let context = Context(store: store)
            let author = try context.insert(try model.entity(named: "Author"))
            for title in ["A", "B"] {
                let book = try context.insert(try model.entity(named: "Book"))
                try book.setValue(.string(title), forKey: "title")
                try book.setObject(author, for: try book.entity.relationship(named: "author"))
            }
            try context.save()
            #expect(try store.checkIntegrity() == [])
            #expect(try Store.checkIntegrity(ofStoreAt: path) == [])
        }
        // Another program breaks a link behind Amber's back.
        execute("PRAGMA foreign_keys = OFF; UPDATE Book SET author = 77 WHERE title = 'B'", on: path)
        let problems = try Store.checkIntegrity(ofStoreAt: path)
        #expect(problems == ["table Book, row 2: a link to Author points at no row"])
        #expect(try Store(path: path, model: model).checkIntegrity() == problems)

        let plain = directory.appendingPathComponent("plain.sqlite").path
        execute("CREATE TABLE t (x)", on: plain)
        #expect(try Store.checkIntegrity(ofStoreAt: plain) == ["the database has tables but no _amber_metadata table"])
        let text = directory.appendingPathComponent("text.amber").path
        try Data(String(repeating: "not a database ", count: 400).utf8).write(to: URL(fileURLWithPath: text))
        #expect(try Store.checkIntegrity(ofStoreAt: text).first?.contains("file is not a database") == true)
        #expect(amberError { _ = try Store.checkIntegrity(ofStoreAt: directory.appendingPathComponent("none").path) }
            == .notAStore(path: directory.appendingPathComponent("none").path, reason: "no such file"))
    }

    @Test("a backup taken while another connection saves is one whole snapshot, and opens as the same store")
    func backupDuringSaves() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("busy.amber").path
        let model = try Self.graphModel()
        let store = try Store(path: path, model: model)
        let book = try model.entity(named: "Book")
        // The writer has a store (a connection) of its own, as another process would.
        let writing = try Store(path: path, model: model)
        let done = ManagedAtomicFlag()
        let writer = Thread {
            let context = Context(store: writing)
            var batch: Int64 = 0
            while !done.isSet {
                batch += 1
                for i in 0..<20 {
                    guard let object = try? context.insert(book) else { return }
                    try? object.setValue(.string("\(batch)-\(i)"), forKey: "title")
                    try? object.setValue(.int(batch), forKey: "batch")
                }
                try? context.save()
            }
        }
        writer.start()
        defer { done.set() }
        var seen: Set<Int> = []
        for round in 0..<8 {
            let copy = directory.appendingPathComponent("copy\(round).amber").path
            try store.backup(to: copy)
            #expect(!FileManager.default.fileExists(atPath: copy + "-wal"))
            let restored = try Store(openingExisting: copy)
            #expect(restored.identifier == store.identifier)
            #expect(try restored.checkIntegrity() == [])
            let books = try Context(store: restored).fetch("Book")
            var perBatch: [Int64: Int] = [:]
            for object in books { if case .int(let batch) = try object.value(forKey: "batch") { perBatch[batch, default: 0] += 1 } }
            #expect(perBatch.values.allSatisfy { $0 == 20 }, "a save is in a backup whole or not at all")
            if let last = perBatch.keys.max() { #expect(perBatch.count == Int(last), "batches 1…\(last), none missing") }
            seen.insert(books.count)
            usleep(20_000)
        }
        done.set()
        #expect(seen.count > 1, "the backups saw the store grow")
        let existing = directory.appendingPathComponent("copy0.amber").path
        let before = try Data(contentsOf: URL(fileURLWithPath: existing))
        #expect(amberError { try store.backup(to: existing) } == .fileExists(path: existing))
        #expect(try Data(contentsOf: URL(fileURLWithPath: existing)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.contains(".partial-") })
    }

    @Test func vacuumShrinksTheFileAndObjectsStayUsable() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("vacuum.amber").path
        let model = try Self.graphModel()
        let store = try Store(path: path, model: model)
        let context = Context(store: store)
        let book = try model.entity(named: "Book")
        let padding = String(repeating: "p", count: 2000)
        let books = try (0..<1000).map { (i) throws(AmberError) -> ManagedObject in
            let object = try context.insert(book)
            try object.setValue(.string("\(i) \(padding)"), forKey: "title")
            try object.setValue(.int(Int64(i)), forKey: "batch")
            return object
        }
        try context.save()
        try store.checkpoint()
        #expect(fileSize(path + "-wal") == 0)
        let full = try #require(fileSize(path))
        for object in books[10...] { try context.delete(object) }
        try context.save()
        try store.vacuum()
        #expect(try #require(fileSize(path)) < full / 20)
        #expect(fileSize(path + "-wal") == 0)
        // The objects this context holds keep their IDs and save as before.
        try books[3].setValue(.string("three"), forKey: "title")
        try context.save()
        let fresh = Context(store: store)
        #expect(try fresh.fetch("Book", where: "title == 'three'").first?.objectID == books[3].objectID)
        #expect(try fresh.count(FetchRequest("Book")) == 10)
        #expect(try store.checkIntegrity() == [])
    }

    @Test func aClosedStoreLeavesOnlyItsFileAndDurabilityIsSQLiteSynchronous() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("closed.amber").path
        let model = try Self.graphModel()
        for durability in [Store.Durability.normal, .full] {
            var options = Store.Options()
            options.durability = durability
            do {
                let store = try Store(path: path, model: model, options: options)
                let synchronous = try store.connection.statement("PRAGMA synchronous")
                #expect(try synchronous.step() && synchronous.int64(0) == (durability == .full ? 2 : 1))
                synchronous.reset()
                let context = Context(store: store)
                try context.insert(try model.entity(named: "Author")).setValue(.string("A"), forKey: "name")
                try context.save()
                #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["closed.amber"])
        }
        let memory = try Store.inMemory(model: model)
        try memory.checkpoint()
        try memory.vacuum()
        #expect(try memory.checkIntegrity() == [])
    }
}

/// A flag one thread sets and another reads.
private final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
