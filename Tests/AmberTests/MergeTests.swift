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

/// A library file opened by two stores, as two processes would, with one saved author per name.
private struct TwoConnections {
    let directory = temporaryDirectory()
    let store: Store, elsewhere: Store
    let setup: Context
    let authors: [ManagedObject]

    init(authors names: [String]) throws {
        let path = directory.appendingPathComponent("library.amber").path
        let model = try Model(libraryDescription())
        (store, elsewhere) = (try Store(path: path, model: model), try Store(path: path, model: model))
        setup = Context(store: store)
        var authors: [ManagedObject] = []
        for name in names {
            let author = try setup.insert("Author")
            try author.setValue(.string(name), forKey: "name")
            authors.append(author)
        }
        self.authors = authors
        try setup.save()
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
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

    /// A save by another writer between the merge a save makes first and
    /// its write (here, from inside that merge's observer, so the race is
    /// certain) is settled as the merge would have settled it: no conflict,
    /// the values set here over the stored row, the others' values kept.
    /// A row deleted meanwhile is still a conflict (issue 43, item 6).
    @Test func automaticMergingSettlesASaveMadeAfterItsMerge() throws {
        let pair = try Pair()
        defer { pair.remove() }
        pair.here.automaticallyMergesChanges = true
        pair.there.automaticallyMergesChanges = true
        var racing: [(String, Value)] = [("size", .int(7)), ("color", .string("green"))]
        pair.here.addObserver { report in
            guard report.event == .merged, !racing.isEmpty else { return }
            let (key, value) = racing.removeFirst()
            try pair.saveThere(key, value)  // after the merge, before the write
        }
        try pair.saveThere("size", .int(5))  // something for the pre-save merge, so the observer runs
        try pair.shape.setValue(.string("blue"), forKey: "color")
        try pair.here.save()
        let reader = Context(store: pair.store)
        let stored = try #require(try reader.fetch("Shape").first)
        #expect(try stored.value(forKey: "color") == .string("blue") && stored.value(forKey: "size") == .int(7))
        #expect(try pair.shape.value(forKey: "size") == .int(7) && !pair.here.hasChanges)
        // The same key set on both sides: the value set here wins, as a merge keeps it.
        try pair.shape.setValue(.int(3), forKey: "size")
        try pair.saveThere("size", .int(4))
        try pair.here.save()
        #expect(try Context(store: pair.store).fetch("Shape").first?.value(forKey: "size") == .int(3))
        // Deleted by the other writer after the merge: still a conflict, nothing written.
        racing = []
        try pair.shape.setValue(.string("red"), forKey: "color")
        pair.here.addObserver { report in
            guard report.event == .merged, pair.other.context != nil, !pair.other.isDeleted else { return }
            try pair.there.delete(pair.other)
            try pair.there.save()
        }
        try pair.saveThere("size", .int(11))
        #expect(throws: AmberError.self) { try pair.here.save() }
    }

    /// Observers hear the objects other contexts inserted, on this store and
    /// through another connection (from the history), with their values; one
    /// inserted and deleted again before the merge is not listed.
    @Test func observersHearWhatOthersInserted() throws {
        let pair = try Pair()
        defer { pair.remove() }
        var reports: [ChangeReport] = []
        pair.here.addObserver { reports.append($0) }
        func insert(_ context: Context, _ color: String) throws -> ManagedObject {
            let shape = try context.insert("Shape")
            try shape.setValue(.string(color), forKey: "color")
            return shape
        }
        for color in ["cyan", "magenta"] { _ = try insert(pair.there, color) }
        let gone = try insert(pair.there, "yellow")
        try pair.there.save()
        try pair.there.delete(gone)
        try pair.there.save()
        try pair.here.mergeSavedChanges()
        var colors = try reports.last?.inserted.map { try $0.value(forKey: "color") }
        #expect(colors == ["cyan", "magenta"] && reports.last?.inserted.allSatisfy { $0.context === pair.here } == true)
        let elsewhere = Context(store: try Store(path: pair.store.path ?? "", model: pair.store.model))
        _ = try insert(elsewhere, "black")
        try elsewhere.save()
        try pair.here.mergeSavedChanges()
        colors = try reports.last?.inserted.map { try $0.value(forKey: "color") }
        #expect(colors == ["black"])
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
        // Nobody wrote since: a fetch that merges first costs one statement more than one that does not
        // (data_version), however many objects are held (issue 43: it compared them all, 3 ms per fetch).
        pair.here.automaticallyMergesChanges = true
        var start = pair.store.statementCount
        _ = try pair.here.fetch("Shape", where: "size == 7")
        let merging = pair.store.statementCount - start
        pair.here.automaticallyMergesChanges = false
        start = pair.store.statementCount
        _ = try pair.here.fetch("Shape", where: "size == 7")
        #expect(merging == pair.store.statementCount - start + 1)
    }

    /// Two threads increment one counter thousands of times, each retrying on
    /// conflict after a refresh: every conflict is reported, no update is lost.
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
            for _ in 0..<stressSaves {
                while true {
                    guard case .int(let value) = try mine.value(forKey: "value") else { throw TestFailure() }
                    try mine.setValue(.int(value + 1), forKey: "value")
                    do {
                        try context.save()
                        break
                    } catch AmberError.saveFailed(let problems)
                        where problems.allSatisfy({ $0.rule == SaveProblem.Rule.conflict && $0.message.contains("value: read ") })
                    {
                        conflicts.mutate { $0 += 1 }
                        try context.refresh(mine, mergeChanges: false)
                    }
                }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let fresh = try #require(try Context(store: store).fetch("Counter").first)
        #expect(try fresh.value(forKey: "value") == .int(Int64(2 * stressSaves)))
    }

    /// Two threads each set their own key of one row thousands of times under
    /// objectWins: no save fails and neither key loses a save.
    @Test func objectWinsKeepsEveryThreadsKey() throws {
        let pair = try Pair()
        defer { pair.remove() }
        let id = pair.shape.objectID, store = pair.store
        let errors = onThreads(2) { index in
            let context = Context(store: store)
            context.mergePolicy = .objectWins
            let mine = try context.object(with: id)
            for step in 1...stressSaves {
                try mine.setValue(index == 0 ? .string("c\(step)") : .int(Int64(step)), forKey: index == 0 ? "color" : "size")
                try context.save()
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let fresh = try #require(try Context(store: store).fetch("Shape").first)
        #expect(try fresh.value(forKey: "color") == .string("c\(stressSaves)"))
        #expect(try fresh.value(forKey: "size") == .int(Int64(stressSaves)))
    }
}

/// Merge policies: what a save does with a row another context changed or deleted since it was read.
@Suite struct MergePolicyTests {
    /// The three keys a scenario may set here or save there, with the value read and each side's value.
    private struct Key {
        let name: String
        let read: Value, mine: Value, theirs: Value
    }

    private func keys(_ registry: Registry) throws -> [Key] {
        [Key(name: "color", read: "red", mine: "blue", theirs: "green"),
         Key(name: "size", read: 1, mine: 2, theirs: 3),
         Key(name: "cover", read: try color(1, 0, 0, 1, in: registry), mine: try color(0, 0, 1, 1, in: registry),
             theirs: try color(0, 1, 0, 1, in: registry))]
    }

    /// Every policy, every non-empty choice of keys set here and saved there:
    /// the saved row and the object here both hold what a plain per-key rule
    /// says, and a third context merging sees it too.
    @Test func everyPolicySettlesEveryKeyAsItsRuleSays() throws {
        for policy in MergePolicy.allCases where policy != .error {
            for setHere in 1..<8 {
                for savedThere in 1..<8 {
                    let pair = try Pair()
                    defer { pair.remove() }
                    let keys = try keys(pair.registry)
                    let watcher = Context(store: pair.store)
                    let watched = try #require(try watcher.fetch("Shape").first)
                    try pair.shape.setValue("note", forKey: "scratch")
                    for (bit, key) in keys.enumerated() where setHere & (1 << bit) != 0 { try pair.shape.setValue(key.mine, forKey: key.name) }
                    for (bit, key) in keys.enumerated() where savedThere & (1 << bit) != 0 { try pair.other.setValue(key.theirs, forKey: key.name) }
                    try pair.there.save()
                    pair.here.mergePolicy = policy
                    try pair.here.save()

                    let fresh = try #require(try Context(store: pair.store).fetch("Shape").first)
                    try watcher.mergeSavedChanges()
                    for (bit, key) in keys.enumerated() {
                        let (mine, theirs) = (setHere & (1 << bit) != 0, savedThere & (1 << bit) != 0)
                        let expected: Value = switch policy {
                        case .storeWins: theirs ? key.theirs : mine ? key.mine : key.read
                        case .objectWins: mine ? key.mine : theirs ? key.theirs : key.read
                        case .overwrite, .error: mine ? key.mine : key.read
                        }
                        let place = "\(policy) set here \(setHere) saved there \(savedThere): \(key.name)"
                        #expect(try fresh.value(forKey: key.name) == expected, "\(place) saved")
                        #expect(try pair.shape.value(forKey: key.name) == expected, "\(place) here")
                        #expect(try watched.value(forKey: key.name) == expected, "\(place) merged elsewhere")
                    }
                    #expect(try pair.shape.value(forKey: "scratch") == "note")  // transient: untouched
                    #expect(!pair.here.hasChanges && !pair.shape.isUpdated)
                    // What the object holds is what is saved: the next change saves without conflict.
                    try pair.shape.setValue(9, forKey: "size")
                    pair.here.mergePolicy = .error
                    try pair.here.save()
                }
            }
        }
    }

    /// The default: the save fails listing the stored and local values of
    /// every key that differs, writes nothing and keeps every change.
    @Test func theErrorPolicyListsStoredAndLocalValues() throws {
        let pair = try Pair()
        defer { pair.remove() }
        try pair.shape.setValue("blue", forKey: "color")
        try pair.shape.setValue(2, forKey: "size")
        try pair.saveThere("color", "green")
        let error = amberError { try pair.here.save() }
        guard case .saveFailed(let problems)? = error else { Issue.record("expected saveFailed, got \(String(describing: error))"); return }
        #expect(problems.count == 1 && problems[0].rule == .conflict && problems[0].place == "Shape")
        #expect(problems[0].message.hasPrefix("was changed in the store since it was read at version 1 (now version 2): "))
        #expect(problems[0].message.contains(#"color: read "red", stored "green", here "blue""#))
        #expect(problems[0].message.contains("size: read 1, stored 1, here 2"))
        #expect(!problems[0].message.contains("cover"))  // changed on neither side
        #expect(try pair.shape.value(forKey: "color") == "blue" && pair.shape.isUpdated)
        let fresh = try #require(try Context(store: pair.store).fetch("Shape").first)
        #expect(try fresh.value(forKey: "size") == 1)

        try pair.there.delete(pair.other)
        try pair.there.save()
        guard case .saveFailed(let gone)? = amberError({ try pair.here.save() }) else { Issue.record("expected saveFailed"); return }
        #expect(gone.map(\.message) == ["was deleted in the store since it was read at version 1"])
    }

    /// A row deleted in the store: gone under storeWins; written again, with
    /// every value here and its own key, under objectWins and overwrite.
    @Test func aRowDeletedInTheStore() throws {
        for policy in [MergePolicy.storeWins, .objectWins, .overwrite] {
            let pair = try Pair()
            defer { pair.remove() }
            let watcher = Context(store: pair.store)
            _ = try watcher.fetch("Shape")
            try pair.shape.setValue("blue", forKey: "color")
            try pair.there.delete(pair.other)
            try pair.there.save()
            pair.here.mergePolicy = policy
            try pair.here.save()
            let rows = try Context(store: pair.store).fetch("Shape")
            try watcher.mergeSavedChanges()
            if policy == .storeWins {
                #expect(rows.isEmpty && pair.shape.context == nil, "\(policy)")
            } else {
                #expect(rows.count == 1 && rows[0].objectID == pair.shape.objectID, "\(policy)")
                #expect(try rows.first?.value(forKey: "color") == "blue" && rows.first?.value(forKey: "size") == 1)
                #expect(try watcher.fetch("Shape").first?.value(forKey: "color") == "blue")
                try pair.shape.setValue(4, forKey: "size")
                try pair.here.save()  // the object holds the version written
            }
        }
    }

    /// A deletion here of a row changed in the store: a conflict by default; carried out under every other policy.
    @Test func aDeletionHereOfARowChangedInTheStore() throws {
        for policy in MergePolicy.allCases {
            let pair = try Pair()
            defer { pair.remove() }
            try pair.here.delete(pair.shape)
            try pair.saveThere("size", 5)
            pair.here.mergePolicy = policy
            if policy == .error {
                guard case .saveFailed(let problems)? = amberError({ try pair.here.save() }) else { Issue.record("expected saveFailed"); return }
                #expect(problems.map(\.message) == ["was changed in the store since it was read at version 1 (now version 2) and is deleted here: "
                                                        + "size: read 1, stored 5"])
                #expect(pair.shape.isDeleted && pair.here.hasChanges)
            } else {
                try pair.here.save()
                #expect(try Context(store: pair.store).fetch("Shape").isEmpty, "\(policy)")
            }
        }
    }

    /// To-one relationships are keys like attributes; to-many members added
    /// on both sides are all kept.
    @Test func relationshipsSettlePerKey() throws {
        for policy in [MergePolicy.storeWins, .objectWins, .overwrite] {
            let directory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try Store(path: directory.appendingPathComponent("library.amber").path, model: try Model(libraryDescription()))
            let setup = Context(store: store)
            let ann = try setup.insert("Author"), bob = try setup.insert("Author"), cy = try setup.insert("Author")
            for (author, name) in [(ann, "Ann"), (bob, "Bob"), (cy, "Cy")] { try author.setValue(.string(name), forKey: "name") }
            let book = try setup.insert("Book")
            try book.setValue("Dune", forKey: "title")
            try book.setObject(ann, forKey: "author")
            try setup.save()

            let here = Context(store: store), there = Context(store: store)
            here.mergePolicy = policy
            let mine = try here.object(with: book.objectID), theirs = try there.object(with: book.objectID)
            try mine.setObject(try here.object(with: bob.objectID), forKey: "author")
            try theirs.setObject(try there.object(with: cy.objectID), forKey: "author")
            try theirs.setValue(12.5, forKey: "price")
            let tagHere = try here.insert("Tag"), tagThere = try there.insert("Tag")
            try tagHere.setValue("mine", forKey: "label")
            try tagThere.setValue("theirs", forKey: "label")
            try mine.setObjects([tagHere], forKey: "tags")
            try theirs.setObjects([tagThere], forKey: "tags")
            try there.save()
            try here.save()

            let reader = Context(store: store)
            let fresh = try reader.object(with: book.objectID)
            let expectedAuthor = policy == .storeWins ? "Cy" : "Bob"
            #expect(try fresh.object(forKey: "author")?.value(forKey: "name") == .string(expectedAuthor), "\(policy)")
            #expect(try mine.object(forKey: "author")?.value(forKey: "name") == .string(expectedAuthor), "\(policy)")
            #expect(try fresh.value(forKey: "price") == (policy == .overwrite ? .null : 12.5), "\(policy)")
            let labels = try fresh.objects(forKey: "tags").map { try $0.value(forKey: "label") }
            #expect(Set(labels) == ["mine", "theirs"], "\(policy)")
            // Each author's books agree with the books' authors.
            let bobs = try reader.object(with: bob.objectID).objects(forKey: "books").count
            #expect(bobs == (policy == .storeWins ? 0 : 1), "\(policy)")
        }
    }

    /// Links a save leaves to rows that are gone are refused inside its
    /// transaction, naming the object and relationship, even when the
    /// context could not know (another connection, as another process has,
    /// deleted or linked since it read): a new book linked to an author
    /// deleted since, and an author deleted here that a book saved
    /// elsewhere now points at. Nothing is written; the changes stay.
    @Test func linksToRowsAnotherSaveRemovedAreRefused() throws {
        let files = try TwoConnections(authors: ["Ann", "Bob"])
        defer { files.remove() }
        let (store, elsewhere, setup) = (files.store, files.elsewhere, files.setup)
        let (ann, bob) = (files.authors[0], files.authors[1])

        // A new book linked to an author another connection deleted since it was read.
        let there = Context(store: elsewhere)
        let annThere = try there.object(with: ann.objectID), bobThere = try there.object(with: bob.objectID)
        _ = try bobThere.objects(forKey: "books")  // Bob's books (none) are loaded: deleting him below deletes none
        try setup.delete(ann)
        try setup.save()
        let dune = try there.insert("Book")
        try dune.setValue("Dune", forKey: "title")
        try dune.setObject(annThere, forKey: "author")
        guard case .saveFailed(let problems) = amberError({ try there.save() }) else {
            Issue.record("a link to a deleted row was saved")
            return
        }
        #expect(problems.count == 1)
        #expect(problems.first?.objectID == dune.objectID && problems.first?.place == "Book.author" && problems.first?.rule == .relationship)
        #expect(problems.first?.message.contains("Author \(ann.objectID.primaryKey ?? 0)") == true)
        #expect(there.insertedObjects.count == 1)
        #expect(try Context(store: store).count(FetchRequest("Book")) == 0)
        try there.delete(dune)

        // An author deleted here whom a book saved elsewhere, since, points at.
        let emma = try setup.insert("Book")
        try emma.setValue("Emma", forKey: "title")
        try emma.setObject(bob, forKey: "author")
        try setup.save()
        try there.delete(bobThere)
        guard case .saveFailed(let left) = amberError({ try there.save() }) else {
            Issue.record("a deletion that leaves a link was saved")
            return
        }
        #expect(left.count == 1)
        #expect(left.first?.objectID == emma.objectID && left.first?.place == "Book.author" && left.first?.rule == .relationship)
        #expect(left.first?.message.contains("which this save deletes") == true)
        #expect(there.deletedObjects.count == 1)
        // The context found this one before writing; the store checks again inside the write, where no other save can come between.
        var changes = ChangeSet<ManagedObject>()
        changes.deletes.append(bobThere)
        guard case .saveFailed(let written)? = amberError({ _ = try elsewhere.write(changes) }) else {
            Issue.record("the store wrote a deletion that leaves a link")
            return
        }
        #expect(written.map(\.objectID) == [emma.objectID] && written.first?.place == "Book.author")
        let reader = Context(store: store)
        #expect(try reader.fetch("Author").count == 1)
        #expect(try reader.fetch("Book").count == 1)
    }

    /// Only links a save wrote are checked: a storeWins save whose change to
    /// a book's author meets the book (and the new author) deleted elsewhere
    /// writes nothing for the book and succeeds; a deletion refused as a
    /// conflict deletes nothing, so rows pointing at it are no problem.
    @Test func onlyLinksASaveWroteAreChecked() throws {
        let files = try TwoConnections(authors: ["Ann", "Bob", "Cy"])
        defer { files.remove() }
        let (store, elsewhere, setup) = (files.store, files.elsewhere, files.setup)
        let (ann, bob, cy) = (files.authors[0], files.authors[1], files.authors[2])
        let dune = try setup.insert("Book")
        try dune.setValue("Dune", forKey: "title")
        try dune.setObject(ann, forKey: "author")
        try setup.save()

        let here = Context(store: store)
        here.mergePolicy = .storeWins
        try here.object(with: dune.objectID).setObject(try here.object(with: bob.objectID), forKey: "author")
        let there = Context(store: elsewhere)
        try there.delete(try there.object(with: dune.objectID))
        try there.delete(try there.object(with: bob.objectID))
        try there.save()
        try here.save()
        #expect(try Context(store: store).count(FetchRequest("Book")) == 0)

        // Cy, deleted here, was renamed and given a book elsewhere since: under the error policy that is one conflict, nothing more.
        let cyHere = try Context(store: store).object(with: cy.objectID)
        let other = Context(store: elsewhere), cyThere = try other.object(with: cy.objectID)
        try cyThere.setValue("Cyrano", forKey: "name")
        let emma = try other.insert("Book")
        try emma.setValue("Emma", forKey: "title")
        try emma.setObject(cyThere, forKey: "author")
        try other.save()
        var changes = ChangeSet<ManagedObject>()
        changes.deletes.append(cyHere)
        guard case .saveFailed(let problems)? = amberError({ _ = try store.write(changes, policy: .error) }) else {
            Issue.record("a conflicting deletion was written")
            return
        }
        #expect(problems.map(\.rule) == [.conflict])
    }
}
