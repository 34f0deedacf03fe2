import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberPostgreSQLStore
@testable import AmberValues

/// Migrations on the server: the same inferred mapping and steps as on an
/// SQLite file (``MigrationTests``), in one transaction under the store's
/// write lock.
@Suite(.serialized, .enabled(if: TestServer.required, "no PostgreSQL server: set AMBER_TEST_POSTGRES (the test command does)"))
struct PostgreSQLMigrationTests {
    /// A query's first column of its first row, on the test server, as text.
    func server(_ sql: String) throws -> String {
        let admin = try PGConnection(conninfo: try #require(TestServer.url), place: "admin")
        let rows = try admin.query(sql)
        return rows.count == 0 ? "" : rows.text(0, 0)
    }

    @Test func everyInferableChangeMigrates() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let schema = try #require(url.split(separator: "=").last)
        try MigrationTests.fillVersion1(try Store(url: url, model: try MigrationTests.version1()))
        let collected = MigrationTests.Collected()
        var options = Store.Options.removingData
        options.migrationProgress = { collected.append($0.step) }
        let store = try Store(url: url, model: try MigrationTests.version2(), options: options)
        #expect(collected.items.contains("copy Writer") && collected.items.contains("compute Book.writerCount"), "\(collected.items)")
        let context = Context(store: store)
        let writers = try context.fetch("Writer", sortedBy: [SortKey("name")])
        #expect(try writers.map { try $0.value(forKey: "name") } == ["Borges", "Cortázar"])
        #expect(try writers.map { try $0.value(forKey: "country") } == ["unknown", "unknown"])
        let books = try context.fetch("Book", sortedBy: [SortKey("title")])
        #expect(try books.map { try $0.value(forKey: "pages") } == [.int(174), .int(174), .int(600)])
        #expect(try books.map { try $0.value(forKey: "code") } == [.null, "9780802130303", "9788437604572"])
        #expect(try books.map { try $0.value(forKey: "blurb") } == ["", "", "A novel"])
        #expect(try books.map { try $0.value(forKey: "writerCount") } == [.int(1), .int(1), .int(1)])
        #expect(try books.map { try $0.objects(forKey: "writers").map { try $0.value(forKey: "name") } } == [["Borges"], ["Borges"], ["Cortázar"]])
        // The new tables' triggers keep derived values, and their foreign keys and uniqueness hold.
        try books[2].add(writers[0], to: try store.model.entity(named: "Book").relationship(named: "writers"))
        try context.save()
        #expect(try books[2].value(forKey: "writerCount") == .int(2))
        try books[1].setValue("9788437604572", forKey: "code")
        #expect(throws: AmberError.self) { try context.save() }
        context.rollback()
        #expect(try server("SELECT value FROM \(schema)._amber_metadata WHERE key = 'model_hash'") == store.model.versionHash)
        #expect(try server("SELECT count(*) FROM pg_namespace WHERE nspname = 'old-\(schema)'") == "0")
        #expect(try server("SELECT count(*) FROM pg_tables WHERE schemaname = '\(schema)' AND tablename IN ('Author', 'Shelf')") == "0")
        #expect(try server("SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND connamespace = '\(schema)'::regnamespace") != "0")
        // Opened again with version 2, nothing is migrated again.
        let again = Context(store: try Store(url: url, model: try MigrationTests.version2()))
        #expect(try again.fetch("Book").count == 3)
    }

    @Test func hostsStartingANewVersionAtOnceMigrateOnce() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let schema = try #require(url.split(separator: "=").last)
        try MigrationTests.fillVersion1(try Store(url: url, model: try MigrationTests.version1()))
        let version2 = try MigrationTests.version2()
        let outcomes = MigrationTests.Collected()
        let threads = (0..<4).map { _ in
            Thread {
                do {
                    let count = try Context(store: try Store(url: url, model: version2, options: .removingData)).fetch("Book").count
                    outcomes.append("\(count) books")
                } catch {
                    outcomes.append("\(error)")
                }
            }
        }
        threads.forEach { $0.start() }
        while outcomes.items.count < threads.count { usleep(10_000) }
        #expect(outcomes.items == Array(repeating: "3 books", count: threads.count))
        let history = try server("SELECT value FROM \(schema)._amber_metadata WHERE key = 'model_history'")
        #expect((try JSONSerialization.jsonObject(with: Data(history.utf8)) as? [Any])?.count == 1, "\(history)")
    }

    /// A role that may read the store but not change its schema gets the
    /// plan from the models alone: the rehearsal needs the migration's rights.
    @Test func aRoleThatCannotMigrateStillGetsThePlan() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        try MigrationTests.fillVersion1(try Store(url: url, model: try MigrationTests.version1()))
        let schema = String(try #require(url.split(separator: "=").last))
        let admin = try PGConnection(conninfo: try #require(TestServer.url), place: "admin")
        try admin.execute("""
            DO $$ BEGIN CREATE ROLE amber_plan_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
            GRANT USAGE ON SCHEMA \(schema) TO amber_plan_reader;
            GRANT SELECT ON ALL TABLES IN SCHEMA \(schema) TO amber_plan_reader
            """)
        let reader = url.replacingOccurrences(of: "://amber@", with: "://amber_plan_reader@")
        #expect(reader != url)
        let model = try MigrationTests.version2()
        let planned = try Store.migrationPlan(for: try StoreURL(reader), to: model)
        let full = try Store.migrationPlan(for: try StoreURL(url), to: model)
        #expect(!planned.isEmpty && planned == full)
        try admin.execute("REVOKE ALL ON ALL TABLES IN SCHEMA \(schema) FROM amber_plan_reader; REVOKE ALL ON SCHEMA \(schema) FROM amber_plan_reader")
    }

    @Test func extendedValuesBecomeTheAttributes() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        try MigrationTests.extendedValuesBecomeTheAttributes({ try Store(url: url, model: $0) },
                                                             plan: { try Store.migrationPlan(for: try StoreURL(url), to: $0) })
    }

    @Test func refusedChangesLeaveTheStoreUnchanged() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        try MigrationTests.fillVersion1(try Store(url: url, model: try MigrationTests.version1()))
        func refused(_ change: (inout ModelDescription) -> Void) throws -> [String] {
            var description = try MigrationTests.version1().description
            change(&description)
            let model = try Model(description)
            // The plan rehearses the migration on the server and rolls it back: the same refusal, in the same words.
            guard case .migrationFailed(_, let planned) = amberError({ _ = try Store.migrationPlan(for: try StoreURL(url), to: model) }),
                  case .migrationFailed(_, let problems) = amberError({ _ = try Store(url: url, model: model) })
            else {
                Issue.record("expected the plan and the migration to be refused")
                return []
            }
            #expect(planned == problems)
            return problems
        }
        #expect(try refused { $0.entities[1].attributes[1].type = .string } == ["Book.pages: type integer16 to string: cannot be inferred"])
        #expect(try refused { $0.entities[1].attributes[2].isOptional = false }.first?.hasPrefix("Book.isbn: required, but object amber://") == true)
        // The server's own words for a constraint the objects break.
        #expect(try refused { $0.entities[1].uniquenessConstraints = [["pages"]] }.first?.contains("Book: the existing objects break a constraint") == true)
        #expect(try refused { $0.entities[2].isAbstract = true }.first?.hasPrefix("Shelf: now abstract, but object") == true)
        let context = Context(store: try Store(url: url, model: try MigrationTests.version1()))
        #expect(try context.fetch("Book").count == 3 && context.fetch("Shelf").count == 1)
        var strict = Store.Options()
        strict.migratesStore = false
        #expect { _ = try Store(url: url, model: try MigrationTests.version2(), options: strict) } throws: { error in
            guard case AmberError.modelMismatch = error else { return false }
            return true
        }
    }

    /// Values of a transformed attribute whose chain changed are moved after
    /// the copy (the server cannot call into this process): every one, or
    /// none, naming the object whose value the new chain refuses.
    @Test func changingATransformerReEncodesEveryValue() throws {
        let (url, cleanup) = try TestServer.storeURL()
        defer { cleanup() }
        let registry = try MigrationTests.registryWithV2()
        let old = try coverModel(registry)
        var colors: [Value] = []
        do {
            let context = Context(store: try Store(url: url, model: old))
            for i in 0..<1_000 {
                let book = try context.insert("Book")
                try book.setValue(.string("b\(i)"), forKey: "title")
                colors.append(i % 10 == 0 ? .null : try color(Float(i) / 7, 0.5, Float(i), 1, in: registry))
                try book.setValue(colors[i], forKey: "cover")
            }
            try context.save()
        }
        var description = old.description
        description.entities[0].attributes[1].transformerNames = ["ColorToDataV2"]
        let new = try Model(description, registry: registry)
        // A value the new chain refuses (a negative blue) fails the whole migration, naming its object.
        do {
            let context = Context(store: try Store(url: url, model: old))
            let refused = try #require(try context.fetch("Book", where: "title == 'b7'").first)
            try refused.setValue(try color(1, 0.5, -1, 1, in: registry), forKey: "cover")
            try context.save()
        }
        guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(url: url, model: new) }) else {
            Issue.record("expected the migration to fail")
            return
        }
        #expect(problems.count == 1 && problems[0].hasPrefix("Book.cover of amber://") && problems[0].contains("(encoding with the new chain)"), "\(problems)")
        do {
            let context = Context(store: try Store(url: url, model: old))
            try #require(try context.fetch("Book", where: "title == 'b7'").first).setValue(colors[7], forKey: "cover")
            try context.save()
        }
        let collected = MigrationTests.Collected()
        var options = Store.Options()
        options.migrationProgress = { collected.append("\($0)") }
        let context = Context(store: try Store(url: url, model: new, options: options))
        #expect(collected.items.last { $0.hasPrefix("re-encode") } == "re-encode Book.cover: 900/900", "\(collected.items)")
        for book in try context.fetch("Book") {
            guard case .string(let title) = try book.value(forKey: "title"), let i = Int(title.dropFirst()) else { throw TestFailure() }
            #expect(try book.value(forKey: "cover") == colors[i], "\(title)")
        }
    }
}
