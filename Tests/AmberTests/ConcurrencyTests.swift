import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// A counter per writer, and a log row per save: enough to tell a lost update
/// or a lost insert from a busy failure.
func countersModel() throws -> Model {
    try Model(ModelDescription {
        EntityDescription("Counter") {
            Attribute.string("name")
            Attribute.integer64("value").defaultValue(.int(0))
        }
        EntityDescription("Entry") {
            Attribute.string("writer")
            Attribute.integer64("step")
        }
    })
}

/// How many times each writer of a contention test saves: AMBER_STRESS_SAVES, else 1,000.
let stressSaves = ProcessInfo.processInfo.environment["AMBER_STRESS_SAVES"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil } ?? 1_000

/// Runs `body(index)` on `count` threads at once and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [Error] {
    let group = DispatchGroup()
    let errors = Locked<[Error]>([])
    for index in 0..<count {
        group.enter()
        Thread {
            defer { group.leave() }
            do { try body(index) } catch { errors.mutate { $0.append(error) } }
        }.start()
    }
    group.wait()
    return errors.value
}

/// A value behind a lock, for test threads to report into.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func mutate(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
}

/// Writers each save `saves` times: their counter goes up by one and one
/// entry row is added per save. Returns the writer's failures.
func runWriter(_ store: Store, name: String, saves: Int) throws {
    let context = Context(store: store)
    let counter = try context.insert("Counter")
    try counter.setValue(.string(name), forKey: "name")
    try context.save()
    for step in 1...saves {
        try counter.setValue(.int(Int64(step)), forKey: "value")
        let entry = try context.insert("Entry")
        try entry.setValue(.string(name), forKey: "writer")
        try entry.setValue(.int(Int64(step)), forKey: "step")
        try context.save()
    }
}

@Suite struct ConcurrencyTests {
    /// Contexts on four threads share one store, each saving hundreds of times while another thread fetches.
    @Test func contextsOnSeveralThreadsShareAStore() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(path: directory.appendingPathComponent("threads.amber").path, model: try countersModel())
        let saves = 200
        let errors = onThreads(5) { index in
            if index == 4 {
                let reader = Context(store: store)
                for _ in 0..<100 { _ = try reader.fetch("Entry", where: "step > %@", 100) }
            } else {
                try runWriter(store, name: "w\(index)", saves: saves)
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let context = Context(store: store)
        #expect(try context.count(FetchRequest("Entry")) == 4 * saves)
        for counter in try context.fetch("Counter") { #expect(try counter.value(forKey: "value") == .int(Int64(saves))) }
    }

    /// Two stores on one file (two connections, as two processes have) write
    /// at once: saves wait for each other instead of failing.
    @Test func twoConnectionsOnOneFileWaitForEachOther() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("two.amber").path
        let model = try countersModel()
        let saves = 300
        let errors = onThreads(2) { index in try runWriter(try Store(path: path, model: model), name: "w\(index)", saves: saves) }
        #expect(errors.isEmpty, "\(errors)")
        let context = Context(store: try Store(path: path, model: model))
        #expect(try context.count(FetchRequest("Entry")) == 2 * saves)
        #expect(try context.fetch("Counter").map { try $0.value(forKey: "value") } == [.int(Int64(saves)), .int(Int64(saves))])
    }

    /// Eight connections create the same new store at once: all open it, with one identity.
    @Test func connectionsCreatingOneStoreAtOnceAllSucceed() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try countersModel()
        for round in 0..<5 {
            let path = directory.appendingPathComponent("new\(round).amber").path
            let identities = Locked<[UUID]>([])
            let errors = onThreads(8) { _ in
                let store = try Store(path: path, model: model)
                identities.mutate { $0.append(store.identifier) }
            }
            #expect(errors.isEmpty, "\(errors)")
            #expect(identities.value.count == 8 && Set(identities.value).count == 1)
        }
    }

    /// A save that cannot get the write lock within the timeout fails with its own error, keeping everything pending.
    @Test func aSaveBlockedPastTheTimeoutFailsAsBusyAndKeepsItsChanges() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("busy.amber").path
        let store = try Store(path: path, model: try countersModel(), options: Store.Options(busyTimeout: .milliseconds(200)))
        let context = Context(store: store)
        let counter = try context.insert("Counter")
        try counter.setValue(.string("kept"), forKey: "name")

        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        #expect(sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
        let started = ContinuousClock.now
        #expect {
            try context.save()
        } throws: { error in
            guard case AmberError.busy(let place, let timeout) = error else { return false }
            return place == path && timeout == .milliseconds(200) && "\(error)".contains("retrying may succeed")
        }
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        #expect(context.hasChanges && counter.isInserted)
        #expect(try counter.value(forKey: "name") == .string("kept"))

        #expect(sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK)
        try context.save()
        #expect(try Context(store: store).fetch("Counter").map { try $0.value(forKey: "name") } == [.string("kept")])
    }
}
