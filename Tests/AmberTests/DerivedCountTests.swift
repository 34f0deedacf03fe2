import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberValues

/// Derived counts move by one per link added or removed (as Core Data's own
/// triggers keep them), so linking thousands of members is linear: checked
/// here against a plain count of the links after random edits from either
/// side, moves, deletions, batch deletions and rollbacks, on every store.
@Suite struct DerivedCountTests {
    static func model() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Shelf") {
                Attribute.integer64("bookCount").derived("books.@count")
                Relationship.toMany("books", "Book", inverse: "shelf")
            }
            EntityDescription("Book") {
                Attribute.integer64("number")
                Attribute.integer64("tagCount").derived("tags.@count")
                Relationship.toOne("shelf", "Shelf", inverse: "books")
                Relationship.toMany("tags", "Tag", inverse: "books")
            }
            EntityDescription("Tag") {
                Attribute.integer64("bookCount").derived("books.@count")
                Relationship.toMany("books", "Book", inverse: "tags")
            }
        })
    }

    /// Every derived count of a fresh reading of `store`, against the links counted by hand.
    static func checkCounts(_ store: Store, _ note: String) throws {
        let context = Context(store: store)
        let books = try context.fetch(FetchRequest("Book"))
        var onShelf: [ObjectIdentifier: Int] = [:], tagged: [ObjectIdentifier: Int] = [:]
        for book in books {
            if let shelf = try book.object(forKey: "shelf") { onShelf[ObjectIdentifier(shelf), default: 0] += 1 }
            let tags = try book.objects(forKey: "tags")
            #expect(try book.value(forKey: "tagCount") == .int(Int64(tags.count)), "\(note): \(book.objectID)")
            for tag in tags { tagged[ObjectIdentifier(tag), default: 0] += 1 }
        }
        for shelf in try context.fetch(FetchRequest("Shelf")) {
            #expect(try shelf.value(forKey: "bookCount") == .int(Int64(onShelf[ObjectIdentifier(shelf)] ?? 0)), "\(note): \(shelf.objectID)")
        }
        for tag in try context.fetch(FetchRequest("Tag")) {
            #expect(try tag.value(forKey: "bookCount") == .int(Int64(tagged[ObjectIdentifier(tag)] ?? 0)), "\(note): \(tag.objectID)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func countsFollowRandomEditsExactly(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Self.model())
        defer { cleanup() }
        var random = SplitMix64(seed: 2026)
        let context = Context(store: store)
        let shelves = try (0..<4).map { _ in try context.insert("Shelf") }
        let tags = try (0..<6).map { _ in try context.insert("Tag") }
        var books: [ManagedObject] = [], number: Int64 = 0
        try context.save()
        for round in 0..<40 {
            for _ in 0..<12 {
                let live = books.filter { $0.context != nil && !$0.deletedFlag }
                switch Int.random(in: 0..<8, using: &random) {
                case 0, 1:
                    let book = try context.insert("Book")
                    number += 1
                    try book.setValue(.int(number), forKey: "number")
                    if Bool.random(using: &random) { try book.setObject(shelves.randomElement(using: &random), forKey: "shelf") }
                    books.append(book)
                case 2:
                    // Moved from either side: the book's to-one, or the shelf's to-many.
                    guard let book = live.randomElement(using: &random) else { continue }
                    let shelf = Bool.random(using: &random) ? shelves.randomElement(using: &random) : nil
                    if let shelf, Bool.random(using: &random) { try shelf.add(book, to: shelf.entity.relationship(named: "books")) }
                    else { try book.setObject(shelf, forKey: "shelf") }
                case 3, 4:
                    guard let book = live.randomElement(using: &random), let tag = tags.randomElement(using: &random) else { continue }
                    if Bool.random(using: &random) { try book.add(tag, to: book.entity.relationship(named: "tags")) }
                    else { try tag.add(book, to: tag.entity.relationship(named: "books")) }
                case 5:
                    guard let book = live.randomElement(using: &random), let tag = tags.randomElement(using: &random) else { continue }
                    try tag.remove(book, from: tag.entity.relationship(named: "books"))
                case 6:
                    guard let book = live.randomElement(using: &random) else { continue }
                    try context.delete(book)
                default:
                    guard let shelf = shelves.randomElement(using: &random) else { continue }
                    let members = try shelf.objects(forKey: "books").filter { _ in Bool.random(using: &random) }
                    try shelf.setObjects(members, forKey: "books")
                }
            }
            if round % 9 == 8 {
                context.rollback()
            } else {
                try context.save()
                try Self.checkCounts(store, "\(kind) round \(round)")
            }
            if round % 10 == 5 {
                // A batch deletion runs the same triggers.
                _ = try context.batchDelete(FetchRequest("Book", where: "number >= %@ AND number < %@", .int(Int64(round * 5)), .int(Int64(round * 5 + 4))))
                try Self.checkCounts(store, "\(kind) batch delete in round \(round)")
            }
        }
    }
}
