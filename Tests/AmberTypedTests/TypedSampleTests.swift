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

    /// README.md, after the handles sample.
    @Test func readmeTypedClasses() throws {
        let modelURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Library.amber.json")
        let context = Context(store: try Store.inMemory(model: Model(ModelDescription(contentsOf: modelURL))))
        let novel = try context.insert(Novel.self)        // Novel's entity inherits from Book's
        try novel.set(title: "Dune")
        try novel.set(pages: 412)                          // pages: Int32?, as the model says
        let long = try context.fetch(Book.self, where: "pages > %@", 300)
        let title: String = try long[0].title              // long[0] is a Novel
        #expect(title == "Dune" && long[0] is Novel)
    }
}
