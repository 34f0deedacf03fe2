import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// Fetch request templates: named in the model, checked at bind, fetched
/// with their `$VARIABLES` substituted.
@Suite("Fetch request templates") struct FetchTemplateTests {
    /// Every storable type on `Sample`, an author to compare objects, and a template per attribute.
    static func description() -> ModelDescription {
        var model = ModelDescription {
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
                Relationship.toOne("owner", "Owner", inverse: "samples")
            }
            EntityDescription("Owner") {
                Attribute.string("name")
                Relationship.toMany("samples", "Sample", inverse: "owner")
            }
        }
        for name in attributeNames {
            model = model.template("by_\(name)", entity: "Sample", where: "\(name) == $VALUE", sortedBy: [.ascending("i64")])
        }
        return model
            .template("byOwner", entity: "Sample", where: "owner == $OWNER")
            .template("inRange", entity: "Sample", where: "i64 BETWEEN {$LOW, $HIGH} AND name IN $NAMES",
                      sortedBy: [SortKey("i64", ascending: false)], limit: 5)
            .template("everything", entity: "Sample")
            .template("busyOwners", entity: "Owner", where: "samples.@count >= $MIN AND ANY samples.name BEGINSWITH[c] $PREFIX")
    }

    static let attributeNames = ["i16", "i32", "i64", "price", "ratio", "weight", "name", "flag", "when", "blob", "key", "link"]

    /// A random value for each attribute (a fixed seed), nil about one time in eight.
    static func randomValues(_ generator: inout some RandomNumberGenerator) -> [String: Value] {
        var values: [String: Value] = [:]
        for name in attributeNames {
            guard Int.random(in: 0..<8, using: &generator) > 0 else {
                values[name] = .null
                continue
            }
            let small = Int64.random(in: -3...3, using: &generator)
            values[name] = switch name {
            case "i16", "i32", "i64": .int(small)
            case "price": .decimal(Decimal(small) / 4)
            case "ratio": .double(Double(small) / 8)
            case "weight": .float(Float(small) / 2)
            case "name": .string(["é", "e", "É", "Zoë", ""][Int(small + 3) % 5])
            case "flag": .bool(small > 0)
            case "when": .date(Date(timeIntervalSince1970: Double(small) * 86_400.5))
            case "blob": .binary(Data([UInt8(small + 3), 0, 255].prefix(Int(small + 3) % 3 + 1)))
            case "key": .uuid(UUID(uuidString: "00000000-0000-0000-0000-00000000000\(small + 3)") ?? UUID())
            default: .uri(URL(string: "https://example.com/\(small + 3)") ?? URL(fileURLWithPath: "/"))
            }
        }
        return values
    }

    @Test("a template of every attribute type finds exactly the objects a brute-force filter finds")
    func everyValueType() throws {
        let model = try Model(Self.description())
        let context = Context(store: try Store.inMemory(model: model))
        var generator = SplitMix64(seed: 15)
        var rows: [(ManagedObject, [String: Value])] = []
        for index in 0..<120 {
            let sample = try context.insert("Sample")
            var values = Self.randomValues(&generator)
            values["i64"] = .int(Int64(index))  // the order key, unique
            for (name, value) in values { try sample.setValue(value, forKey: name) }
            rows.append((sample, values))
        }
        try context.save()
        for name in Self.attributeNames {
            #expect(try model.template(named: "by_\(name)").variables == ["VALUE"])
            for probe in rows.prefix(12).map({ $0.1[name] ?? .null }) {
                let found = try context.fetch(model.fetchRequest(fromTemplate: "by_\(name)", substituting: ["VALUE": probe]))
                // Core Data's == with nil matches nil; values compare as the attribute's type.
                let expected = rows.filter { ($0.1[name] ?? .null) == probe }.map(\.0)
                #expect(found.map(\.objectID) == expected.map(\.objectID), "\(name) == \(probe)")
            }
        }
    }

    @Test("objects, lists and several variables; the template's order and limit; a request can be changed before fetching")
    func objectsListsAndWindows() throws {
        let model = try Model(Self.description())
        let context = Context(store: try Store.inMemory(model: model))
        let ada = try context.insert("Owner"), bo = try context.insert("Owner")
        try ada.setValue(.string("Ada"), forKey: "name")
        try bo.setValue(.string("Bo"), forKey: "name")
        for index in 0..<20 {
            let sample = try context.insert("Sample")
            try sample.setValue(.int(Int64(index)), forKey: "i64")
            try sample.setValue(.string(index.isMultiple(of: 2) ? "even" : "odd"), forKey: "name")
            try sample.setObject(index < 15 ? ada : bo, forKey: "owner")
        }
        try context.save()
        let owned = try context.fetch(model.fetchRequest(fromTemplate: "byOwner", substituting: ["OWNER": .objectID(bo.objectID)]))
        #expect(owned.count == 5)
        let request = try model.fetchRequest(fromTemplate: "inRange", substituting: [
            "LOW": .int(3), "HIGH": .int(16), "NAMES": .array([.string("even")]),
        ])
        let values = { (objects: [ManagedObject]) in try objects.map { try $0.value(forKey: "i64") } }
        #expect(try values(context.fetch(request)) == [16, 14, 12, 10, 8].map(Value.int))
        var changed = request
        changed.limit = nil
        changed.sortKeys = [.ascending("i64")]
        #expect(try values(context.fetch(changed)) == [4, 6, 8, 10, 12, 14, 16].map(Value.int))
        #expect(try context.fetch(model.fetchRequest(fromTemplate: "everything")).count == 20)
        let busy = try context.fetch(model.fetchRequest(fromTemplate: "busyOwners", substituting: ["MIN": .int(10), "PREFIX": .string("EV")]))
        #expect(busy.map(\.objectID) == [ada.objectID])
        // The same variable twice takes one value.
        let twice = try Model(ModelDescription { EntityDescription("Sample") { Attribute.integer64("a"); Attribute.integer64("b") } }
            .template("same", entity: "Sample", where: "a == $X OR b == $X"))
        #expect(try twice.template(named: "same").variables == ["X"])
    }

    @Test("a missing or extra variable, or an unknown template, is an error naming it; a bare $VARIABLE cannot be fetched")
    func substitutionErrors() throws {
        let model = try Model(Self.description())
        let context = Context(store: try Store.inMemory(model: model))
        let missing = amberError { _ = try model.fetchRequest(fromTemplate: "inRange", substituting: ["LOW": .int(1), "NAMES": .array([])]) }
        #expect(missing == .invalidSubstitution(variable: "HIGH",
                                                message: "template inRange: no value given for the variable at position 20 of \"i64 BETWEEN {$LOW, $HIGH} AND name IN $NAMES\""))
        let extra = amberError { _ = try model.fetchRequest(fromTemplate: "byOwner", substituting: ["OWNER": .null, "OWNR": .null]) }
        #expect("\(extra.map(String.init(describing:)) ?? "")".hasPrefix("$OWNR: template byOwner: not a variable"))
        #expect("\(extra.map(String.init(describing:)) ?? "")".hasSuffix("did you mean $OWNER?"))
        let none = amberError { _ = try model.fetchRequest(fromTemplate: "everything", substituting: ["X": .int(1)]) }
        #expect(none == .invalidSubstitution(variable: "X", message: "template everything: not a variable (the template has no predicate)"))
        #expect(amberError { _ = try model.template(named: "byOwnr") } == .unknownTemplate(name: "byOwnr", suggestion: "byOwner"))
        // A predicate with variables fetched as it is: the variable is named, nothing runs.
        let bare = amberError { _ = try context.fetch(FetchRequest("Sample", predicate: FetchPredicate("i64 == $N"))) }
        guard case .invalidSubstitution(let variable, _)? = bare else {
            Issue.record("expected a substitution error, got \(String(describing: bare))")
            return
        }
        #expect(variable == "N")
        #expect(try FetchPredicate("i64 == $N").substituting(["N": .int(1)]).variables.isEmpty)
    }

    @Test("binding reports every problem of every template, each placed and with the position or nearest name")
    func bindErrors() throws {
        let base = ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.string("note").transient()
                Relationship.toOne("author", "Author", inverse: "books")
            }
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
            }
        }
        let broken = base
            .template("noEntity", entity: "Bok")
            .template("badText", entity: "Book", where: "title == ")
            .template("argument", entity: "Book", where: "title == %@")
            .template("badPath", entity: "Book", where: "author.nme == $A")
            .template("badAggregate", entity: "Author", where: "books.@sum.titel > 1 OR books.@cnt > 1")
            .template("badSort", entity: "Book", sortedBy: [.ascending("titel")])
            .template("badLimit", entity: "Book", limit: 0)
            .template("transient", entity: "Book", where: "note == $N")
            .template("toManySort", entity: "Author", sortedBy: [.ascending("books.title")])
            .template("goodSort", entity: "Book", sortedBy: [.ascending("author.name")])
            .template("badSort", entity: "Book")
            .template("no name", entity: "Book")
        guard case .invalidModel(let problems)? = amberError({ _ = try Model(broken) }) else {
            Issue.record("expected the model to be refused")
            return
        }
        let lines = problems.map(\.description)
        let expected = [
            "templates.noEntity: entity Bok: no such entity; did you mean Book?",
            "templates.badText: predicate, position 10: expected a value or attribute name, found the end",
            "templates.argument: predicate, position 10: %@ has no argument (0 given)",
            "templates.badPath: predicate, position 1: Author.nme: no such attribute or relationship; did you mean name?",
            "templates.badAggregate: predicate, position 1: Book.titel: no such attribute; did you mean title?",
            "templates.badAggregate: predicate, position 25: @cnt: no such collection operator; did you mean @count?",
            "templates.badSort: sort key: Book.titel: no such attribute or relationship; did you mean title?",
            "templates.transient: predicate, position 1: Book.note is transient: the store has no value to compare or sort by",
            "templates.toManySort: sort key: Author.books is to-many; a sort key follows to-one relationships",
            "templates.badLimit: limit must be 1 or more, not 0",
            "templates.badSort: duplicate template name",
        ]
        for line in expected { #expect(lines.contains(line), "missing: \(line)\nin: \(lines)") }
        #expect(lines.contains { $0.hasPrefix("templates.no name: template name \"no name\" must start with a letter") })
        #expect(!lines.contains { $0.hasPrefix("templates.goodSort") })
    }

    @Test("templates survive JSON, and a store's copy of the model takes the templates its program adds")
    func jsonAndStoredModel() throws {
        let description = Self.description()
        #expect(try ModelDescription(json: Data(description.jsonText().utf8)) == description)
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("t.amber").path
        var plain = description
        plain.templates = []
        _ = try Store(path: path, model: try Model(plain))
        #expect(try Store(openingExisting: path).model.templates.isEmpty)
        // Templates do not shape the store: the same store opens, and keeps the newer model.
        _ = try Store(path: path, model: try Model(description))
        let reopened = try Store(openingExisting: path)
        #expect(reopened.model.templates.map(\.name) == description.templates.map(\.name))
        #expect(reopened.model.versionHash == (try Model(plain)).versionHash)
    }
}
