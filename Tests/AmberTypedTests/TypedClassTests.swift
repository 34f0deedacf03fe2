import Amber
import Foundation
import Testing

/// The classes the AmberGenerate plugin made from Library.amber.json at build time.
@Suite struct TypedClassTests {
    static let modelURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Library.amber.json")

    func makeStore() throws -> Store {
        try Store.inMemory(model: try Model(try ModelDescription(contentsOf: Self.modelURL)))
    }

    @Test func everyAttributeTypeRoundTripsThroughSaveAndReopen() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("typed-\(UUID()).amber").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let model = try Model(try ModelDescription(contentsOf: Self.modelURL))
        let published = Date(timeIntervalSince1970: 1_234_567.875)
        let isbn = UUID(), link = URL(string: "https://example.org/dune?x=1")!
        let price = try Value.decimal(parsing: "12.30")
        do {
            let context = Context(store: try Store(path: path, model: model))
            let book = try context.insert(Book.self)
            try book.set(title: "Dune")
            try book.set(pages: 412)
            try book.set(small: -32768)
            try book.set(big: Int64.max)
            try book.set(price: price)
            try book.set(rating: 4.25)
            try book.set(weight: 0.1)
            try book.set(inPrint: true)
            try book.set(published: published)
            try book.set(cover: Data([0, 1, 2, 255]))
            try book.set(isbn: isbn)
            try book.set(link: link)
            try book.set(extras: .array([.int(1), .string("two")]))
            try book.set(class: "fiction")
            try book.set(object_: "renamed")
            try context.save()
        }
        let context = Context(store: try Store(path: path, model: model))
        let books = try context.fetch(Book.self)
        #expect(books.count == 1)
        let book = try #require(books.first)
        #expect(try book.title == "Dune")
        #expect(try book.pages == 412)
        #expect(try book.small == -32768)
        #expect(try book.big == Int64.max)
        #expect(try book.price == price)
        #expect(try book.price?.description == "12.30")
        #expect(try book.rating == 4.25)
        #expect(try book.weight == Float(0.1))
        #expect(try book.inPrint == true)
        #expect(try book.published == published)
        #expect(try book.cover == Data([0, 1, 2, 255]))
        #expect(try book.isbn == isbn)
        #expect(try book.link == link)
        #expect(try book.extras == .array([.int(1), .string("two")]))
        #expect(try book.class == "fiction")
        #expect(try book.object_ == "renamed")
        // Typed and dynamic code see the same object.
        #expect(try book.object.value(forKey: "title") == .string("Dune"))
    }

    @Test func aStructValueClassIsASwiftStructWithItsLayout() throws {
        let context = Context(store: try makeStore())
        let book = try context.insert(Book.self)
        let point = Point(x: 1.5, y: -2, tag: 7)
        try book.set(spot: point)
        #expect(try book.spot == point)
        guard case .custom(let stored) = try book.object.value(forKey: "spot") else { Issue.record("not a custom value"); return }
        #expect(stored.className == "Point")
        #expect(stored.count == 24)  // the C struct's size, tail padding included
    }

    @Test func aRequiredValueNotSetYetIsAnErrorNamingTheAttribute() throws {
        let context = Context(store: try makeStore())
        let book = try context.insert(Book.self)
        #expect(try book.pages == nil)
        #expect { _ = try book.title } throws: { "\($0)".contains("Book.title") && "\($0)".contains("required") }
    }

    @Test func relationshipsAndInheritanceThroughGeneratedClasses() throws {
        let context = Context(store: try makeStore())
        let author = try context.insert(Author.self)
        try author.set(name: "Frank Herbert")
        let novel = try context.insert(Novel.self)
        try novel.set(title: "Dune")
        try novel.set(genre: "science fiction")
        try novel.set(author: author)
        let essay = try context.insert(Book.self)
        try essay.set(title: "Essays")
        try author.addToBooks(essay)
        let first = try context.insert(Chapter.self), second = try context.insert(Chapter.self)
        try first.set(heading: "One")
        try second.set(heading: "Two")
        try novel.set(chapters: [second, first])
        try context.save()

        #expect(try author.books == [novel, essay])
        #expect(try novel.author == author)
        #expect(try novel.chapters.map { try $0.heading } == ["Two", "One"])
        #expect(try first.book == novel)
        // A fetch of Book gives the Novel as a Novel.
        let books = try context.fetch(Book.self, sortedBy: [.ascending("title")])
        #expect(books.map { String(describing: type(of: $0)) } == ["Novel", "Book"])
        #expect(try (books.first as? Novel)?.genre == "science fiction")
        #expect(try context.fetch(Novel.self, where: "genre BEGINSWITH %@", "science").count == 1)
        #expect(try context.count(Book.self) == 2)
        try author.removeFromBooks(essay)
        #expect(try essay.author == nil)
        #expect(try novel.object.typed(as: Book.self) is Novel)
    }

    @Test func aClassUsedWithAnotherModelIsRefusedNamingEachDifference() throws {
        var description = try ModelDescription(contentsOf: Self.modelURL)
        let book = try #require(description.entities.firstIndex { $0.name == "Book" })
        description.entities[book].attributes.removeAll { $0.name == "rating" }
        if let pages = description.entities[book].attributes.firstIndex(where: { $0.name == "pages" }) {
            description.entities[book].attributes[pages].type = .string
        }
        let model = try Model(description)
        #expect { try LibraryClasses.check(model) } throws: { error in
            let text = "\(error)"
            return text.contains("Book.rating: the class has the attribute, the model does not")
                && text.contains("Book.pages: the class reads integer32, the model has string")
        }
        let context = Context(store: try Store.inMemory(model: model))
        #expect { _ = try context.insert(Book.self) } throws: { "\($0)".contains("Book.pages") }
        #expect(try context.fetch("Book").isEmpty)  // nothing was inserted
        try LibraryClasses.check(try Model(try ModelDescription(contentsOf: Self.modelURL)))
    }

    @Test func aSubclassOfYourOwnGetsItsEntitysObjectsAndNeverASiblingsClass() throws {
        let context = Context(store: try makeStore())
        let novel = try context.insert(Novel.self)
        try novel.set(title: "Dune")
        let essay = try context.insert(Book.self)
        try essay.set(title: "Essays")
        // MyBook is not above Novel: a Novel comes as a MyBook (Book's class, yours), not as the generated Novel.
        let mine = try context.fetch(MyBook.self, sortedBy: [.ascending("title")])
        #expect(try mine.map { try $0.title } == ["Dune", "Essays"])
        #expect(mine.allSatisfy { type(of: $0) == MyBook.self })
        #expect(try mine[0].shout() == "DUNE")
        // A class of another entity is refused, naming both.
        #expect { _ = try essay.object.typed(as: Chapter.self) } throws: { "\($0)".contains("reads Chapter objects; Book is not Chapter") }
    }
}

/// A class of a test's own on a generated one: regenerating never touches it.
final class MyBook: Book {
    func shout() throws -> String { try title.uppercased() }
}
