import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberSQLiteStore
@testable import AmberStore
@testable import AmberValues

/// Contexts on another connection to the same file (as in another process)
/// merge what was saved from the store's history: exactly the changes, at a
/// cost that follows what was saved, not what the context holds.
@Suite struct HistoryMergeTests {
    /// Saves through one connection and merges into a context on another that
    /// holds `held` books; returns the merged report and the statements the merge ran.
    private func mergeAcrossConnections(held: Int, writerOptions: Store.Options = Store.Options()) throws
        -> (report: ChangeReport?, statements: Int, pages: Value)
    {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("shared.amber").path
        let model = try booksModel()
        let writerStore = try Store(path: path, model: model, options: writerOptions)
        let writer = Context(store: writerStore)
        for index in 0..<held { try insertBook(writer, "Book \(index)", "Author \(index % 7)", pages: .int(Int64(index % 900 + 1))) }
        try writer.save()
        let readerStore = try Store(url: "file://" + path, model: model)
        let reader = Context(store: readerStore)
        let books = try reader.fetch(FetchRequest("Book", sortedBy: [SortKey("title")]))
        var reports: [ChangeReport] = []
        let token = reader.addObserver { reports.append($0) }
        defer { reader.removeObserver(token) }
        let mine = try writer.fetch("Book", where: "title IN %@", .array([.string("Book 1"), .string("Book 2"), .string("Book 3")]))
        for book in mine { try book.setValue(.int(999), forKey: "pages") }
        try writer.delete(try #require(try writer.fetch("Book", where: "title == %@", .string("Book 4")).first))
        try insertBook(writer, "New", "Someone")
        try writer.save()
        let before = readerStore.statementCount
        try reader.mergeSavedChanges()
        let statements = readerStore.statementCount - before
        let book1 = try #require(books.first { try $0.value(forKey: "title") == .string("Book 1") })
        return (reports.first, statements, try book1.value(forKey: "pages"))
    }

    @Test func aMergeReadsExactlyWhatAnotherConnectionSaved() throws {
        let (report, statements, pages) = try mergeAcrossConnections(held: 500)
        let merged = try #require(report)
        #expect(pages == .int(999))
        #expect(Set(try merged.refreshed.map { try $0.object.value(forKey: "title") }) == [.string("Book 1"), .string("Book 2"), .string("Book 3")])
        #expect(merged.refreshed.allSatisfy { $0.keys == ["pages"] })
        #expect(try merged.deleted.map { try $0.value(forKey: "title") } == [.string("Book 4")])
        // data_version, the history (begin, purge mark, transactions, commit), and the three rows read again.
        #expect(statements <= 7, "the merge ran \(statements) statements")
    }

    @Test func aMergeCostsWhatWasSavedNotWhatIsHeld() throws {
        let small = try mergeAcrossConnections(held: 200).statements
        let large = try mergeAcrossConnections(held: 3000).statements
        #expect(small == large, "\(small) statements holding 200 objects, \(large) holding 3,000")
    }

    @Test func withoutHistoryTheMergeComparesEveryObjectItHolds() throws {
        var options = Store.Options()
        options.recordsHistory = false
        let (report, statements, pages) = try mergeAcrossConnections(held: 500, writerOptions: options)
        #expect(pages == .int(999))
        #expect(try #require(report).deleted.count == 1)
        let exact = try mergeAcrossConnections(held: 500).statements
        #expect(statements > exact, "comparing every object ran \(statements) statements, the history \(exact)")
    }

    @Test func aPurgedHistoryFallsBackToComparing() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("purged.amber").path
        let model = try booksModel()
        let writerStore = try Store(path: path, model: model), readerStore = try Store(path: path, model: model)
        let writer = Context(store: writerStore), reader = Context(store: readerStore)
        let dune = try insertBook(writer, "Dune", "Herbert")
        try writer.save()
        let held = try #require(try reader.fetch("Book").first)
        try dune.setValue(.int(412), forKey: "pages")
        try writer.save()
        try writerStore.purgeHistory(through: writerStore.lastHistoryToken())
        try reader.mergeSavedChanges()
        #expect(try held.value(forKey: "pages") == .int(412))
        // And the next merge reads the history again.
        try dune.setValue(.int(413), forKey: "pages")
        try writer.save()
        try reader.mergeSavedChanges()
        #expect(try held.value(forKey: "pages") == .int(413))
    }

    @Test func storeURLsNameTheirPartThatIsWrong() throws {
        #expect(try StoreURL("library.amber").kind == .file(path: "library.amber"))
        #expect(try StoreURL("/data/a b.amber").kind == .file(path: "/data/a b.amber"))
        #expect(try StoreURL("./a:b.amber").kind == .file(path: "./a:b.amber"))
        #expect(try StoreURL("file:///data/a%20b.amber").kind == .file(path: "/data/a b.amber"))
        #expect(try StoreURL("file://localhost/data/x.amber").kind == .file(path: "/data/x.amber"))
        #expect(try StoreURL("file:relative.amber").kind == .file(path: "relative.amber"))
        #expect(try StoreURL("memory:").kind == .memory)
        #expect(try StoreURL("MEMORY:").kind == .memory)
        // A server's URL goes to libpq whole; how errors name it never shows the password.
        #expect(try StoreURL("postgres://amber:secret@db.example:5433/books?schema=shop").kind
            == .postgresql(url: "postgres://amber:secret@db.example:5433/books?schema=shop"))
        #expect(try StoreURL("postgresql://amber:secret@db.example/books").description == "postgresql://amber@db.example/books")
        #expect(try StoreURL("postgresql://amber@db.example/books?password=secret&sslmode=require").description
            == "postgresql://amber@db.example/books?sslmode=require")
        let refused: [(String, String)] = [
            ("mysql://localhost/db", "scheme mysql"), ("postgresql:db", "URL"), ("memory:x", "x"), ("file://example.com/x", "host example.com"),
            ("file:///x.amber?mode=ro", "?mode=ro"), ("file:///x%zz", "/x%zz"), ("", "path"), ("file://", "path"),
            ("file:///tmp/a%00.amber", "/tmp/a%00.amber"),
        ]
        for (text, part) in refused {
            guard case .invalidStoreURL(let url, let named, _)? = amberError({ _ = try StoreURL(text) }) else {
                Issue.record("\(text) was accepted")
                continue
            }
            #expect(url == text && named == part, "\(text): named \(named)")
        }
        // Nothing is created for a refused URL.
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(amberError { _ = try Store(url: "nosuch://" + directory.path, model: booksModel()) } != nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func aWriterWithoutHistoryIsStillMerged() throws {
        // Another tool (here SQLite itself) changes a row and records nothing: the reader compares what it holds.
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tool.amber").path
        let store = try Store(path: path, model: booksModel())
        let writer = Context(store: store)
        try insertBook(writer, "Dune", "Herbert", pages: .int(400))
        try writer.save()
        let reader = Context(store: try Store(path: path, model: booksModel()))
        let held = try #require(try reader.fetch("Book").first)
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "UPDATE \"Book\" SET pages = 5, _version = _version + 1", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        try reader.mergeSavedChanges()
        #expect(try held.value(forKey: "pages") == .int(5))
    }

    @Test func aDamagedHistoryIsRefusedAndMergesCompareInstead() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("damaged.amber").path
        let store = try Store(path: path, model: booksModel())
        let writer = Context(store: store)
        let dune = try insertBook(writer, "Dune", "Herbert", pages: .int(400))
        try writer.save()
        let reader = Context(store: try Store(path: path, model: booksModel()))
        let held = try #require(try reader.fetch("Book").first)
        try dune.setValue(.int(401), forKey: "pages")
        try writer.save()
        // Runs whose counts add up past Int64, and text that is not a record at all.
        for damage in [#"[["i","Book",1,1,1],["i","Book",0,9223372036854775807,1]]"#, "not json", #"[["u","Book",1,-1,2]]"#] {
            try store.connection.execute("UPDATE _amber_history SET changes = '\(damage)' WHERE sequence = (SELECT max(sequence) FROM _amber_history)")
            guard case .historyUnavailable(_, let reason)? = amberError({ _ = try store.history() }) else {
                Issue.record("a damaged history was read: \(damage)")
                continue
            }
            #expect(reason.contains("damaged"))
        }
        try reader.mergeSavedChanges()
        #expect(try held.value(forKey: "pages") == .int(401))
    }

    @Test func conflictsSettledAtSaveAreRecordedAsWritten() throws {
        let (store, cleanup) = try StoreKind.file.open(booksModel())
        defer { cleanup() }
        let mine = Context(store: store), theirs = Context(store: store)
        try insertBook(mine, "Dune", "Herbert", pages: .int(400))
        try mine.save()
        let book = try #require(try mine.fetch("Book").first), other = try #require(try theirs.fetch("Book").first)
        try other.setValue("Dune (2nd ed.)", forKey: "title")
        try theirs.save()
        try book.setValue(.int(412), forKey: "pages")
        mine.mergePolicy = .overwrite
        let before = try store.lastHistoryToken()
        try mine.save()
        // Overwrite wrote the title back as this context read it: the history says so.
        #expect(try store.history(after: before).first?.changes.first?.changedKeys == ["title", "pages"])
        // A row deleted elsewhere and written again under objectWins is, to a reader of the history, a new row.
        try theirs.refresh(other, mergeChanges: false)
        try theirs.delete(other)
        try theirs.save()
        try book.setValue(.int(500), forKey: "pages")
        mine.mergePolicy = .objectWins
        let again = try store.lastHistoryToken()
        try mine.save()
        #expect(try store.history(after: again).first?.changes.map(\.kind) == [.inserted])
    }
}
