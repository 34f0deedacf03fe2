import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

@Suite struct ModelTests {
    @Test func bindingReportsEveryProblemWithItsPlace() {
        let description = ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title").indexed().transient()
                Attribute.string("title")
                Attribute.decimal("price").defaultValue("free").min(10).max(1)
                Attribute.integer16("pages").length(1...3).defaultValue(.int(99_999))
                Attribute.string("isbn").pattern("([0-9")
                Attribute.date("1st")
                Attribute.string("code").length(2...4).pattern("[A-Z]+").defaultValue("toolong")
                Attribute.double("ratio").range(0, 1).defaultValue(.double(1.5))
            }
            .unique("titel", "author")
            .index()
            EntityDescription("Book")
        }
        let error = amberError { _ = try Model(description) }
        guard case .invalidModel(let problems) = error else {
            Issue.record("expected invalidModel, got \(String(describing: error))")
            return
        }
        let lines = problems.map(\.description)
        #expect(lines.contains("Book.title: a transient attribute has no column and cannot be indexed"))
        #expect(lines.contains("Book.title: duplicate attribute name (names are case-insensitive)"))
        #expect(lines.contains("Book.price: default value: Book.price: expected Decimal, given String \"free\""))
        #expect(lines.contains("Book.price: minValue 10 is greater than maxValue 1"))
        #expect(lines.contains("Book.pages: minLength/maxLength apply to strings and binary, not to integer16"))
        #expect(lines.contains("Book.pages: default value: Book.pages: expected Integer 16, given Integer 99999 (out of range -32768...32767)"))
        #expect(lines.contains("Book.isbn: pattern \"([0-9\" is not a valid regular expression"))
        #expect(lines.contains("Book.1st: attribute name \"1st\" must start with a letter and use only letters, digits and _"))
        #expect(lines.contains("Book.uniquenessConstraints[0]: Book.titel: no such attribute; did you mean title?"))
        #expect(lines.contains("Book.uniquenessConstraints[0]: Book.author: no such attribute"))
        #expect(lines.contains("Book.indexes[0]: names no attributes"))
        #expect(lines.contains("Book: duplicate entity name (names are case-insensitive)"))
        // A default its own rules refuse (every new object would fail its first save).
        #expect(lines.contains("Book.code: default value: 7 characters, more than the maximum 4"))
        #expect(lines.contains("Book.code: default value: \"toolong\" does not match the pattern [A-Z]+"))
        #expect(lines.contains("Book.ratio: default value: 1.5 is greater than the maximum 1"))
        #expect(problems.count == 15)
    }

    @Test func objectIDAttributesAndStoredUndefinedAreRefused() {
        let description = ModelDescription {
            EntityDescription("Thing") {
                Attribute.uuid("id")
                AttributeDescription("owner", .objectID)
                AttributeDescription("scratch", .undefined)
                AttributeDescription("anything", .undefined).transient()
            }
        }
        guard case .invalidModel(let problems) = amberError({ _ = try Model(description) }) else {
            Issue.record("expected invalidModel")
            return
        }
        #expect(problems.map(\.description) == [
            "Thing.owner: type objectID is not an attribute type; point at other objects with a relationship",
            "Thing.scratch: type undefined is only allowed for transient attributes",
        ])
    }

    @Test func jsonModelRoundTripsAndBinds() throws {
        let json = """
        {
          "format": "amber-model/1",
          "entities": [
            {
              "name": "Book",
              "attributes": [
                {"name": "title", "type": "string", "optional": false, "minLength": 1, "indexed": true},
                {"name": "price", "type": "decimal", "default": "19.990", "minValue": 0},
                {"name": "pages", "type": "Integer 32", "default": 100},
                {"name": "published", "type": "date", "default": "2024-03-01T12:30:00.250Z"},
                {"name": "cover", "type": "binary", "default": "AAEC"},
                {"name": "key", "type": "uuid", "default": "6BA7B810-9DAD-11D1-80B4-00C04FD430C8"},
                {"name": "home", "type": "uri", "default": "https://example.com"},
                {"name": "ratio", "type": "double", "default": 0.5},
                {"name": "read", "type": "boolean", "default": true, "userInfo": {"ui": "checkbox"}}
              ],
              "uniquenessConstraints": [["title"]],
              "indexes": [["pages", "title"]],
              "userInfo": {"table": "books"}
            }
          ]
        }
        """
        let description = try ModelDescription(json: Data(json.utf8))
        let model = try Model(description)
        let book = try model.entity(named: "Book")
        #expect(try book.attribute(named: "price").defaultValue.description == "19.990", "a default keeps its written scale")
        #expect(try book.attribute(named: "pages").type == .integer32)
        #expect(try book.attribute(named: "published").defaultValue
            == .date(Date(timeIntervalSince1970: 1_709_296_200.25)))
        #expect(try book.attribute(named: "cover").defaultValue == .binary(Data([0, 1, 2])))
        #expect(try book.attribute(named: "read").userInfo == ["ui": "checkbox"])
        #expect(book.userInfo == ["table": "books"])
        #expect(book.uniquenessConstraints.map { $0.map(\.name) } == [["title"]])
        // Writing the model out and reading it back gives the same model.
        let again = try ModelDescription(json: Data(description.jsonText().utf8))
        #expect(again == description)
        #expect(try Model(again).versionHash == model.versionHash)
    }

    @Test func jsonErrorsNameThePath() {
        func error(_ json: String) -> String? {
            amberError { _ = try ModelDescription(json: Data(json.utf8)) }?.description
        }
        #expect(error(#"{"entities": [{"name": "Book", "attributes": [{"name": "a", "type": "strng"}]}]}"#)
            == "$.entities[0].attributes[0].type: unknown attribute type \"strng\"; did you mean string?")
        #expect(error(#"{"entities": [{"name": "Book", "attributes": [{"name": "a", "type": "string", "optinal": true}]}]}"#)
            == "$.entities[0].attributes[0].optinal: unknown key; did you mean optional?")
        #expect(error(#"{"entities": [{"name": "Book", "attributes": [{"name": "a", "type": "integer16", "default": "x"}]}]}"#)
            == "$.entities[0].attributes[0].default: a string is not a valid integer16 value (see docs/model-json.md for the forms each type takes)")
        #expect(error(#"{"entities": [{"attributes": []}]}"#) == "$.entities[0].name: missing (a string is required)")
        #expect(error(#"{"entities": {}}"#) == "$.entities: expected an array, found an object")
        #expect(error(#"{"entities": [{"name": "A", "attributes": [], "indexes": [[1]]}]}"#)
            == "$.entities[0].indexes[0][0]: expected a string (attribute name), found a number")
        #expect(error("{\"entities\": [") == "$.entities[0]: not valid JSON: unexpected end of text (byte 14)")
        #expect(error(#"{"entities": [], "entities": []}"#) == "$: the key \"entities\" appears twice (byte 17)")
        #expect(error(#"{"entities": [{"name": "A", "attributes": [{"name": "n", "type": "integer64", "default": 18446744073709551616}]}]}"#)
            == "$.entities[0].attributes[0].default: the integer 18446744073709551616 does not fit in 64 bits (byte 89)")
        #expect(error(#"{"format": "amber-model/9", "entities": []}"#)
            == "$.format: unsupported format \"amber-model/9\" (this version reads amber-model/1)")
    }

    @Test func reopeningAStoreKeepsItsIdentityAndData() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("books.amber").path
        let identifier: UUID
        do {
            let store = try Store(path: path, model: try booksModel())
            identifier = store.identifier
            let context = Context(store: store)
            try insertBook(context, "Dune", "Herbert")
            try context.save()
        }
        let again = try Store(path: path, model: try booksModel())
        #expect(again.identifier == identifier)
        #expect(try titles(Context(store: again).fetch("Book")) == ["Dune"])
        // A program without the model opens it with the model it carries.
        let bare = try Store(openingExisting: path)
        #expect(bare.model.versionHash == again.model.versionHash)
        #expect(try titles(Context(store: bare).fetch("Book")) == ["Dune"])
    }

    @Test func modelMismatchNamesEachDifference() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("books.amber").path
        _ = try Store(path: path, model: try booksModel())
        let changed = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title").required().indexed()
                Attribute.string("author").required()
                Attribute.double("price")
                Attribute.integer16("pages")
                Attribute.date("published")
                Attribute.boolean("isRead")
                Attribute.string("subtitle")
            }
            .unique("title", "author")
            .index("author", "published")
        })
        var options = Store.Options()
        options.migratesStore = false
        let error = amberError { _ = try Store(path: path, model: changed, options: options) }
        guard case .modelMismatch(_, let differences) = error else {
            Issue.record("expected modelMismatch, got \(String(describing: error))")
            return
        }
        #expect(differences == [
            "Book.isbn: in the store, not in the model (string, optional)",
            "Book.price: the store has decimal, optional, the model has double, optional",
            "Book.subtitle: in the model, not in the store (string, optional)",
        ])
        // Changing only validation or defaults does not change the store's shape.
        let relaxed = try Model(ModelDescription(entities: try booksModel().description.entities.map { entity in
            var entity = entity
            entity.attributes = entity.attributes.map { var a = $0; a.validation = .init(); a.defaultValue = nil; return a }
            return entity
        }))
        _ = try Store(path: path, model: relaxed)
    }

    @Test func notAStoreIsReported() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("junk.amber").path
        try Data("this is not a database".utf8).write(to: URL(fileURLWithPath: path))
        #expect(amberError { _ = try Store(path: path, model: try booksModel()) }.map {
            if case .notAStore = $0 { true } else { false }
        } == true)
        #expect(amberError { _ = try Store(openingExisting: directory.appendingPathComponent("missing").path) }
            == .notAStore(path: directory.appendingPathComponent("missing").path, reason: "no such file"))
    }
}

/// An attribute handle of another model that names the object's own
/// attribute says "of another model", as an entity handle does; one of
/// another entity is named as it is (issue 43, item 10).
@Test func anAttributeHandleOfAnotherModelIsNamedSo() throws {
    let context = Context(store: try Store.inMemory(model: try booksModel()))
    let book = try context.insert("Book")
    let twin = try booksModel().entity(named: "Book").attribute(named: "title")
    #expect(amberError { try book.setValue("Dune", for: twin) }?.description
        == "Book.title (of another model) is not an attribute of \(book.description)")
    #expect(amberError { _ = try book.value(for: twin) }?.description.hasPrefix("Book.title (of another model) is not") == true)
    let other = try Model(ModelDescription { EntityDescription("Shelf") { Attribute.string("label") } })
    let label = try other.entity(named: "Shelf").attribute(named: "label")
    #expect(amberError { try book.setValue("A", for: label) }?.description == "Shelf.label is not an attribute of \(book.description)")
}

/// A model file over the documented limits is refused before it is parsed,
/// naming its size, as JSON text, as a file and as an Xcode model; so is a
/// model of more entities than the limit (issue 43, item 9).
@Test func modelsOverTheLimitsAreRefusedBeforeParsing() throws {
    // A userInfo-like string just over the limit: valid JSON that parsing would have grown many times.
    let huge = Data("{\"entities\": [], \"pad\": \"".utf8) + Data(count: ModelLimits.fileBytes) + Data("\"}".utf8)
    #expect(amberError { _ = try ModelDescription(json: huge) }?.description
        == "$: the model is \(huge.count) bytes; a model file may have at most \(ModelLimits.fileBytes) (64 MiB)")
    let directory = temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("huge.json")
    try huge.write(to: file)
    #expect(amberError { _ = try ModelDescription(contentsOf: file) }?.description.contains("a model file may have at most") == true)
    #expect(amberError { _ = try XcodeModelImport(xml: huge) }?.description.contains("a model file may have at most") == true)
    let many = "{\"entities\": [" + Array(repeating: "{}", count: ModelLimits.entities + 1).joined(separator: ",") + "]}"
    #expect(amberError { _ = try ModelDescription(json: Data(many.utf8)) }?.description
        == "$.entities: \(ModelLimits.entities + 1) entities; a model may have at most \(ModelLimits.entities)")
}
