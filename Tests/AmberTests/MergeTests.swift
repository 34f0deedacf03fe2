import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// A shape with a colour and a size, and a transformable cover: the seed's refresh case.
private func shapesModel(_ registry: Registry) throws -> Model {
    try Model(ModelDescription {
        EntityDescription("Shape") {
            Attribute.string("color")
            Attribute.integer64("size")
            Attribute.string("scratch").transient()
            Attribute.transformable("cover", valueClass: "Color", transformers: ["ColorToData"])
        }
    }, registry: registry)
}

/// Two contexts over one store file, with one saved shape (red, size 1).
private struct Pair {
    let directory = temporaryDirectory()
    let registry: Registry
    let store: Store
    let here: Context, there: Context
    let shape: ManagedObject, other: ManagedObject

    init() throws {
        registry = try colorRegistry()
        store = try Store(path: directory.appendingPathComponent("pair.amber").path, model: try shapesModel(registry))
        let setup = Context(store: store)
        let made = try setup.insert("Shape")
        try made.setValue(.string("red"), forKey: "color")
        try made.setValue(.int(1), forKey: "size")
        try made.setValue(try color(1, 0, 0, 1, in: registry), forKey: "cover")
        try setup.save()
        here = Context(store: store)
        there = Context(store: store)
        shape = try #require(try here.fetch("Shape").first)
        other = try #require(try there.fetch("Shape").first)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// `there` saves `key` = `value`.
    func saveThere(_ key: String, _ value: Value) throws {
        try other.setValue(value, forKey: key)
        try there.save()
    }
}

@Suite struct MergeTests {
    /// The seed's case: red → blue here; others save green, blue, red: still blue here, and a save writes blue.
    @Test func aValueSetHereStaysSetThroughEveryMerge() throws {
        let pair = try Pair()
        defer { pair.remove() }
        try pair.shape.setValue(.string("blue"), forKey: "color")
        for saved in ["green", "blue", "red"] {
            try pair.saveThere("color", .string(saved))
            try pair.saveThere("size", .int(Int64(saved.count)))
            try pair.here.mergeSavedChanges()
            #expect(try pair.shape.value(forKey: "color") == .string("blue"))
            #expect(try pair.shape.value(forKey: "size") == .int(Int64(saved.count)))  // not set here: takes theirs
        }
        #expect(pair.shape.isUpdated)
        try pair.here.save()  // no conflict: the merge made the last save the one to compare with
        let fresh = try #require(try Context(store: pair.store).fetch("Shape").first)
        #expect(try fresh.value(forKey: "color") == .string("blue"))
        #expect(try fresh.value(forKey: "size") == .int(3))
    }

    /// The same through refresh(mergeChanges: true), and refresh(mergeChanges: false) dropping what was set.
    @Test func refreshKeepsOrDropsWhatWasSetHere() throws {
        let pair = try Pair()
        defer { pair.remove() }
        try pair.shape.setValue(.string("blue"), forKey: "color")
        try pair.shape.setValue(.string("note"), forKey: "scratch")
        try pair.saveThere("size", .int(7))
        try pair.saveThere("cover", try color(0, 1, 0, 1, in: pair.registry))
        try pair.here.refresh(pair.shape, mergeChanges: true)
        #expect(try pair.shape.value(forKey: "color") == .string("blue"))
        #expect(try pair.shape.value(forKey: "size") == .int(7))
        #expect(try pair.shape.value(forKey: "cover") == (try color(0, 1, 0, 1, in: pair.registry)))
        #expect(try pair.shape.value(forKey: "scratch") == .string("note"))  // transient: kept

        try pair.here.refresh(pair.shape, mergeChanges: false)
        #expect(try pair.shape.value(forKey: "color") == .string("red"))
        #expect(!pair.shape.isUpdated && !pair.here.hasChanges)
    }

    /// A transformable value set here is kept per key, and a plain one saved elsewhere arrives.
    @Test func transformableValuesMergePerKey() throws {
        let pair = try Pair()
        defer { pair.remove() }
        let blue = try color(0, 0, 1, 1, in: pair.registry)
        try pair.shape.setValue(blue, forKey: "cover")
        try pair.saveThere("cover", try color(0, 1, 0, 1, in: pair.registry))
        try pair.saveThere("color", .string("green"))
        try pair.here.mergeSavedChanges()
        #expect(try pair.shape.value(forKey: "cover") == blue)
        #expect(try pair.shape.value(forKey: "color") == .string("green"))
        try pair.here.save()
        let fresh = try #require(try Context(store: pair.store).fetch("Shape").first)
        #expect(try fresh.value(forKey: "cover") == blue)
        #expect(try fresh.value(forKey: "color") == .string("green"))
    }

    /// Without merging, an unchanged object takes the saved row at the next
    /// fetch; a changed one keeps its changes and its save reports the
    /// conflict until it is refreshed.
    @Test func aFetchRefreshesUnchangedObjectsAndConflictsAreReported() throws {
        let pair = try Pair()
        defer { pair.remove() }
        try pair.saveThere("color", .string("green"))
        #expect(try pair.shape.value(forKey: "color") == .string("red"))  // not merged yet
        _ = try pair.here.fetch("Shape")
        #expect(try pair.shape.value(forKey: "color") == .string("green"))
        try pair.shape.setValue(.int(5), forKey: "size")
        try pair.here.save()  // it was read at the saved version: no conflict

        try pair.other.setValue(.string("black"), forKey: "color")
        #expect { try pair.there.save() } throws: { error in
            guard case AmberError.saveFailed(let problems) = error else { return false }
            return problems.map(\.rule) == [.conflict]
        }
        try pair.there.refresh(pair.other, mergeChanges: true)
        try pair.there.save()
        let fresh = try #require(try Context(store: pair.store).fetch("Shape").first)
        #expect(try fresh.value(forKey: "color") == .string("black"))
        #expect(try fresh.value(forKey: "size") == .int(5))
    }

    /// A row deleted elsewhere: an unchanged object leaves the context; a changed one stays, and its save conflicts.
    @Test func deletionsElsewhereReachHeldObjects() throws {
        let pair = try Pair()
        defer { pair.remove() }
        let kept = try pair.here.insert("Shape")
        try pair.here.save()
        let keptThere = try pair.there.object(with: kept.objectID)
        try pair.there.delete(pair.other)
        try pair.there.delete(keptThere)
        try pair.shape.setValue(.string("blue"), forKey: "color")
        try pair.there.save()
        try pair.here.mergeSavedChanges()
        #expect(kept.context == nil)
        #expect(pair.shape.context === pair.here && pair.shape.isUpdated)
        #expect(throws: AmberError.self) { try pair.here.save() }
    }

    /// Automatic merging: a fetch sees the others' saves, and a save merges first.
    @Test func automaticMergingAppliesBeforeFetchesAndSaves() throws {
        let pair = try Pair()
        defer { pair.remove() }
        pair.here.automaticallyMergesChanges = true
        pair.there.automaticallyMergesChanges = true
        try pair.shape.setValue(.string("blue"), forKey: "color")
        try pair.saveThere("size", .int(9))
        try pair.here.save()
        #expect(try pair.shape.value(forKey: "size") == .int(9))
        let added = try pair.there.insert("Shape")
        try added.setValue(.string("new"), forKey: "color")
        try pair.there.save()
        try pair.saveThere("size", .int(10))
        #expect(try pair.here.fetch("Shape", where: "color == 'new'").count == 1)
        #expect(try pair.shape.value(forKey: "size") == .int(10))
    }

    /// Another connection to the file (another store object, as another
    /// process has) is noticed through data_version.
    @Test func savesThroughAnotherConnectionAreNoticed() throws {
        let pair = try Pair()
        defer { pair.remove() }
        let elsewhere = Context(store: try Store(path: pair.store.path ?? "", model: pair.store.model))
        let shape = try #require(try elsewhere.fetch("Shape").first)
        try shape.setValue(.int(42), forKey: "size")
        try pair.shape.setValue(.string("blue"), forKey: "color")
        try elsewhere.save()
        try pair.here.mergeSavedChanges()
        #expect(try pair.shape.value(forKey: "size") == .int(42))
        #expect(try pair.shape.value(forKey: "color") == .string("blue"))
        try elsewhere.delete(shape)
        try elsewhere.save()
        try pair.there.mergeSavedChanges()
        #expect(pair.other.context == nil)
    }

    /// Merging costs what was saved, not what is held: a context holding
    /// 1,000 objects merges a save of four with two statements.
    @Test func mergingCostsWhatChanged() throws {
        let pair = try Pair()
        defer { pair.remove() }
        for index in 0..<1_000 {
            let shape = try pair.there.insert("Shape")
            try shape.setValue(.int(Int64(index)), forKey: "size")
        }
        try pair.there.save()
        let held = try pair.here.fetch("Shape")
        #expect(held.count == 1_001)
        let moved = try pair.there.fetch("Shape", where: "size < 3")
        #expect(moved.count == 4)  // sizes 0, 1 (two of them) and 2
        for shape in moved { try shape.setValue(.string("moved"), forKey: "color") }
        try pair.there.save()
        let before = pair.store.statementCount
        try pair.here.mergeSavedChanges()
        #expect(pair.store.statementCount - before == 2)  // data_version, then the four rows
        #expect(try held.filter { try $0.value(forKey: "color") == .string("moved") }.count == 4)
    }

    /// Two threads increment one counter hundreds of times, each retrying on
    /// conflict after a refresh: no update is lost.
    @Test func conflictsLoseNoUpdate() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(path: directory.appendingPathComponent("race.amber").path, model: try countersModel())
        let setup = Context(store: store)
        let counter = try setup.insert("Counter")
        try counter.setValue(.int(0), forKey: "value")
        try setup.save()
        let id = counter.objectID
        let conflicts = Locked(0)
        let errors = onThreads(2) { _ in
            let context = Context(store: store)
            let mine = try context.object(with: id)
            for _ in 0..<150 {
                while true {
                    guard case .int(let value) = try mine.value(forKey: "value") else { throw TestFailure() }
                    try mine.setValue(.int(value + 1), forKey: "value")
                    do {
                        try context.save()
                        break
                    } catch AmberError.saveFailed(let problems) where problems.allSatisfy({ $0.rule == SaveProblem.Rule.conflict }) {
                        conflicts.mutate { $0 += 1 }
                        try context.refresh(mine, mergeChanges: false)
                    }
                }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let fresh = try #require(try Context(store: store).fetch("Counter").first)
        #expect(try fresh.value(forKey: "value") == .int(300))
    }
}
