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
        #expect(amberError { _ = try context.fetch("Book", where: nots) }?.description.contains("nested more than 100 levels deep") == true)
        let parentheses = String(repeating: "(", count: 100_000) + "title == 'a'" + String(repeating: ")", count: 100_000)
        #expect(amberError { _ = try context.fetch("Book", where: parentheses) }?.description.contains("nested more than 100") == true)
        let terms = Array(repeating: "title == 'a'", count: 100_000).joined(separator: " AND ")
        #expect(amberError { _ = try context.fetch("Book", where: terms) }?.description.contains("more than 1000 comparisons") == true)
        let fine = Array(repeating: "title == 'a'", count: 500).joined(separator: " OR ")
        #expect(try context.fetch("Book", where: fine).isEmpty)
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
