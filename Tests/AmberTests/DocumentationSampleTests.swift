import Foundation
import Testing
@testable import Amber

/// The Swift samples of the DocC articles (Sources/Amber/Amber.docc), run as
/// written: each test body holds its article's sample verbatim (after any
/// setup the article's prose supplies), and
/// `ReadmeSampleTests.everySampleIsRun` fails when an article's sample and
/// its copy here differ.
@Suite struct DocumentationSampleTests {
    /// docs/core-data-stores.md: a store Core Data wrote, read with its app's model.
    @Test func coreDataStoresPage() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel3_V1.sqlite")
        defer { fixture.remove() }
        let bundle = sharedCoreData.appendingPathComponent("CoreDataPlus/SampleModel3.xcdatamodeld"), storePath = fixture.path
        let imported = try XcodeModelImport(contentsOf: bundle)
        let store = try Store(path: storePath, model: Model(imported.model))
        let users = try Context(store: store).fetch(FetchRequest("User", predicate: FetchPredicate("petName BEGINSWITH 'Dog'")))
        #expect(users.count == 12)
    }

    @Test func modelsArticle() throws {
        let description = ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Relationship.toMany("books", "Book", inverse: "author").deleteRule(.cascade)
            }
            EntityDescription("Book") {
                Attribute.string("title").required().length(atLeast: 1)
                Attribute.decimal("price").min(0)
                Relationship.toOne("author", "Author", inverse: "books")
            }
        }
        let model = try Model(description, registry: Registry())
        let json = model.description.jsonText()
        let again = try Model(ModelDescription(json: Data(json.utf8)), registry: Registry())
        assert(again.versionHash == model.versionHash)
    }

    @Test func contextsArticle() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Book") { Attribute.string("title") }
        }, registry: Registry())
        let store = try Store.inMemory(model: model)
        let writer = Context(store: store)
        let reader = Context(store: store)

        let dune = try writer.insert("Book")
        try dune.setValue("Dune", forKey: "title")
        try writer.save()

        let seen = try reader.fetch("Book", where: "title == %@", "Dune")
        try dune.setValue("Dune Messiah", forKey: "title")
        try writer.save()
        try reader.mergeSavedChanges()
        let merged = try seen[0].value(forKey: "title")
        assert(merged == "Dune Messiah")

        writer.undoStack = UndoStack()
        try dune.setValue("Children of Dune", forKey: "title")
        _ = try writer.undo()
        let undone = try dune.value(forKey: "title")
        assert(undone == "Dune Messiah")

        let draft = try writer.insert("Book")
        try draft.setValue("Dune (draft)", forKey: "title")
        let both = try writer.fetch("Book", where: "title BEGINSWITH %@", "Dune")
        assert(both.count == 2)
        var stored = try FetchRequest("Book", where: "title BEGINSWITH %@", "Dune")
        stored.includesPendingChanges = false
        let saved = try writer.fetch(stored)
        assert(saved.count == 1)
        #expect(both.count == 2 && both[1] === draft)
    }

    @Test func transformersArticle() throws {
        let registry = Registry()
        try registry.register(Transformer(name: "Shout", from: "String", to: "String",
                                          forward: { value in
                                              guard case .string(let text) = value else { return value }
                                              return .string(text.uppercased())
                                          },
                                          reverse: { value in
                                              guard case .string(let text) = value else { return value }
                                              return .string(text.lowercased())
                                          }))
        let notes = try Model(ModelDescription {
            EntityDescription("Note") {
                Attribute.transformable("body", valueClass: "String", transformers: ["Shout"])
            }
        }, registry: registry)
        let context = Context(store: try Store.inMemory(model: notes))
        try context.insert("Note").setValue("sand", forKey: "body")
        try context.save()
        let read = try Context(store: context.store).fetch("Note")[0].value(forKey: "body")
        assert(read == "sand")
    }

    @Test func pluginsArticle() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let colorPluginPath = try samplePlugin("Color", "color.c", in: directory)
        let registry = Registry()
        let info = try registry.loadPlugin(at: colorPluginPath)
        assert(info.transformers.map(\.name) == ["ColorToData"])
        let colors = try Model(ModelDescription {
            EntityDescription("Swatch") {
                Attribute.transformable("color", valueClass: "Color", transformers: ["ColorToData"])
            }
        }, registry: registry)
        _ = colors
    }
}
