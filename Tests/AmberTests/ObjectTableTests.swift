import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// The uniquing table against a Dictionary, over random inserts and removals
/// (collisions, wrap-around probe runs and backward-shift deletion included).
@Test func objectTableAgreesWithADictionary() throws {
    let model = try booksModel()
    let context = Context(store: try Store.inMemory(model: model))
    let objects = try (0..<64).map { _ in try context.insert("Book") }
    var table = ObjectTable()
    var expected: [Int64: ManagedObject] = [:]
    var generator = SplitMix64(seed: 42)
    for step in 0..<50_000 {
        // Keys from a small range collide and cluster; some far apart test the hashing.
        let key = Int64(generator.next() % 200) * (step % 7 == 0 ? 1_000_003 : 1)
        let object = objects[Int(generator.next() % 64)]
        if generator.next() % 3 == 0 {
            table.removeValue(for: key)
            expected[key] = nil
        } else {
            table.insert(object, for: key)
            expected[key] = object
        }
        if step % 997 == 0 {
            #expect(table.count == expected.count)
            for (key, object) in expected { #expect(table.object(for: key) === object) }
        }
    }
    #expect(table.count == expected.count)
    for key in Int64(0)..<Int64(200) { #expect(table.object(for: key) === expected[key]) }
    // remove(_:for:) leaves a different object registered under the key alone.
    if let (key, object) = expected.first {
        let other = objects.first { $0 !== object } ?? object
        table.remove(other, for: key)
        #expect(table.object(for: key) === object)
        table.remove(object, for: key)
        #expect(table.object(for: key) == nil)
    }
}

/// Sequential row ids (the common case) keep probe runs short: registering
/// and then unregistering 100,000 of them in order visits a few slots per
/// operation, not a run that grows with the table.
@Test func sequentialKeysKeepProbeRunsShort() throws {
    let context = Context(store: try Store.inMemory(model: try booksModel()))
    let object = try context.insert("Book")
    var table = ObjectTable()
    let count = 100_000
    for key in 1...Int64(count) { table.insert(object, for: key) }
    for key in 1...Int64(count) { #expect(table.object(for: key) === object) }
    for key in 1...Int64(count) { table.remove(object, for: key) }
    #expect(table.count == 0)
    #if DEBUG
    #expect(table.probes < 10 * count, "\(table.probes) slots visited for \(2 * count) operations")
    #endif
}
