import Amber
import Foundation
import Testing

/// The Swift samples about generated classes (the GeneratedClasses article,
/// the README), as written; ReadmeSampleTests.everySampleIsRun checks they are here.
@Suite struct TypedSampleTests {
    @Test func generatedClassesArticle() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("typed-sample-\(UUID()).amber").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let modelURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Library.amber.json")
        let store = try Store(path: path, model: Model(ModelDescription(contentsOf: modelURL)))
        try LibraryClasses.check(store.model)

        let context = Context(store: store)
        let author = try context.insert(Author.self)
        try author.set(name: "Frank Herbert")
        let dune = try context.insert(Novel.self)
        try dune.set(title: "Dune")
        try dune.set(pages: 412)
        try dune.set(author: author)
        try context.save()

        for book in try context.fetch(Book.self, where: "pages > %@", 300, sortedBy: [.ascending("title")]) {
            print(try book.title, try book.author?.name ?? "anonymous", book is Novel)
        }
        #expect(try context.fetch(Book.self, where: "pages > %@", 300).map { try $0.title } == ["Dune"])
    }

    /// The GeneratedClasses article's model logic sample.
    @Test func modelLogicArticle() throws {
        let modelURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Library.amber.json")
        let store = try Store.inMemory(model: Model(ModelDescription(contentsOf: modelURL)))
        let context = Context(store: store)

        enum ShelfError: Error { case inPrint }

        final class ShelvedBook: Book {
            override func awakeFromInsert() {
                try? set(pages: 0)                               // before the caller's values are set
            }

            override func validateValue(_ value: Value, forKey key: String) throws {
                if key == "title", value == .string("") { throw ValidationError("must not be empty") }
            }

            override func validateForInsert() throws {
                var problems: [ValidationError.Problem] = []
                if let pages = try pages, pages > 5000 { problems.append(.init(key: "pages", "more than 5000 pages")) }
                if try author == nil { problems.append(.init(key: "author", "needs an author")) }
                if !problems.isEmpty { throw ValidationError(problems) }
            }

            override func prepareForDeletion() throws {
                if try inPrint == true { throw ShelfError.inPrint }   // refuses the deletion
            }
        }
        try store.model.use(ShelvedBook.self)

        let draft = try context.insert(Book.self)
        try draft.set(title: "")
        try draft.set(pages: 9000)
        do {
            try context.save()
        } catch {   // typed throws: error is an AmberError
            guard case .saveFailed(let problems) = error else { throw error }
            for problem in problems { print(problem.place, problem.message) }   // Book.title, Book.pages, Book.author
        }
        let error = try #require(throws: AmberError.self) { try context.save() }
        guard case .saveFailed(let problems) = error else { Issue.record("not a save failure: \(error)"); return }
        #expect(Set(problems.map(\.place)) == ["Book.title", "Book.pages", "Book.author"])
        #expect(context.insertedObjects.count == 1)
        let fresh = try context.insert(Book.self)
        #expect(try fresh.pages == 0)
        try fresh.set(inPrint: true)
        #expect(throws: AmberError.self) { try context.delete(fresh.object) }
        context.rollback()
    }

    /// README.md, "Swift in a minute": the typed classes and model logic.
    @Test func readmeSwiftMinute() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("readme-typed-\(UUID()).amber").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let modelURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Library.amber.json")
        let store = try Store(path: path, model: Model(ModelDescription(contentsOf: modelURL)))
        let context = Context(store: store)

        let author = try context.insert(Author.self)
        try author.set(name: "Frank Herbert")
        let dune = try context.insert(Novel.self)          // Novel's entity inherits from Book's
        try dune.set(title: "Dune")
        try dune.set(pages: 412)                           // pages: Int32?, as the model says
        try dune.set(author: author)
        try context.save()   // one transaction; on failure nothing is written and nothing is lost

        let long = try context.fetch(Book.self, where: "pages > %@", 300, sortedBy: [.descending("pages")])
        let title: String = try long[0].title              // long[0] is a Novel
        #expect(title == "Dune" && long[0] is Novel)

        final class CheckedBook: Book {
            override func validateForInsert() throws {
                if try title.isEmpty { throw ValidationError(key: "title", "must not be empty") }
            }

            override func willSave() throws {   // changes made here are saved in the same transaction
                if try author == nil, try self.title == "Untitled" { try set(title: "Untitled (anonymous)") }
            }
        }
        try store.model.use(CheckedBook.self)   // Book objects now come as CheckedBook, and Novels run its logic

        let untitled = try context.insert(Book.self)
        #expect(untitled is CheckedBook)
        try untitled.set(title: "Untitled")
        try context.save()
        #expect(try untitled.title == "Untitled (anonymous)")
        let empty = try context.insert(Novel.self)
        try empty.set(title: "")
        #expect(throws: AmberError.self) { try context.save() }
        context.rollback()
    }
}
