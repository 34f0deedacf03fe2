import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Hostile or edge-case input gets an error, in bounded time, never a crash.
@Suite struct HardeningTests {
    @Test func deeplyNestedOrHugePredicatesAreRefused() throws {
        let context = Context(store: try Store.inMemory(model: try booksModel()))
        let nots = String(repeating: "NOT ", count: 100_000) + "title == 'a'"
        #expect(amberError { _ = try context.fetch("Book", where: nots) }?.description.contains("nested more than 20 levels deep") == true)
        let parentheses = String(repeating: "(", count: 100_000) + "title == 'a'" + String(repeating: ")", count: 100_000)
        #expect(amberError { _ = try context.fetch("Book", where: parentheses) }?.description.contains("nested more than 20") == true)
        let terms = Array(repeating: "title == 'a'", count: 100_000).joined(separator: " AND ")
        #expect(amberError { _ = try context.fetch("Book", where: terms) }?.description.contains("more than 1000 comparisons") == true)
        let fine = Array(repeating: "title == 'a'", count: 500).joined(separator: " OR ")
        #expect(try context.fetch("Book", where: fine).isEmpty)
        // Lists nest under the same limit as parentheses (40,000 braces overflowed the stack).
        let braces = "pages IN " + String(repeating: "{", count: 40_000) + "1" + String(repeating: "}", count: 40_000)
        let braceError = amberError { _ = try context.fetch("Book", where: braces) }
        #expect(braceError?.description.contains("nested more than 20 levels deep") == true, "\(String(describing: braceError))")
        if case .invalidPredicate(let position, _)? = braceError { #expect(position == 29, "the 20th brace (the comparison is level 1)") }
    }

    @Test("the deepest predicates the parser allows compile to SQL that SQLite parses, and agree with a plain evaluation")
    func deepestPredicatesRun() throws {
        let context = Context(store: try Store.inMemory(model: try booksModel()))
        for pages in 1...5 { try insertBook(context, "T\(pages)", "A", pages: .int(Int64(pages))) }
        try context.save()
        // A long flat chain innermost: true for every book, 900 comparisons.
        let chain = (0..<900).map { _ in "pages != 7" }.joined(separator: " AND ")
        typealias Shape = (wrap: (String) -> String, holds: (Int, Bool) -> Bool)
        let shapes: [Shape] = [
            ({ "NOT (\($0))" }, { _, inner in !inner }),
            ({ "(\($0))" }, { _, inner in inner }),
            ({ "NOT \($0)" }, { _, inner in !inner }),
            ({ "pages == 1 OR (pages == 2 AND NOT (\($0)))" }, { p, inner in p == 1 || (p == 2 && !inner) }),
            ({ "NOT (pages IN {1, 2} AND (\($0)))" }, { p, inner in !([1, 2].contains(p) && inner) }),
        ]
        for (index, shape) in shapes.enumerated() {
            var text = chain, deepest = chain
            var holds: (Int) -> Bool = { _ in true }, deepestHolds = holds
            while (try? FetchPredicate(text)) != nil {
                (deepest, deepestHolds) = (text, holds)
                let inner = holds
                text = shape.wrap(text)
                holds = { p in shape.holds(p, inner(p)) }
            }
            let found = try context.fetch("Book", where: deepest).map { try $0.value(forKey: "pages") }
            #expect(Set(found) == Set((1...5).filter(deepestHolds).map { Value.int(Int64($0)) }), "shape \(index)")
        }
    }

    @Test("the longest AND and OR chains the parser allows run in SQLite, and agree with a plain filter")
    func longestChainsRun() throws {
        let context = Context(store: try Store.inMemory(model: try booksModel()))
        for pages in 1...40 {
            try insertBook(context, "T\(pages)", "A", pages: .int(Int64(pages)))
        }
        try context.save()
        let count = PredicateParser.maximumComparisons
        let anded = (0..<count).map { "pages != \($0 % 20 + 1)" }.joined(separator: " AND ")
        let ored = (0..<count).map { "pages == \($0 % 30 + 11)" }.joined(separator: " OR ")
        let pages = { (objects: [ManagedObject]) in Set(try objects.map { try $0.value(forKey: "pages") }) }
        #expect(try pages(context.fetch("Book", where: anded)) == Set((21...40).map { Value.int(Int64($0)) }))
        #expect(try pages(context.fetch("Book", where: ored)) == Set((11...40).map { Value.int(Int64($0)) }))
        let shorter = (1..<count).map { "pages != \($0 % 20 + 1)" }.joined(separator: " AND ")
        #expect(try context.count(FetchRequest("Book", predicate: FetchPredicate("(\(shorter)) OR pages == 1"))) == 21)
    }

    @Test("10,000 distinct predicates: the statement cache stays within its capacity and memory stays bounded")
    func distinctPredicatesKeepMemoryBounded() throws {
        let store = try Store.inMemory(model: try booksModel())
        let context = Context(store: store)
        for pages in 1...5 { try insertBook(context, "T\(pages)", "A", pages: .int(Int64(pages))) }
        try context.save()
        var allocatedAfterWarmUp = 0
        for variant in 0..<10_000 {
            // Each (NOT count, list length) pair is a new SQL text; constants are bound, so only shape makes one.
            // NOTs, the list and the comparison stay within the 20 levels allowed.
            let (nots, length) = (variant % 19, variant / 19 % 100 + 1)
            let extra = String(repeating: " OR pages == 99", count: variant / 1_900)
            let list = (0..<length).map { String($0 % 7) }.joined(separator: ", ")
            let text = String(repeating: "NOT ", count: nots) + "pages IN {\(list)}\(extra)"
            let found = try context.count(FetchRequest("Book", predicate: FetchPredicate(text)))
            let inList = min(length - 1, 5)  // pages 1...5 against 0...6
            #expect(found == (nots % 2 == 0 ? inList : 5 - inList), "\(text)")
            #expect(store.connection.cachedStatementCount <= Connection.cacheCapacity)
            if variant == 999 { allocatedAfterWarmUp = statementMemory(store) }
        }
        // SQLite's count of this connection's statement memory: unbounded, 3,000 list lengths took 788 MB.
        let (warm, end) = (allocatedAfterWarmUp, statementMemory(store))
        #expect(warm > 0 && end < 2 * warm, "prepared statements held \(warm) bytes after 1,000 predicates, \(end) after 10,000")
        // A statement a caller holds outlives its eviction: a fetch iterating one still works.
        #expect(try context.fetch("Book", sortedBy: [.ascending("pages")]).count == 5)
    }

    @Test("a value SQLite refuses to bind fails the save naming the reason, and stores nothing (it stored NULL)")
    func refusedBindingsFailTheSave() throws {
        let store = try Store.inMemory(model: try Model(ModelDescription {
            EntityDescription("Blob") { Attribute.binary("bytes"); Attribute.string("text") }
        }))
        // SQLite's length limit, lowered on this connection: a test cannot allocate 1 GB.
        sqlite3_limit(store.connection.handle, SQLITE_LIMIT_LENGTH, 1_000)
        let context = Context(store: store)
        for key in ["bytes", "text"] {
            let object = try context.insert("Blob")
            try object.setValue(key == "bytes" ? .binary(Data(count: 5_000)) : .string(String(repeating: "x", count: 5_000)), forKey: key)
            let error = amberError { try context.save() }
            #expect(error?.description.contains("too big") == true, "\(String(describing: error))")
            try context.delete(object)
            try context.save()
        }
        sqlite3_limit(store.connection.handle, SQLITE_LIMIT_LENGTH, 1_000_000_000)
        #expect(try Context(store: store).count(FetchRequest("Blob")) == 0)
    }

    @Test func nestedStructsAreLaidOutOnceAndCapped() throws {
        let registry = Registry()
        try registry.declare(.structure(name: "S0", fields: [.init("a", .int8), .init("b", .double)]))
        let start = Date()
        for level in 1...20 {
            try registry.declare(.structure(name: "S\(level)", fields: [.init("x", .structure("S\(level - 1)")),
                                                                       .init("y", .structure("S\(level - 1)"))]))
        }
        #expect(Date().timeIntervalSince(start) < 2, "each class is laid out once, not once per path")
        #expect(registry.structClass(named: "S20")?.size == 16 << 20)
        let error = amberError { try registry.declare(.structure(name: "S21", fields: [.init("x", .structure("S20")), .init("y", .structure("S20"))])) }
        #expect(error?.description.contains("is larger than the 16777216 bytes a struct class may have") == true)
        var deep = Registry()
        deep = Registry()
        try deep.declare(.structure(name: "D0", fields: [.init("a", .int8)]))
        for level in 1...31 { try deep.declare(.structure(name: "D\(level)", fields: [.init("x", .structure("D\(level - 1)"))])) }
        #expect(amberError { try deep.declare(.structure(name: "D32", fields: [.init("x", .structure("D31"))])) }?.description
            .contains("structs nest more than 32 levels deep") == true)
    }

    @Test func decimalsBeyondThirtyEightDigitsAreRefusedNotRounded() throws {
        #expect(try Value.decimal(parsing: "12345678901234567890123456789012345678").number == Decimal(string: "12345678901234567890123456789012345678"))
        #expect(amberError { _ = try Value.decimal(parsing: "123456789012345678901234567890123456789") } != nil)
        #expect(try Value.decimal(parsing: "1000000000000000000000000000000000000000000").number == Decimal(string: "1e42"), "trailing zeros are not significant")
        #expect(try Value.decimal(parsing: "0.000000000000000000000000000000000000000001").number == Decimal(string: "1e-42"))
    }

    @Test func aRequiredStorageAttributeIsFilledBeforeValidation() throws {
        let registry = try colorRegistry()
        let model = try Model(ModelDescription {
            EntityDescription("Swatch") {
                Attribute.undefined("color", valueClass: "Color", transformers: ["ColorToData"]).stored(in: "colorData")
                Attribute.binary("colorData").required().length(16...16)
            }
        }, registry: registry)
        let context = Context(store: try Store.inMemory(model: model))
        try context.insert("Swatch").setValue(try color(1, 0, 0, 1, in: registry), forKey: "color")
        try context.save()
        #expect(try context.count(FetchRequest("Swatch")) == 1)
    }

    @Test func aStorageAttributeServesOneShadowOnly() {
        let description = ModelDescription {
            EntityDescription("Swatch") {
                Attribute.undefined("a", valueClass: "Color", transformers: ["ColorToData"]).stored(in: "data")
                Attribute.undefined("b", valueClass: "Color", transformers: ["ColorToData"]).stored(in: "data")
                Attribute.binary("data")
            }
        }
        let error = amberError { _ = try Model(description, registry: try colorRegistry()) }
        #expect(error?.description.contains("Swatch.b: storage Swatch.data already keeps Swatch.a's encoded form") == true)
    }

    @Test func aShadowChainIsPartOfTheStoresShape() throws {
        let registry = try colorRegistry()
        try registry.register(Transformer(name: "Other", from: "Color", to: "Binary", forward: { _ in .null }, reverse: { _ in .null }))
        func model(_ transformer: String) throws -> Model {
            try Model(ModelDescription {
                EntityDescription("Swatch") {
                    Attribute.undefined("color", valueClass: "Color", transformers: [transformer]).stored(in: "data")
                    Attribute.binary("data")
                }
            }, registry: registry)
        }
        #expect(try model("ColorToData").versionHash != model("Other").versionHash)
    }
}

/// The memory SQLite holds for `store`'s prepared statements.
func statementMemory(_ store: Store) -> Int {
    var current: Int32 = 0, highest: Int32 = 0
    sqlite3_db_status(store.connection.handle, SQLITE_DBSTATUS_STMT_USED, &current, &highest, 0)
    return Int(current)
}
