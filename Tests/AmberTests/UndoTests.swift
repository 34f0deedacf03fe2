import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberValues

/// The library graph as the test sees it, one line per live object, each
/// naming its relationships by their ends' labels: two states are the same
/// graph exactly when their dumps are equal.
private func dump(_ objects: [ManagedObject]) throws -> [String] {
    func label(_ object: ManagedObject) throws -> String {
        switch object.entity.name {
        case "Author": "\(try object.value(forKey: "name"))"
        case "Book": "\(try object.value(forKey: "title"))"
        default: "\(try object.value(forKey: "label"))"
        }
    }
    var lines: [String] = []
    for object in objects where object.context != nil && !object.deletedFlag {
        switch object.entity.name {
        case "Author":
            lines.append("author \(try label(object)) books \(try object.objects(forKey: "books").map(label).sorted())")
        case "Book":
            let author = try object.object(forKey: "author").map(label) ?? "none"
            lines.append("book \(try label(object)) price \(try object.value(forKey: "price")) by \(author) tags \(try object.objects(forKey: "tags").map(label))")
        default:
            lines.append("tag \(try label(object)) books \(try object.objects(forKey: "books").map(label).sorted())")
        }
    }
    return lines.sorted()
}

/// Random changes to a library, grouped as a user would make them: the
/// reference is the dump after each group.
private struct Library {
    let store: Store
    let context: Context
    var known: [ManagedObject] = []
    var random = SplitMix64(seed: 14)
    var serial = 0

    init(_ directory: URL) throws {
        store = try Store(path: directory.appendingPathComponent("undo.amber").path, model: try Model(libraryDescription()))
        context = Context(store: store)
    }

    var live: [ManagedObject] { known.filter { $0.context != nil && !$0.deletedFlag } }
    func live(_ entity: String) -> [ManagedObject] { live.filter { $0.entity.name == entity } }

    mutating func name(_ prefix: String) -> Value {
        serial += 1
        return .string("\(prefix)\(serial)")
    }

    /// One user action (a group of its own, or an explicit group of several).
    mutating func act() throws {
        let authors = live("Author"), books = live("Book"), tags = live("Tag")
        switch Int.random(in: 0..<10, using: &random) {
        case 0 where !authors.isEmpty:
            // An explicit group: a new book by a new author, tagged.
            try context.undoStack?.group(named: "Add") { () throws(AmberError) in
                let author = try context.insert("Author"), book = try context.insert("Book")
                try author.setValue(name("a"), forKey: "name")
                try book.setValue(name("b"), forKey: "title")
                try book.setObject(author, forKey: "author")
                if let tag = tags.randomElement(using: &random) { try book.add(tag, to: try book.entity.relationship(named: "tags")) }
                known += [author, book]
            }
        case 0, 1:
            // Several calls, one action: begin and end a group around them.
            context.undoStack?.beginGroup(named: "New Author")
            defer { context.undoStack?.endGroup() }
            let author = try context.insert("Author")
            try author.setValue(name("a"), forKey: "name")
            known.append(author)
        case 2 where !authors.isEmpty:
            context.undoStack?.beginGroup(named: "New Book")
            defer { context.undoStack?.endGroup() }
            let book = try context.insert("Book")
            try book.setValue(name("b"), forKey: "title")
            try book.setObject(authors.randomElement(using: &random), forKey: "author")
            known.append(book)
        case 4 where !books.isEmpty:
            let book = books.randomElement(using: &random)!
            if Bool.random(using: &random) {
                try book.setValue(name("b"), forKey: "title")
            } else {
                try book.setValue(.double(Double(Int.random(in: 1...50, using: &random))), forKey: "price")
            }
        case 5 where !books.isEmpty && authors.count > 1:
            try books.randomElement(using: &random)!.setObject(authors.randomElement(using: &random), forKey: "author")
        case 6 where !books.isEmpty && !tags.isEmpty:
            let book = books.randomElement(using: &random)!
            try book.setObjects(Array(tags.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random))), forKey: "tags")
        case 7 where !books.isEmpty && !tags.isEmpty:
            let book = books.randomElement(using: &random)!, tag = tags.randomElement(using: &random)!
            let relationship = try book.entity.relationship(named: "tags")
            if try book.objects(for: relationship).contains(tag) { try book.remove(tag, from: relationship) } else { try book.add(tag, to: relationship) }
        case 8 where !authors.isEmpty || !books.isEmpty || !tags.isEmpty:
            // Deleting an author cascades to its books.
            try context.delete((authors + books + tags).randomElement(using: &random)!)
        case 9 where !authors.isEmpty:
            try authors.randomElement(using: &random)!.setValue(name("a"), forKey: "name")
        default:
            context.undoStack?.beginGroup(named: "New Tag")
            defer { context.undoStack?.endGroup() }
            let tag = try context.insert("Tag")
            try tag.setValue(name("t"), forKey: "label")
            known.append(tag)
        }
    }
}

@Suite struct UndoTests {
    /// Random actions with saves between some of them; then undo back to the
    /// start (saving between some undos) and redo to the end: after each
    /// step the graph is exactly the one recorded at that point, and what is
    /// saved at the end is what the context shows.
    @Test func undoAndRedoRetraceEveryRecordedState() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var library = try Library(directory)
        library.context.undoStack = UndoStack()
        var states = [try dump(library.known)]
        let stack = try #require(library.context.undoStack)
        for step in 0..<150 {
            let groups = stack.undoCount
            try library.act()
            let now = try dump(library.known)
            if stack.undoCount == groups {
                #expect(now == states.last)  // an action that changed nothing records nothing
            } else {
                #expect(stack.undoCount == groups + 1)
                states.append(now)
            }
            if step % 17 == 16 { try library.context.save() }
        }
        #expect(states.count > 120)
        var random = SplitMix64(seed: 7)
        for index in stride(from: states.count - 2, through: 0, by: -1) {
            #expect(try library.context.undo())
            let now = try dump(library.known)
            #expect(now == states[index], "after undoing to state \(index): \(now.difference(from: states[index]))")
            if now != states[index] { return }  // one report, not one per later state
            if Int.random(in: 0..<12, using: &random) == 0 { try library.context.save() }
        }
        #expect(try !library.context.undo())  // nothing left: a no-op that says so
        try library.context.save()
        #expect(try dump(library.known) == states[0])
        for index in 1..<states.count {
            #expect(try library.context.redo())
            #expect(try dump(library.known) == states[index], "after redoing to state \(index)")
            if Int.random(in: 0..<12, using: &random) == 0 { try library.context.save() }
        }
        #expect(try !library.context.redo())
        try library.context.save()
        let fresh = Context(store: library.store)
        let saved = try ["Author", "Book", "Tag"].flatMap { try fresh.fetch($0) }
        #expect(try dump(saved) == states[states.count - 1])
    }

    /// A set after a save: undo makes the object changed again with the old
    /// value, and saving that writes it; a saved deletion comes back under
    /// its own key.
    @Test func undoAfterSaveMakesTheContextDirtyAgain() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(path: directory.appendingPathComponent("books.amber").path, model: try booksModel())
        let context = Context(store: store)
        let book = try insertBook(context, "Dune", "Herbert")
        try context.save()
        context.undoStack = UndoStack()
        try book.setValue("Dune Messiah", forKey: "title")
        try context.save()
        #expect(!context.hasChanges)
        #expect(try context.undo())
        #expect(context.hasChanges && book.isUpdated && book.changedValues()["title"] == "Dune")
        try context.save()
        #expect(try Context(store: store).fetch("Book").first?.value(forKey: "title") == "Dune")

        let id = book.objectID
        try context.delete(book)
        try context.save()
        #expect(book.context == nil)
        #expect(try context.undo())
        #expect(book.context === context && book.isInserted && book.objectID == id)
        try context.save()
        let reader = Context(store: store)
        #expect(try reader.object(with: id).value(forKey: "title") == "Dune")
        #expect(try context.redo())  // the deletion again
        try context.save()
        #expect(try Context(store: store).count(FetchRequest("Book")) == 0)
    }

    /// Groups carry names for a menu; a new change clears redo; the levels
    /// limit keeps the newest groups; rollback clears the history.
    @Test func groupsNamesLimitsAndRollback() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = Context(store: try Store(path: directory.appendingPathComponent("books.amber").path, model: try booksModel()))
        let stack = UndoStack(levelsLimit: 3)
        context.undoStack = stack
        let book = try context.insert("Book")
        try stack.group(named: "Rename") { () throws(AmberError) in
            try book.setValue("One", forKey: "title")
            try book.setValue("Two", forKey: "title")
        }
        #expect(stack.undoActionName == "Rename" && stack.undoCount == 2)
        #expect(try context.undo())
        #expect(try book.value(forKey: "title") == .null && stack.redoActionName == "Rename" && stack.canRedo)
        try book.setValue("Three", forKey: "title")
        #expect(!stack.canRedo)  // a new change clears redo
        for title in ["4", "5", "6", "7"] { try book.setValue(.string(title), forKey: "title") }
        #expect(stack.undoCount == 3)
        for _ in 0..<3 { #expect(try context.undo()) }
        #expect(try book.value(forKey: "title") == "4")
        #expect(try !context.undo())  // past the limit: nothing happens, and it says so
        #expect(try book.value(forKey: "title") == "4")
        stack.levelsLimit = 1
        try book.setValue("8", forKey: "title")
        try book.setValue("9", forKey: "title")
        #expect(stack.undoCount == 1)
        #expect(!stack.endGroup())  // none open
        context.rollback()
        #expect(!stack.canUndo && !stack.canRedo)
    }

    /// A transformable value and a transient one are undone like any other.
    @Test func transformableAndTransientValuesUndo() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = try colorRegistry()
        let model = try Model(ModelDescription {
            EntityDescription("Shape") {
                Attribute.string("note").transient()
                Attribute.transformable("cover", valueClass: "Color", transformers: ["ColorToData"])
            }
        }, registry: registry)
        let context = Context(store: try Store(path: directory.appendingPathComponent("shapes.amber").path, model: model))
        let red = try color(1, 0, 0, 1, in: registry), blue = try color(0, 0, 1, 1, in: registry)
        let shape = try context.insert("Shape")
        try shape.setValue(red, forKey: "cover")
        try context.save()
        context.undoStack = UndoStack()
        try shape.setValue(blue, forKey: "cover")
        try shape.setValue("draft", forKey: "note")
        try context.save()
        #expect(try context.undo() && context.undo())
        #expect(try shape.value(forKey: "cover") == red && shape.value(forKey: "note") == .null)
        try context.save()
        let fresh = Context(store: context.store)
        #expect(try fresh.fetch("Shape").first?.value(forKey: "cover") == red)
        #expect(try context.redo())
        #expect(try shape.value(forKey: "cover") == blue)
    }
}

/// What new users found (issue 43): undoing a saved deletion must not change data.
@Suite struct UndoOfSavedDeletionTests {
    /// `book.tags = [c, a, b]`, save, delete the book, save, undo, save: the
    /// tags come back in that order, in this context and in the store.
    @Test func anOrderedToManyComesBackInItsOrder() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var description = libraryDescription()
        description.entities[1].relationships[0] = description.entities[1].relationships[0].optional()
        let store = try Store(path: directory.appendingPathComponent("library.amber").path, model: try Model(description))
        let context = Context(store: store)
        let tags = try ["a", "b", "c"].map { label in
            let tag = try context.insert("Tag")
            try tag.setValue(.string(label), forKey: "label")
            return tag
        }
        let book = try context.insert("Book")
        try book.setValue("Dune", forKey: "title")
        try book.setObjects([tags[2], tags[0], tags[1]], forKey: "tags")
        try context.save()
        context.undoStack = UndoStack()
        try context.delete(book)
        try context.save()
        #expect(try context.undo())
        func labels(_ object: ManagedObject) throws -> [Value] { try object.objects(forKey: "tags").map { try $0.value(forKey: "label") } }
        #expect(try labels(book) == ["c", "a", "b"])
        try context.save()
        #expect(try labels(book) == ["c", "a", "b"])
        let reader = Context(store: store)
        let read = try #require(try reader.fetch("Book").first)
        #expect(try labels(read) == ["c", "a", "b"])
    }

    /// The same for an ordered to-many whose inverse is a to-one (positions
    /// in the members' rows), its owner deleted with a nullify rule.
    @Test func membersPositionsComeBackWithTheirOwner() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author").ordered().deleteRule(.nullify)
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        })
        let store = try Store(path: directory.appendingPathComponent("authors.amber").path, model: model)
        let context = Context(store: store)
        let author = try context.insert("Author")
        let books = try ["a", "b", "c"].map { title in
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            return book
        }
        try author.setObjects([books[1], books[2], books[0]], forKey: "books")
        try context.save()
        context.undoStack = UndoStack()
        try context.delete(author)
        try context.save()
        #expect(try context.undo())
        func titles(_ object: ManagedObject) throws -> [Value] { try object.objects(forKey: "books").map { try $0.value(forKey: "title") } }
        #expect(try titles(author) == ["b", "c", "a"])
        try context.save()
        let reader = Context(store: store)
        let read = try #require(try reader.fetch("Author").first)
        #expect(try titles(read) == ["b", "c", "a"])
    }
}
