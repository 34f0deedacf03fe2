import Amber
import Foundation
import Testing

/// Awkward.amber.json names entities and properties with Swift keywords,
/// names Swift reserves and names typed objects already have (Amber models
/// refuse names differing only in case): the plugin's classes compile (this
/// file builds) and work.
@Suite struct AwkwardNameTests {
    @Test func keywordsAndClashingNamesAreQuotedOrRenamedAndStillReachTheirAttributes() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Awkward.amber.json")
        let context = Context(store: try Store.inMemory(model: try Model(try ModelDescription(contentsOf: url))))
        let item = try context.insert(Protocol_.self)
        try item.set(self_: "me")
        // A struct whose fields are a keyword, a reserved name, the name of hash(into:)'s parameter and a module's.
        let knot = Knot(default: -3, self_: 2.5, hasher: 9, Swift_: true)
        try item.set(knot: knot)
        #expect(try item.knot == knot && item.knot?.hashValue == knot.hashValue)
        #expect(try item.knot != Knot(default: -3, self_: 2.5, hasher: 8, Swift_: true))
        try item.set(init_: "start")
        try item.set(class: "first")
        try item.set(default: 7)
        try item.set(description_: "text")
        try item.set(hash_: "h")
        try item.set(object_: "o")
        try item.set(title: "lower")
        try item.set(set: "s")
        try item.set(addToItems: "a")
        let member = try context.insert(Type_.self)
        try member.set(where: "here")
        try item.addToItems(member)
        let owner = try context.insert(Swift_.self)
        try owner.set(Any_: true)
        try item.set(properties_: owner)
        try context.save()

        let values = try item.object.dictionary()
        #expect(values["self"] == .string("me") && values["init"] == .string("start") && values["class"] == .string("first"))
        #expect(values["default"] == .int(7) && values["description"] == .string("text") && values["hash"] == .string("h"))
        #expect(values["object"] == .string("o") && values["set"] == .string("s"))
        #expect(values["title"] == .string("lower") && values["addToItems"] == .string("a"))
        #expect(try item.title == "lower")
        #expect(try item.items == [member] && member.protocol == item)
        #expect(try item.properties_ == owner && owner.owner == item && owner.Any_ == true)
        #expect(try context.fetch(Type_.self, where: "where == %@", "here") == [member])
    }
}
