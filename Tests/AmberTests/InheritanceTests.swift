import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// Entity inheritance: sub-entities inherit attributes and relationships,
/// share their root's table, and come with their parent's fetches.
@Suite struct InheritanceTests {
    static let description = ModelDescription {
        EntityDescription("Person") {
            Attribute.string("name").required()
            Relationship.toMany("books", "Book", inverse: "author")
        }
        .abstract()
        EntityDescription("Writer") {
            Attribute.string("genre")
        }
        .inheriting(from: "Person")
        EntityDescription("Poet") {
            Attribute.integer32("poems")
        }
        .inheriting(from: "Writer")
        EntityDescription("Editor") {
            Attribute.string("house")
            Relationship.toMany("edited", "Book", inverse: "editor")
        }
        .inheriting(from: "Person")
        EntityDescription("Book") {
            Attribute.string("title")
            Relationship.toOne("author", "Person", inverse: "books")
            Relationship.toOne("editor", "Editor", inverse: "edited")
        }
    }

    @Test func subEntitiesInheritAndShareTheRootsTable() throws {
        let model = try Model(Self.description)
        let poet = try model.entity(named: "Poet"), person = try model.entity(named: "Person")
        #expect(poet.attributes.map(\.name) == ["name", "genre", "poems"] && poet.relationships.map(\.name) == ["books"])
        #expect(model.parent(of: poet)?.name == "Writer" && model.root(of: poet) === person && person.isAbstract && !poet.isAbstract)
        #expect(poet.isKind(of: person) && !person.isKind(of: poet))
        #expect(person.subentityIndices.map { model.entities[$0].name } == ["Person", "Writer", "Poet", "Editor"])
        // JSON keeps parent and abstract; binding it again gives the same model.
        let again = try ModelDescription(json: Data(model.description.jsonText().utf8))
        #expect(again == Self.description)
        #expect(try Model(again).versionHash == model.versionHash)
        var orphaned = Self.description
        orphaned.entities[1].parent = nil
        #expect(try Model(orphaned).versionHash != model.versionHash)

        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("people.amber").path
        _ = try Store(path: path, model: model)
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_amber%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name)", -1, &statement, nil)
        #expect(sqlite3_step(statement) == SQLITE_ROW && String(cString: sqlite3_column_text(statement, 0)) == "Book Person")
        sqlite3_finalize(statement)
        sqlite3_prepare_v2(db, "SELECT group_concat(name, ' ') FROM pragma_table_info('Person')", -1, &statement, nil)
        #expect(sqlite3_step(statement) == SQLITE_ROW
            && String(cString: sqlite3_column_text(statement, 0)) == "_pk _entity _version name genre poems house")
        sqlite3_finalize(statement)
    }

    /// A to-many whose destination is a parent entity counts members of the entities below it,
    /// before and after a save, as pending changes move them (the bookmarks model's folders).
    @Test func toManyMembersOfSubEntitiesCount() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Item") {
                Attribute.string("title")
                Relationship.toOne("parent", "Folder", inverse: "children")
            }
            .abstract()
            EntityDescription("Folder") {
                Relationship.toMany("children", "Item", inverse: "parent").required()
            }
            .inheriting(from: "Item")
            EntityDescription("Bookmark") { Attribute.string("url") }.inheriting(from: "Item")
        })
        let context = Context(store: try Store.inMemory(model: model))
        let children = try model.entity(named: "Folder").relationship(named: "children")
        let root = try context.insert("Folder"), sub = try context.insert("Folder"), mark = try context.insert("Bookmark")
        try sub.add(mark, to: children)
        try root.add(sub, to: children)
        #expect(try root.objects(for: children) == [sub] && root.count(of: children) == 1 && sub.count(of: children) == 1)
        let lonely = try context.insert("Folder")
        try lonely.add(try context.insert("Bookmark"), to: children)
        try context.save()
        let again = Context(store: context.store)
        let folders = try again.fetch("Folder", where: "children.@count == 1")
        #expect(folders.count == 3)
        #expect(try again.fetch("Folder", where: "ANY children.title == nil").count == 3)
        // A member moved away and one deleted are counted as they are in memory.
        try mark.setObject(lonely, forKey: "parent")
        #expect(try sub.count(of: children) == 0 && lonely.count(of: children) == 2)
        try context.delete(mark)
        #expect(try lonely.count(of: children) == 1)
        #expect(try context.count(FetchRequest("Item")) == 4)
    }

    /// One-to-one through a sub-entity's handle whose old partner is of the parent entity (an inherited
    /// to-one sits at another slot in an entity that adds attributes).
    @Test func oneToOneThroughASubEntityLetsTheOldPartnerGo() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Person") {
                Attribute.string("name")
                Relationship.toOne("passport", "Passport", inverse: "owner")
            }
            EntityDescription("Novelist") { Attribute.integer32("novels"); Attribute.string("genre") }.inheriting(from: "Person")
            EntityDescription("Passport") {
                Attribute.string("number")
                Relationship.toOne("owner", "Person", inverse: "passport")
            }
        })
        let context = Context(store: try Store.inMemory(model: model))
        let person = try context.insert("Person"), novelist = try context.insert("Novelist"), passport = try context.insert("Passport")
        try person.setObject(passport, forKey: "passport")
        try novelist.setObject(passport, forKey: "passport")
        #expect(try person.object(forKey: "passport") == nil)
        #expect(try passport.object(forKey: "owner") === novelist)
        try person.setObject(passport, forKey: "passport")
        #expect(try novelist.object(forKey: "passport") == nil && passport.object(forKey: "owner") === person)
        try context.save()
    }

    @Test func bindingReportsHierarchyProblems() {
        let description = ModelDescription {
            EntityDescription("A") { Attribute.string("x") }.inheriting(from: "C")
            EntityDescription("B") { Attribute.string("x") }.inheriting(from: "A")
            EntityDescription("C") { Attribute.string("y") }.inheriting(from: "B")
            EntityDescription("D") { Attribute.string("z") }.inheriting(from: "Dd")
            EntityDescription("Root") { Attribute.string("name") }
            EntityDescription("Left") { Attribute.string("side") }.inheriting(from: "Root")
            EntityDescription("Right") { Attribute.integer16("side") }.inheriting(from: "Root")
            EntityDescription("Child") { Attribute.string("name") }.inheriting(from: "Root")
        }
        guard case .invalidModel(let problems) = amberError({ _ = try Model(description) }) else {
            Issue.record("expected invalidModel")
            return
        }
        let lines = Set(problems.map(\.description))
        #expect(lines.contains("A: inherits from itself through its parents"))
        #expect(lines.contains("D: parent \"Dd\": no such entity; did you mean D?") || lines.contains("D: parent \"Dd\": no such entity"))
        // Siblings may each declare a property of one name: each has its own column (SiblingPropertyTests).
        #expect(!lines.contains { $0.hasPrefix("Right.side") })
        #expect(lines.contains("Child.name: Root already has a property of that name, which Child inherits"))
    }

    @Test func fetchesReturnSubEntitiesAndLinksAcceptThem() throws {
        let model = try Model(Self.description)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        #expect(amberError { _ = try context.insert("Person") }?.description
            == "Person: expected an entity that is not abstract, given an abstract entity; insert one of its sub-entities")
        let frost = try context.insert("Poet"), king = try context.insert("Writer"), perkins = try context.insert("Editor")
        try frost.setValue("Frost", forKey: "name")
        try frost.setValue(.int(120), forKey: "poems")
        try king.setValue("King", forKey: "name")
        try king.setValue("horror", forKey: "genre")
        try perkins.setValue("Perkins", forKey: "name")
        try perkins.setValue("Scribner", forKey: "house")
        let poems = try context.insert("Book"), novel = try context.insert("Book")
        try poems.setValue("North of Boston", forKey: "title")
        try novel.setValue("Carrie", forKey: "title")
        try poems.setObject(frost, forKey: "author")       // a Poet where a Person is expected
        try novel.setObject(king, forKey: "author")
        try novel.setObject(perkins, forKey: "editor")
        #expect(amberError { try novel.setObject(king, forKey: "editor") }?.description.hasPrefix("Book.editor: expected an Editor") == true)
        try context.save()

        let fresh = Context(store: store)
        let people = try fresh.fetch("Person", sortedBy: [.ascending("name")])
        #expect(people.map(\.entity.name) == ["Poet", "Writer", "Editor"])
        #expect(try people[0].value(forKey: "poems") == .int(120))
        #expect(try people[1].value(forKey: "genre") == .string("horror"))
        #expect(try fresh.fetch("Writer").map(\.entity.name).sorted() == ["Poet", "Writer"])
        var exact = FetchRequest("Writer")
        exact.includesSubentities = false
        #expect(try fresh.fetch(exact).map(\.entity.name) == ["Writer"])
        #expect(try fresh.count(FetchRequest("Writer")) == 2)
        // Links to an entity with sub-entities come back as the right kind.
        let carrie = try #require(try fresh.fetch("Book", where: "title == 'Carrie'").first)
        #expect(try carrie.object(forKey: "author")?.entity.name == "Writer")
        let otherContext = Context(store: store)
        let north = try #require(try otherContext.fetch("Book", where: "title == 'North of Boston'").first)
        #expect(try north.object(forKey: "author")?.entity.name == "Poet")
        #expect(try fresh.fetch("Book", where: "author.name == 'Frost'").count == 1)
        // An object ID of a sub-entity names a row of its parent entity.
        #expect(try fresh.fetch("Book", where: "author == %@", .objectID(frost.objectID)).count == 1)
        #expect(try fresh.fetch("Person", where: "SELF == %@", .objectID(frost.objectID)).count == 1)
        #expect(try fresh.fetch("Person", where: "ANY books.title BEGINSWITH 'Car'").map(\.entity.name) == ["Writer"])
        #expect(try fresh.fetch("Editor", where: "edited.@count == 1").count == 1)
        // A sub-entity's fetch never sees its siblings' rows, even through a predicate.
        #expect(try fresh.fetch("Writer", where: "name == 'Perkins'").isEmpty)
        // New objects of different entities in one hierarchy share its keys.
        let third = try fresh.insert("Editor")
        try third.setValue("Lish", forKey: "name")
        try fresh.save()
        #expect(Set(try fresh.fetch("Person").compactMap(\.objectID.primaryKey)).count == 4)
    }

    /// A saved one-way link to a parent entity that points at a sub-entity's object this save deletes is refused.
    @Test func linksIntoDeletedSubEntityObjectsAreRefused() throws {
        var description = Self.description
        description.entities[4].relationships.append(Relationship.toOne("reviewer", "Person"))
        let context = Context(store: try Store.inMemory(model: try Model(description)))
        let poet = try context.insert("Poet"), book = try context.insert("Book")
        try poet.setValue("Frost", forKey: "name")
        try book.setValue("North of Boston", forKey: "title")
        try book.setObject(poet, forKey: "reviewer")
        try context.save()
        try context.delete(poet)
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else { Issue.record("expected a failed save"); return }
        #expect(problems.map(\.description) == ["\(book.objectID): Book.reviewer: points at \(poet.objectID), which this save deletes"])
    }

    /// Deleting a sub-entity's object clears its rows from a join table that
    /// names its parent entity; a parent's attribute handle inserts columns of a sub-entity.
    @Test func parentHandlesAndJoinRowsReachSubEntities() throws {
        var description = Self.description
        description.entities.append(EntityDescription("Shelf") {
            Attribute.string("name")
            Relationship.toMany("people", "Person")
        })
        let model = try Model(description)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let name = try model.entity(named: "Person").attribute(named: "name")
        let poets = try context.insert(try model.entity(named: "Poet"), setting: [name], columns: [.strings(["Frost", "Dickinson"])])
        #expect(try poets.map { try $0.value(forKey: "name") } == [.string("Frost"), .string("Dickinson")])
        let shelf = try context.insert("Shelf")
        try shelf.setObjects(poets, forKey: "people")
        try context.save()
        try shelf.remove(poets[0], from: try model.entity(named: "Shelf").relationship(named: "people"))
        try context.delete(poets[0])
        try context.save()
        let fresh = Context(store: store)
        #expect(try fresh.fetch("Shelf").first?.count(of: try model.entity(named: "Shelf").relationship(named: "people")) == 1)
        let last = try #require(try fresh.fetch("Poet").first)
        try fresh.fetch("Shelf").first?.setObjects([], forKey: "people")
        try fresh.delete(last)
        try fresh.save()
        let after = Context(store: store)
        #expect(try after.fetch("Shelf").first?.count(of: try model.entity(named: "Shelf").relationship(named: "people")) == 0)
    }

    /// A large save writes each entity's new rows several to a statement;
    /// here the entities of one table come interleaved and link to one
    /// another, so the rows are written in another order than the keys were
    /// given. Differential: every object, read back through a fresh
    /// context by its ID, has its own entity, values and links.
    @Test func largeInterleavedSavesKeepEachObjectsRow() throws {
        let model = try Model(Self.description)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        var random = SplitMix64(seed: 41)
        var people: [ManagedObject] = [], editors: [ManagedObject] = [], books: [ManagedObject] = []
        for index in 0..<400 {
            switch Int.random(in: 0..<5, using: &random) {
            case 0, 1:
                let book = try context.insert("Book")
                try book.setValue(.string("book \(index)"), forKey: "title")
                if let author = people.randomElement(using: &random) { try book.setObject(author, forKey: "author") }
                if Bool.random(using: &random), let editor = editors.randomElement(using: &random) { try book.setObject(editor, forKey: "editor") }
                books.append(book)
            case 2:
                let writer = try context.insert("Writer")
                try writer.setValue(.string("writer \(index)"), forKey: "name")
                try writer.setValue(.string("genre \(index)"), forKey: "genre")
                people.append(writer)
            case 3:
                let poet = try context.insert("Poet")
                try poet.setValue(.string("poet \(index)"), forKey: "name")
                try poet.setValue(.int(Int64(index)), forKey: "poems")
                people.append(poet)
            default:
                let editor = try context.insert("Editor")
                try editor.setValue(.string("editor \(index)"), forKey: "name")
                editors.append(editor)
                people.append(editor)
            }
        }
        // Books that come before their author: the author's key is given before its row is written.
        for book in books.prefix(20) { try book.setObject(people.last, forKey: "author") }
        try context.save()

        let fresh = Context(store: store)
        #expect(try fresh.count(FetchRequest("Person")) == people.count && fresh.count(FetchRequest("Book")) == books.count)
        for person in people {
            let read = try fresh.object(with: person.objectID)
            #expect(read.entity.name == person.entity.name)
            for attribute in person.entity.attributes { #expect(try read.value(for: attribute) == person.value(for: attribute)) }
        }
        for book in books {
            let read = try fresh.object(with: book.objectID)
            #expect(try read.value(forKey: "title") == book.value(forKey: "title"))
            #expect(try read.object(forKey: "author")?.objectID == book.object(forKey: "author")?.objectID)
            #expect(try read.object(forKey: "editor")?.objectID == book.object(forKey: "editor")?.objectID)
        }
    }
}
