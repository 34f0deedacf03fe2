import Amber
import Foundation
import Synchronization
import Testing

/// What the hooks below were called for, in order: "hook Entity title".
private let calls = Mutex<[String]>([])

private func record(_ hook: String, _ object: TypedObject) {
    let key = object.object.entity.name == "Author" ? "name" : "title"
    var name = "-"
    if case .string(let text)? = try? object.object.value(forKey: key) { name = text }
    calls.withLock { $0.append("\(hook) \(object.object.entity.name) \(name)") }
}

private func takeCalls() -> [String] { calls.withLock { calls in defer { calls.removeAll() }; return calls } }

/// A class with model logic, written by hand over the generated `Book`.
final class LoggedBook: Book {
    override func awakeFromInsert() {
        record("awakeFromInsert", self)
        try? set(pages: 1)
    }

    override func awakeFromFetch() { record("awakeFromFetch", self) }

    override func validateValue(_ value: Value, forKey key: String) throws {
        if key == "title", value == .string("") { throw ValidationError("must not be empty") }
    }

    override func validateForInsert() throws {
        var problems: [ValidationError.Problem] = []
        if let pages = try pages, pages > 5000 { problems.append(.init(key: "pages", "more than 5000 pages")) }
        if try title == "Untitled", try author == nil { problems.append(.init("an untitled book needs an author")) }
        if !problems.isEmpty { throw ValidationError(problems) }
    }

    override func validateForDelete() throws {
        if try inPrint == true { throw ValidationError(key: "inPrint", "a book in print cannot be deleted") }
    }

    override func willSave() throws {
        record("willSave", self)
        if try title == "explode" { throw HookTrouble.refused }
        // A change to another object, saved in the same transaction: its own willSave runs too.
        if let author = try author, try author.born == nil { try author.set(born: Date(timeIntervalSince1970: 0)) }
    }

    override func didSave() { record("didSave", self) }

    override func prepareForDeletion() throws {
        record("prepareForDeletion", self)
        if try title == "keep" { throw HookTrouble.refused }
    }

    override func didTurnIntoFault() { record("didTurnIntoFault", self) }
}

final class LoggedAuthor: Author {
    override func willSave() throws { record("willSave", self) }
    override func prepareForDeletion() throws { record("prepareForDeletion", self) }
}

enum HookTrouble: Error { case refused }

/// Model logic in code through generated classes: validators and lifecycle hooks.
@Suite(.serialized) struct ModelLogicTests {
    func makeContext() throws -> Context {
        let model = try Model(try ModelDescription(contentsOf: TypedClassTests.modelURL))
        try model.use(LoggedBook.self, LoggedAuthor.self)
        _ = takeCalls()
        return Context(store: try Store.inMemory(model: model))
    }

    @Test func validatorsReportEveryProblemWithTheDeclaredRules() throws {
        let context = try makeContext()
        let empty = try context.insert(Book.self)
        #expect(empty is LoggedBook)  // the class in use
        try empty.set(title: "")
        try empty.set(pages: 9000)
        let untitled = try context.insert(Book.self)
        try untitled.set(title: "Untitled")
        let nameless = try context.insert(Author.self)  // a declared rule: name is required
        _ = nameless
        let error = try #require(throws: AmberError.self) { try context.save() }
        guard case .saveFailed(let problems) = error else { Issue.record("not a save failure: \(error)"); return }
        let listed = problems.map { "\($0.place) \($0.rule) \($0.message)" }.sorted()
        #expect(listed == [
            "Author.name required a value is required, found nil",
            "Book validation an untitled book needs an author",
            "Book.pages validation more than 5000 pages",
            "Book.title validation must not be empty",
        ])
        // Every change stays: fixed, the same objects save.
        #expect(context.insertedObjects.count == 3)
        try empty.set(title: "Dune")
        try empty.set(pages: 412)
        try untitled.set(author: nameless)
        try nameless.set(name: "Frank")
        try context.save()
        #expect(try context.count(Book.self) == 2)
    }

    @Test func hooksRunInOrderAndWillSaveChangesAreSavedInTheSameTransaction() throws {
        let context = try makeContext()
        let book = try context.insert(Book.self)
        #expect(try book.pages == 1)  // set by awakeFromInsert
        try book.set(title: "Dune")
        let author = try context.insert(Author.self)
        try author.set(name: "Frank")
        try book.set(author: author)
        #expect(takeCalls() == ["awakeFromInsert Book -"])
        try context.save()
        let saved = takeCalls()
        #expect(saved.filter { $0.hasPrefix("willSave") }.sorted() == ["willSave Author Frank", "willSave Book Dune"])
        #expect(saved.filter { $0.hasPrefix("didSave") } == ["didSave Book Dune"])
        // The author's birth date, set by the book's willSave, was saved with it.
        let fresh = Context(store: context.store)
        let reread = try #require(try fresh.fetch(Author.self).first)
        #expect(try reread.born == Date(timeIntervalSince1970: 0))
        #expect(takeCalls().isEmpty)  // authors have no awakeFromFetch of their own
        let held = try fresh.fetch(Book.self)
        #expect(takeCalls() == ["awakeFromFetch Book Dune"])
        _ = try fresh.fetch(Book.self)
        #expect(takeCalls().isEmpty)  // once per object while it is held
        withExtendedLifetime(held) {}
    }

    @Test func aHookThatThrowsFailsTheSaveKeepingEveryChange() throws {
        let context = try makeContext()
        let book = try context.insert(Book.self)
        try book.set(title: "explode")
        let error = try #require(throws: AmberError.self) { try context.save() }
        guard case .hookFailed(let object, let hook, let message) = error else { Issue.record("not a hook failure: \(error)"); return }
        #expect(object == book.object.objectID && hook == "willSave" && message.contains("refused"))
        #expect(context.insertedObjects.count == 1)
        #expect(try Context(store: context.store).count(Book.self) == 0)
        try book.set(title: "calm")
        try context.save()
        #expect(try Context(store: context.store).count(Book.self) == 1)
    }

    @Test func prepareForDeletionRunsForTheCascadeBeforeAnythingIsDeleted() throws {
        let context = try makeContext()
        let author = try context.insert(Author.self)
        try author.set(name: "Frank")
        for title in ["Dune", "keep"] {
            let book = try context.insert(Book.self)
            try book.set(title: title)
            try book.set(author: author)
        }
        try context.save()
        _ = takeCalls()
        // Author.books cascades: one book's hook refuses, so nothing is deleted.
        let error = try #require(throws: AmberError.self) { try context.delete(author.object) }
        guard case .hookFailed(_, "prepareForDeletion", _) = error else { Issue.record("not a hook failure: \(error)"); return }
        #expect(context.deletedObjects.isEmpty)
        #expect(takeCalls().contains("prepareForDeletion Author Frank"))
        // A book in print may not be deleted: a validation problem of the save, not of the deletion.
        let dune = try #require(try context.fetch(Book.self, where: "title == 'Dune'").first)
        try dune.set(inPrint: true)
        try context.save()
        try context.delete(dune.object)
        let refused = try #require(throws: AmberError.self) { try context.save() }
        guard case .saveFailed(let problems) = refused else { Issue.record("not a save failure: \(refused)"); return }
        #expect(problems.map(\.place) == ["Book.inPrint"])
        context.rollback()
        try dune.set(inPrint: false)
        try context.save()
        _ = takeCalls()
        try context.delete(dune.object)
        try context.save()
        // After the save the deleted book has left the context: its ID stays, its values are gone.
        #expect(takeCalls() == ["prepareForDeletion Book Dune", "willSave Book Dune", "didSave Book -", "didTurnIntoFault Book -"])
    }

    @Test func subEntitiesRunTheirParentsLogicAndComeAsTheirOwnClass() throws {
        let context = try makeContext()
        let novel = try context.insert(Novel.self)
        #expect(takeCalls() == ["awakeFromInsert Novel -"])  // LoggedBook's, through a Novel
        try novel.set(title: "")
        let error = try #require(throws: AmberError.self) { try context.save() }
        guard case .saveFailed(let problems) = error else { Issue.record("not a save failure: \(error)"); return }
        #expect(problems.map(\.place) == ["Novel.title"])
        try novel.set(title: "Emma")
        try context.save()
        let books = try Context(store: context.store).fetch(Book.self)
        #expect(books.count == 1 && books.first is Novel && !(books.first is LoggedBook))
    }

    @Test func rollbackAndRefreshTurnObjectsIntoFaults() throws {
        let context = try makeContext()
        let book = try context.insert(Book.self)
        try book.set(title: "Dune")
        try context.save()
        _ = takeCalls()
        try book.set(title: "Dune Messiah")
        context.rollback()
        #expect(takeCalls() == ["didTurnIntoFault Book Dune"])
        try context.refresh(book.object, mergeChanges: false)
        #expect(takeCalls() == ["didTurnIntoFault Book Dune"])
        try context.refresh(book.object, mergeChanges: true)
        #expect(takeCalls().isEmpty)
    }

    @Test func willSaveThatNeverSettlesFailsTheSave() throws {
        final class Breeder: ObjectLogic {
            func willSave(_ object: ManagedObject) throws { _ = try object.context?.insert("Chapter") }
        }
        let model = try Model(try ModelDescription(contentsOf: TypedClassTests.modelURL))
        try model.setLogic(Breeder(), for: try model.entity(named: "Chapter"))
        let context = Context(store: try Store.inMemory(model: model))
        _ = try context.insert("Chapter")
        let error = try #require(throws: AmberError.self) { try context.save() }
        guard case .hookFailed(_, "willSave", let message) = error else { Issue.record("not a hook failure: \(error)"); return }
        #expect(message.contains("100 rounds"))
        #expect(context.insertedObjects.count == 101)  // every change stays, none is saved
        #expect(try Context(store: context.store).count(FetchRequest("Chapter")) == 0)
    }

    @Test func hooksThatBreakTheRulesFailCleanly() throws {
        /// Chapter: a validator that inserts; Author: a willSave that saves; Book: an awakeFromInsert that inserts.
        final class Rogue: ObjectLogic {
            func validate(_ object: ManagedObject, for change: ObjectChange) throws {
                if object.entity.name == "Chapter" { _ = try object.context?.insert("Author") }
            }
            func willSave(_ object: ManagedObject) throws {
                if object.entity.name == "Author" { try object.context?.save() }
            }
            func awakeFromInsert(_ object: ManagedObject) {
                if object.entity.name == "Book" { _ = try? object.context?.insert("Chapter") }
            }
        }
        let model = try Model(try ModelDescription(contentsOf: TypedClassTests.modelURL))
        for name in ["Chapter", "Author", "Book"] { try model.setLogic(Rogue(), for: try model.entity(named: name)) }
        let context = Context(store: try Store.inMemory(model: model))

        _ = try context.insert("Chapter")
        let validating = try #require(throws: AmberError.self) { try context.save() }
        guard case .hookFailed(_, "validate", _) = validating else { Issue.record("not a hook failure: \(validating)"); return }
        #expect(try Context(store: context.store).count(FetchRequest("Chapter")) == 0)
        context.rollback()

        let author = try context.insert("Author")
        try author.setValue("Frank", forKey: "name")
        let saving = try #require(throws: AmberError.self) { try context.save() }
        guard case .hookFailed(nil, "save", _) = saving else { Issue.record("not a hook failure: \(saving)"); return }
        #expect(context.insertedObjects.count == 1)
        context.rollback()

        // A batch whose second row is refused drops its own objects, not the chapters its hooks inserted.
        let book = try model.entity(named: "Book"), pages = try book.attribute(named: "pages")
        #expect(throws: AmberError.self) {
            try context.insert(book, setting: [pages], to: [.int(1), .string("many")])
        }
        #expect(context.insertedObjects.map(\.entity.name) == ["Chapter", "Chapter"])
    }

    @Test func logicWithoutGeneratedClassesAndClassesThatDoNotFit() throws {
        final class Counter: ObjectLogic {
            let inserted = Atomic<Int>(0)
            func awakeFromInsert(_ object: ManagedObject) { inserted.add(1, ordering: .relaxed) }
            func validate(_ object: ManagedObject, for change: ObjectChange) throws {
                throw ValidationError(key: "heading", "\(change) refused")
            }
        }
        let model = try Model(try ModelDescription(contentsOf: TypedClassTests.modelURL))
        let counter = Counter()
        try model.setLogic(counter, for: try model.entity(named: "Chapter"))
        #expect(model.logic(for: try model.entity(named: "Chapter")) === counter)
        let context = Context(store: try Store.inMemory(model: model))
        _ = try context.insert("Chapter")
        _ = try context.insert("Book")
        #expect(counter.inserted.load(ordering: .relaxed) == 1)
        let error = try #require(throws: AmberError.self) { try context.save() }
        guard case .saveFailed(let problems) = error else { Issue.record("not a save failure: \(error)"); return }
        #expect(problems.contains { $0.place == "Chapter.heading" && $0.rule == .validation && $0.message == "insert refused" })
        try model.setLogic(nil, for: try model.entity(named: "Chapter"))
        #expect(model.logic(for: try model.entity(named: "Chapter")) == nil)

        let other = try Model(ModelDescription(json: Data(#"{"entities": [{"name": "Book", "attributes": [{"name": "title", "type": "integer32"}]}]}"#.utf8)))
        #expect(throws: AmberError.self) { try other.use(LoggedBook.self) }
        #expect(throws: AmberError.self) { try other.use(LoggedAuthor.self) }
        #expect(other.logic(for: try other.entity(named: "Book")) == nil)
    }
}
