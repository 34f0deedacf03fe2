import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

@Suite struct SaveTests {
    @Test func validationErrorsAreAggregatedAndChangesSurvive() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        let bad = try context.insert("Book")            // title and author missing
        try bad.setValue(.decimal(-5), forKey: "price")  // below min 0
        let worse = try insertBook(context, "", "X", pages: .int(0))  // title too short, pages below 1
        try worse.setValue("12-34", forKey: "isbn")      // pattern

        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("save should fail")
            return
        }
        let summary = problems.map { "\($0.place) \($0.rule)" }.sorted()
        #expect(summary == ["Book.author required", "Book.isbn pattern", "Book.pages minValue", "Book.price minValue",
                            "Book.title minLength", "Book.title required"])
        #expect(problems.allSatisfy { $0.objectID != nil })
        // Nothing was written, nothing was lost.
        var stored = FetchRequest("Book")
        stored.includesPendingChanges = false
        #expect(try context.count(stored) == 0)
        #expect(try context.count(FetchRequest("Book")) == 2)
        #expect(context.insertedObjects.count == 2)
        #expect(try worse.value(forKey: "isbn") == "12-34")

        // Fix every value, save again: it succeeds.
        try bad.setValue("Dune", forKey: "title")
        try bad.setValue("Herbert", forKey: "author")
        try bad.setValue(.decimal(9), forKey: "price")
        try worse.setValue("Emma", forKey: "title")
        try worse.setValue(.int(300), forKey: "pages")
        try worse.setValue("9780141439587", forKey: "isbn")
        try context.save()
        #expect(!context.hasChanges)
        #expect(try Context(store: store).count(FetchRequest("Book")) == 2)
    }

    @Test func uniquenessViolationNamesTheConstraintAndWritesNothing() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try context.save()

        let other = Context(store: store)
        try insertBook(other, "Emma", "Austen")
        let duplicate = try insertBook(other, "Dune", "Herbert")
        let error = amberError { try other.save() }
        guard case .saveFailed(let problems) = error else {
            Issue.record("expected a save failure, got \(String(describing: error))")
            return
        }
        #expect(problems.count == 1)
        #expect(problems[0].rule == .uniqueness)
        #expect(problems[0].place == "Book(title, author)")
        #expect(problems[0].objectID == duplicate.objectID)
        #expect(problems[0].message.contains("title = \"Dune\", author = \"Herbert\""))
        // Emma was inserted inside the failed transaction and rolled back with it.
        #expect(try titles(Context(store: store).fetch("Book")) == ["Dune"])
        #expect(other.insertedObjects.count == 2)
        #expect(duplicate.objectID.isTemporary)

        try duplicate.setValue("Dune Messiah", forKey: "title")
        try other.save()
        #expect(try Context(store: store).count(FetchRequest("Book")) == 3)
    }

    /// A large save inserts rows several to a statement; a duplicate in one
    /// of them is still reported on its own object, with every other
    /// duplicate of the save, and nothing is written.
    @Test func aLargeSaveNamesEveryDuplicateRow() throws {
        let store = try Store.inMemory(model: try booksModel())
        let seed = Context(store: store)
        for index in 0..<10 { try insertBook(seed, "T\(index)", "A") }
        try seed.save()

        let context = Context(store: store)
        var books: [ManagedObject] = []
        // Duplicates of stored rows in the first, second and third run of 32 and among the last rows, and two new rows alike.
        let duplicates = [3: "T1", 40: "T2", 77: "T3", 99: "T4", 11: "N10"]
        for index in 0..<100 { books.append(try insertBook(context, duplicates[index] ?? "N\(index)", "A")) }
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("save should fail")
            return
        }
        #expect(problems.allSatisfy { $0.rule == .uniqueness && $0.place == "Book(title, author)" })
        #expect(Set(problems.compactMap(\.objectID)) == Set([3, 11, 40, 77, 99].map { books[$0].objectID }))
        #expect(problems.count == 5)
        #expect(try Context(store: store).count(FetchRequest("Book")) == 10)
        #expect(context.insertedObjects.count == 100)

        for index in duplicates.keys { try books[index].setValue(.string("D\(index)"), forKey: "title") }
        try context.save()
        let fresh = Context(store: store)
        for book in books { #expect(try fresh.object(with: book.objectID).value(forKey: "title") == book.value(forKey: "title")) }
        #expect(try fresh.count(FetchRequest("Book")) == 110)
    }

    @Test func oneSaveListsValidationAndUniquenessProblemsTogether() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try context.save()

        let tooShort = try insertBook(context, "Emma", "Austen", pages: .int(0))
        let duplicate = try insertBook(context, "Dune", "Herbert")
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("save should fail")
            return
        }
        #expect(problems.map(\.rule) == [.minValue, .uniqueness])
        #expect(problems.map(\.objectID) == [tooShort.objectID, duplicate.objectID])
        #expect(problems[1].place == "Book(title, author)")
        // The trial write was rolled back: nothing of this save is stored, and it can be fixed and saved.
        #expect(try titles(Context(store: store).fetch("Book")) == ["Dune"])
        try tooShort.setValue(.int(300), forKey: "pages")
        try duplicate.setValue("Dune Messiah", forKey: "title")
        try context.save()
        #expect(try Context(store: store).count(FetchRequest("Book")) == 3)
    }

    /// The trial write settles conflicts as the save would: a row changed in
    /// the store since it was read is still written under objectWins, so its
    /// broken constraint is listed; and a trial never waits for a busy store.
    @Test func theUniquenessTrialFollowsTheMergePolicy() throws {
        let store = try Store.inMemory(model: try booksModel())
        let seed = Context(store: store)
        try insertBook(seed, "Dune", "Herbert")
        try insertBook(seed, "Emma", "Austen")
        try seed.save()
        let context = Context(store: store)
        context.mergePolicy = .objectWins
        let emma = try #require(try context.fetch("Book", where: "title == 'Emma'").first)
        let other = Context(store: store)
        try #require(try other.fetch("Book", where: "title == 'Emma'").first).setValue(.int(300), forKey: "pages")
        try other.save()  // emma is now a conflict for `context`

        try emma.setValue("Dune", forKey: "title")
        try emma.setValue("Herbert", forKey: "author")
        let short = try insertBook(context, "Short", "X", pages: .int(0))
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("save should fail")
            return
        }
        #expect(problems.map(\.rule) == [.minValue, .uniqueness])
        #expect(problems.map(\.objectID) == [short.objectID, emma.objectID])
    }

    /// Differential: the uniqueness problems a save reports alongside
    /// validation problems are exactly those it reports once the validation
    /// problems are fixed, over random saves (stored, new and changed books).
    @Test func uniquenessProblemsDoNotWaitForValidation() throws {
        var random = SplitMix64(seed: 17)
        var mixed = 0  // rounds with both kinds of problem: the property is not vacuous
        for round in 0..<40 {
            let store = try Store.inMemory(model: try booksModel())
            let seed = Context(store: store)
            for index in 0..<4 { try insertBook(seed, "T\(index)", "A") }
            try seed.save()

            let context = Context(store: store)
            var books = try context.fetch(FetchRequest("Book"))
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                books.append(try insertBook(context, "T\(Int.random(in: 0..<6, using: &random))", "A"))
            }
            for book in books where Int.random(in: 0..<4, using: &random) == 0 {
                try book.setValue(.string("T\(Int.random(in: 0..<6, using: &random))"), forKey: "title")
            }
            let invalid = books.filter { _ in Int.random(in: 0..<3, using: &random) == 0 }
            for book in invalid { try book.setValue(.int(0), forKey: "pages") }

            guard case .saveFailed(let together)? = amberError({ try context.save() }) else {
                if invalid.isEmpty { continue }  // no validation problem, and no duplicate: saved
                Issue.record("round \(round): the save should fail")
                return
            }
            #expect(together.filter { $0.rule == .minValue }.count == invalid.count, "round \(round)")
            for book in invalid { try book.setValue(.int(1), forKey: "pages") }
            let alone: [SaveProblem]
            if case .saveFailed(let problems)? = amberError({ try context.save() }) { alone = problems } else { alone = [] }
            #expect(alone.allSatisfy { $0.rule == .uniqueness }, "round \(round)")
            #expect(together.filter { $0.rule == .uniqueness } == alone, "round \(round)")
            if !invalid.isEmpty && !alone.isEmpty { mixed += 1 }
        }
        #expect(mixed >= 5)
    }

    @Test func objectIDsAreTemporaryUntilSavedThenPermanent() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        let book = try insertBook(context, "Dune", "Herbert")
        let temporary = book.objectID
        #expect(temporary.isTemporary)
        #expect(temporary.uriRepresentation.absoluteString.hasPrefix("amber://\(store.identifier.uuidString)/Book/t"))
        try context.save()
        #expect(!book.objectID.isTemporary)
        let uri = book.objectID.uriRepresentation
        #expect(uri.absoluteString == "amber://\(store.identifier.uuidString)/Book/p1")
        let parsed = try #require(ObjectID(uri: uri))
        #expect(parsed == book.objectID)
        #expect(try context.object(with: parsed) === book)
        let fresh = Context(store: store)
        let found = try fresh.object(with: parsed)
        #expect(try found.value(forKey: "title") == "Dune")
        #expect(amberError { _ = try fresh.object(with: temporary) } == .objectNotFound(temporary))
        #expect(ObjectID(uri: URL(string: "amber://nope/Book/p1")!) == nil)
    }

    @Test func changeTrackingReportsInsertedUpdatedDeletedAndValues() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        let dune = try insertBook(context, "Dune", "Herbert", price: .decimal(10))
        let emma = try insertBook(context, "Emma", "Austen")
        #expect(context.hasChanges)
        #expect(context.insertedObjects == [dune, emma])
        #expect(dune.changedValues()["title"] == "Dune")
        #expect(try dune.committedValues().isEmpty)
        try context.save()
        #expect(!context.hasChanges && context.insertedObjects.isEmpty)

        try dune.setValue(.decimal(12), forKey: "price")
        try context.delete(emma)
        #expect(context.updatedObjects == [dune])
        #expect(context.deletedObjects == [emma])
        #expect(dune.isUpdated && emma.isDeleted)
        #expect(dune.changedValues() == ["price": .decimal(12)])
        #expect(try dune.committedValues()["price"] == .decimal(10))

        // Setting the committed value back means no change.
        try dune.setValue(.decimal(10), forKey: "price")
        #expect(!dune.isUpdated && context.updatedObjects.isEmpty)

        try context.save()
        #expect(emma.context == nil)
        #expect(try titles(Context(store: store).fetch("Book")) == ["Dune"])
        #expect(amberError { try emma.setValue("x", forKey: "title") } != nil)
    }

    @Test func rollbackDiscardsEveryPendingChange() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        let dune = try insertBook(context, "Dune", "Herbert")
        try context.save()
        try dune.setValue("Dune!", forKey: "title")
        try dune.setValue("remember", forKey: "note")
        let extra = try insertBook(context, "Emma", "Austen")
        let doomed = try insertBook(context, "Gone", "Nobody")
        try context.delete(doomed)
        context.rollback()
        #expect(!context.hasChanges)
        #expect(try dune.value(forKey: "title") == "Dune")
        #expect(try dune.value(forKey: "note") == .null, "transient values roll back too")
        #expect(extra.context == nil)
        try context.save()
        #expect(try Context(store: store).count(FetchRequest("Book")) == 1)
    }

    @Test func deletingANewObjectDropsIt() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        let book = try insertBook(context, "Dune", "Herbert")
        try context.delete(book)
        #expect(!context.hasChanges)
        #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty)
        try context.save()
        #expect(try context.count(FetchRequest("Book")) == 0)
        #expect(book.context == nil)
    }

    @Test func transientAttributesAreTrackedButNeverStored() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        let book = try insertBook(context, "Dune", "Herbert")
        try book.setValue("scratch", forKey: "note")
        try context.save()
        #expect(try book.value(forKey: "note") == "scratch")
        let reader = Context(store: store)
        let fetched = try reader.fetch("Book")[0]
        #expect(try fetched.value(forKey: "note") == .null)
        try fetched.setValue("changed", forKey: "note")
        #expect(fetched.isUpdated)
        #expect(amberError { _ = try context.fetch("Book", where: "note == 'x'") } != nil)
    }

    @Test func defaultsApplyToNewObjects() throws {
        let context = Context(store: try Store.inMemory(model: try booksModel()))
        let book = try context.insert("Book")
        #expect(try book.value(forKey: "isRead") == false)
    }

    @Test func optimisticLockingDetectsAConcurrentChange() throws {
        let store = try Store.inMemory(model: try booksModel())
        let first = Context(store: store)
        try insertBook(first, "Dune", "Herbert")
        try first.save()
        let contextA = Context(store: store), contextB = Context(store: store)
        let a = try contextA.fetch("Book")[0]
        let b = try contextB.fetch("Book")[0]
        try a.setValue(.int(100), forKey: "pages")
        try contextA.save()
        try b.setValue(.int(200), forKey: "pages")
        guard case .saveFailed(let problems) = amberError({ try contextB.save() }) else {
            Issue.record("the stale save should fail")
            return
        }
        #expect(problems.map(\.rule) == [.conflict])
        #expect(try b.value(forKey: "pages") == .int(200), "the losing context keeps its change")
        #expect(try Context(store: store).fetch("Book")[0].value(forKey: "pages") == .int(100))
    }

    @Test func fetchReturnsTheRegisteredInstanceWithItsPendingChanges() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        try insertBook(context, "Dune", "Herbert")
        try insertBook(context, "Emma", "Austen")
        try context.save()
        let first = try context.fetch("Book", where: "title == 'Dune'")[0]
        try first.setValue(.int(5), forKey: "pages")
        let again = try context.fetch("Book", where: "title == 'Dune'")[0]
        #expect(first === again)
        #expect(try again.value(forKey: "pages") == .int(5))
        let emma = try context.fetch("Book", where: "title == 'Emma'")[0]
        try context.delete(emma)
        #expect(try titles(context.fetch("Book")) == ["Dune"])
        #expect(try context.count(FetchRequest("Book")) == 1)
    }
}

@Suite struct LifetimeTests {
    /// Objects nobody holds leave the context's registry: iterating a large
    /// fetch in batches keeps no more than a batch alive.
    @Test func unheldFetchedObjectsAreReleased() throws {
        let store = try Store.inMemory(model: try booksModel())
        let writer = Context(store: store)
        for i in 0..<2_000 { _ = try insertBook(writer, "Title \(i)", "Author", pages: .int(Int64(i % 500 + 1))) }
        try writer.save()
        let reader = Context(store: store)
        var titles = 0
        for start in stride(from: 0, to: 2_000, by: 500) {
            let batch = try reader.fetch(FetchRequest("Book", sortedBy: [.ascending("title")], limit: 500, offset: start))
            titles += try batch.filter { try $0.value(forKey: "title") != .null }.count
            #expect(reader.registeredObjectCount == 500)
        }
        #expect(titles == 2_000)
        #expect(reader.registeredObjectCount == 0, "no batch is kept once dropped")
        // A changed object stays while it has pending changes, even unheld.
        try reader.fetch(FetchRequest("Book", limit: 1)).first?.setValue("Changed", forKey: "title")
        #expect(reader.registeredObjectCount == 1)
        #expect(reader.updatedObjects.count == 1)
    }

    /// Every way out of a context leaves an object refusing changes.
    @Test func objectsThatLeaveTheirContextRefuseChanges() throws {
        let store = try Store.inMemory(model: try booksModel())
        var context: Context? = Context(store: store)
        let rolledBack = try insertBook(try #require(context), "A", "B")
        context?.rollback()
        #expect(rolledBack.context == nil)
        let kept = try insertBook(try #require(context), "C", "D")
        try context?.save()
        let deleted = try insertBook(try #require(context), "E", "F")
        try context?.save()
        try context?.delete(deleted)
        try context?.save()
        #expect(deleted.context == nil)
        #expect(try context?.count(FetchRequest("Book")) == 1)
        context = nil
        #expect(kept.context == nil)
        for object in [rolledBack, deleted, kept] {
            guard case .objectUnavailable? = amberError({ try object.setValue("X", forKey: "title") }) else {
                Issue.record("\(object) accepted a change after leaving its context")
                continue
            }
        }
    }
}
