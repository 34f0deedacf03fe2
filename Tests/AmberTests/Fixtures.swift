import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberStore
@testable import AmberTransformers
@testable import AmberValues

/// The SQLite store behind a ``Store``, for tests of its internals.
extension Store {
    var sqlite: SQLiteStore {
        guard let store = engine as? SQLiteStore else { fatalError("not an SQLite store: \(url)") }
        return store
    }

    var connection: Connection { sqlite.connection }

    /// Writes `changes` straight through the contract, as a context's save does.
    func write(_ changes: ChangeSet<ManagedObject>, policy: MergePolicy = .error) throws(AmberError) -> WrittenKeys {
        try engine.write(changes, policy: policy, from: nil, origin: WriteOrigin())
    }
}

/// A model with an attribute of every storable type.
func everyTypeModel() throws -> Model {
    try Model(ModelDescription {
        EntityDescription("Sample") {
            Attribute.integer16("i16")
            Attribute.integer32("i32")
            Attribute.integer64("i64")
            Attribute.decimal("price")
            Attribute.double("ratio")
            Attribute.float("weight")
            Attribute.string("name")
            Attribute.boolean("flag")
            Attribute.date("when")
            Attribute.binary("blob")
            Attribute.uuid("key")
            Attribute.uri("link")
        }
    })
}

/// The Books model used across tests: validation rules, a uniqueness constraint, indexes.
func booksModel() throws -> Model {
    try Model(ModelDescription {
        EntityDescription("Book") {
            Attribute.string("title").required().length(1...200).indexed()
            Attribute.string("author").required()
            Attribute.decimal("price").min(0).max(1000)
            Attribute.integer16("pages").min(1)
            Attribute.date("published")
            Attribute.string("isbn").pattern("[0-9]{13}")
            Attribute.boolean("isRead").defaultValue(false)
            Attribute.string("note").transient()
        }
        .unique("title", "author")
        .index("author", "published")
    })
}

/// A fresh temporary directory for a test's store files, removed by the caller's `defer`.
func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("amber-tests-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Inserts a book with the given values.
@discardableResult
func insertBook(_ context: Context, _ title: String, _ author: String, price: Value = .null, pages: Value = .null,
                published: Value = .null) throws -> ManagedObject
{
    let book = try context.insert("Book")
    try book.setValue(.string(title), forKey: "title")
    try book.setValue(.string(author), forKey: "author")
    try book.setValue(price, forKey: "price")
    try book.setValue(pages, forKey: "pages")
    try book.setValue(published, forKey: "published")
    return book
}

/// The titles of fetched books, in order.
func titles(_ books: [ManagedObject]) throws -> [String] {
    try books.map { book in
        guard case .string(let title) = try book.value(forKey: "title") else { return "?" }
        return title
    }
}

/// The AmberError a throwing call raised, or nil.
func amberError(_ body: () throws -> Void) -> AmberError? {
    do {
        try body()
        return nil
    } catch let error as AmberError {
        return error
    } catch {
        return nil
    }
}

extension Store.Options {
    /// Options that consent to a migration removing stored data: the migration tests remove entities,
    /// attributes and relationships on purpose.
    static var removingData: Store.Options {
        var options = Store.Options()
        options.allowsDataRemoval = true
        return options
    }
}
