import Amber
import Foundation

/// Predicate text against a model with every attribute type, to-one,
/// to-many and many-to-many relationships and an extensible entity.
enum PredicateHarness {
    // libFuzzer runs one input at a time, on one thread.
    nonisolated(unsafe) private static let context: Context = {
        do {
            let model = try Model(ModelDescription {
                EntityDescription("Author") {
                    Attribute.string("name")
                    Attribute.date("born")
                    Relationship.toMany("books", "Book", inverse: "author")
                }
                EntityDescription("Book") {
                    Attribute.string("title")
                    Attribute.decimal("price")
                    Attribute.integer16("pages")
                    Attribute.integer64("isbn")
                    Attribute.double("rating")
                    Attribute.float("weight")
                    Attribute.boolean("isRead")
                    Attribute.date("published")
                    Attribute.binary("cover")
                    Attribute.uuid("key")
                    Attribute.uri("link")
                    Attribute.string("canonicalTitle").derived("canonical:(title)")
                    Relationship.toOne("author", "Author", inverse: "books")
                    Relationship.toMany("genres", "Genre", inverse: "books")
                }
                .extensible()
                EntityDescription("Genre") {
                    Attribute.string("name")
                    Relationship.toMany("books", "Book", inverse: "genres")
                }
            }, registry: Registry())
            return Context(store: try Store.inMemory(model: model))
        } catch {
            fatalError("the predicate harness's model: \(error)")
        }
    }()

    /// Handed out in turn for `%@` and `%K`: one of each kind of value.
    private static let palette: [Value] = [
        .string("title"), .int(3), .double(2.5), .string("a%"), .null, .bool(true), .array([.int(1), .string("x")]),
        .string("author.name"), .date(Date(timeIntervalSinceReferenceDate: 0)), .binary(Data([0, 1])), .double(.nan),
        .string("books.@count"), .int(Int64.min),
    ]

    static func run(_ bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        let wanted = text.components(separatedBy: "%@").count + text.components(separatedBy: "%K").count - 2
        let arguments = (0..<wanted).map { palette[$0 % palette.count] }
        guard var predicate = try? FetchPredicate(text, arguments: arguments) else { return }
        if !predicate.variables.isEmpty {
            let values = Dictionary(uniqueKeysWithValues: predicate.variables.enumerated().map { ($1, palette[$0 % palette.count]) })
            guard let substituted = try? predicate.substituting(values) else { return }
            predicate = substituted
        }
        for entity in ["Author", "Book", "Genre"] {
            _ = try? context.count(FetchRequest(entity, predicate: predicate))
            _ = try? context.fetch(FetchRequest(entity, predicate: predicate, sortedBy: [SortKey(entity == "Book" ? "title" : "name")]))
        }
    }
}
