import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberValues

/// A library: authors write books (one-to-many), books carry tags (many to
/// many, ordered on the book's side), people follow people (self many to
/// many), a book may name its translator (one-way to-one), a shelf lists
/// books (one-way ordered to-many), a person has one passport (one-to-one).
func libraryDescription() -> ModelDescription {
    ModelDescription {
        EntityDescription("Author") {
            Attribute.string("name").required()
            Relationship.toMany("books", "Book", inverse: "author").deleteRule(.cascade)
        }
        EntityDescription("Book") {
            Attribute.string("title").required()
            Attribute.double("price")
            Relationship.toOne("author", "Author", inverse: "books").required()
            Relationship.toMany("tags", "Tag", inverse: "books").ordered()
            Relationship.toOne("translator", "Person")
        }
        EntityDescription("Tag") {
            Attribute.string("label")
            Relationship.toMany("books", "Book", inverse: "tags").count(atMost: 1000)
        }
        EntityDescription("Person") {
            Attribute.string("name")
            Relationship.toMany("following", "Person", inverse: "followers")
            Relationship.toMany("followers", "Person", inverse: "following")
            Relationship.toOne("passport", "Passport", inverse: "holder").deleteRule(.cascade)
        }
        EntityDescription("Passport") {
            Attribute.string("number")
            Relationship.toOne("holder", "Person", inverse: "passport").deleteRule(.deny)
        }
        EntityDescription("Shelf") {
            Attribute.string("name")
            Relationship.toMany("books", "Book").ordered()
        }
    }
}

@Suite struct RelationshipModelTests {
    @Test func bindingResolvesDestinationsInversesAndStorage() throws {
        let model = try Model(libraryDescription())
        let author = try model.entity(named: "Author"), book = try model.entity(named: "Book")
        let books = try author.relationship(named: "books"), writer = try book.relationship(named: "author")
        #expect(model.destination(of: books) === book && model.destination(of: writer) === author)
        #expect(model.inverse(of: books) === writer && model.inverse(of: writer) === books)
        #expect(books.isToMany && !writer.isToMany && !writer.isOptional && books.deleteRule == .cascade)
        // A to-one is a column of its entity's table: a slot after the attributes' and a column named as it.
        guard case .foreignKey(let slot) = writer.storage else { Issue.record("author is a foreign key"); return }
        #expect(slot >= book.attributes.count && book.columns.contains { $0.name == "author" && $0.slot == slot && $0.type == .integer64 })
        #expect(books.storage == .inverseForeignKey(orderColumn: nil))
        // Both sides of a many-to-many share one table; the ordered side keeps its positions.
        let tags = try book.relationship(named: "tags"), tagged = try model.entity(named: "Tag").relationship(named: "books")
        #expect(tags.storage == .joinTable(table: "_amber_Book.tags", sourceColumn: "source", destinationColumn: "target",
                                           orderColumn: "source_order"))
        #expect(tagged.storage == .joinTable(table: "_amber_Book.tags", sourceColumn: "target", destinationColumn: "source",
                                             orderColumn: nil))
        #expect(tagged.maxCount == 1000 && tags.isOrdered && !tagged.isOrdered)
        let translator = try book.relationship(named: "translator")
        #expect(translator.inverseName == nil && model.inverse(of: translator) == nil && translator.slot != nil)
        let shelf = try model.entity(named: "Shelf").relationship(named: "books")
        #expect(shelf.storage == .joinTable(table: "_amber_Shelf.books", sourceColumn: "source", destinationColumn: "target",
                                            orderColumn: "source_order"))
        #expect(amberError { _ = try book.relationship(named: "autor") }?.description == "Book.autor: no such relationship; did you mean author?")
    }

    @Test func jsonRoundTripsEveryRelationshipField() throws {
        var description = libraryDescription()
        description.entities[1].relationships[0] = description.entities[1].relationships[0].userInfo("shown", "yes")
        description.entities[3].relationships[0] = description.entities[3].relationships[0].count(2...5).deleteRule(.noAction)
        let text = description.jsonText(pretty: true)
        let again = try ModelDescription(json: Data(text.utf8))
        #expect(again == description)
        #expect(again.jsonText(pretty: true) == text)
        #expect(try Model(again).versionHash == Model(description).versionHash)
        // Relationships shape the store: changing one changes the version hash.
        var changed = description
        changed.entities[2].relationships[0].isOrdered = true
        #expect(try Model(changed).versionHash != Model(description).versionHash)
    }

    @Test func jsonErrorsNameThePath() {
        let json = #"{"entities": [{"name": "A", "relationships": [{"name": "b", "destination": "A", "inverse": "b", "deleteRule": "cascde"}]}]}"#
        #expect(amberError { _ = try ModelDescription(json: Data(json.utf8)) }?.description
            == #"$.entities[0].relationships[0].deleteRule: unknown delete rule "cascde"; did you mean cascade?"#)
        let extra = #"{"entities": [{"name": "A", "relationships": [{"name": "b", "destination": "A", "invers": "b"}]}]}"#
        #expect(amberError { _ = try ModelDescription(json: Data(extra.utf8)) }?.description.contains("relationships[0].invers: unknown key") == true)
    }

    @Test func bindingListsEveryRelationshipProblem() {
        let description = ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
                Relationship.toMany("drafts", "Bok", inverse: "author")
                RelationshipDescription("orphan", destination: "Book", inverse: nil, toMany: true)
                Relationship.toMany("name", "Book").count(atLeast: 3).count(atMost: 2)
                Relationship.toOne("editor", "Book", inverse: "author").count(atLeast: 1)
                Relationship.toMany("sequels", "Book", inverse: "authr")
                Relationship.toMany("empty", "Book").required().count(atMost: 0)
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Relationship.toOne("author", "Author", inverse: "drafts")
                Relationship.toOne("owner", "Book", inverse: "owner").ordered()
                RelationshipDescription("one", destination: "Book", inverse: "one", toMany: false).oneWay()
                    .userInfo("kept", "yes")
            }
        }
        guard case .invalidModel(let problems) = amberError({ _ = try Model(description) }) else {
            Issue.record("expected invalidModel")
            return
        }
        let lines = Set(problems.map(\.description))
        let expected: Set<String> = [
            "Author.books: inverse Book.author names Author.drafts as its inverse, not Author.books",
            "Author.drafts: destination \"Bok\": no such entity; did you mean Book?",
            "Author.orphan: has no inverse: name the relationship of Book that points back, or mark it one-way",
            "Author.name: duplicate name: the entity has an attribute or relationship of that name (names are case-insensitive)",
            "Author.name: minCount 3 is greater than maxCount 2",
            "Author.editor: minCount and maxCount apply to to-many relationships; a to-one is required or optional",
            "Author.editor: inverse Book.author names Author.drafts as its inverse, not Author.editor",
            "Author.sequels: inverse Book.authr: no such relationship; did you mean author?",
            "Author.empty: maxCount 0 leaves no room for any member",
            "Book.author: inverse Author.drafts points at Bok, not at Book",
            "Book.owner: ordered applies to to-many relationships",
        ]
        #expect(lines == expected, "\(lines.symmetricDifference(expected))")
        // oneWay() drops the inverse it was given, so "one" is fine.
    }

    @Test func storeHasForeignKeyColumnsIndexesAndJoinTables() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("library.amber").path
        _ = try Store(path: path, model: try Model(libraryDescription()))
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        func rows(_ sql: String) -> [String] {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { return ["error: \(sql)"] }
            defer { sqlite3_finalize(statement) }
            var result: [String] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                result.append((0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_text(statement, $0)) }.joined(separator: " "))
            }
            return result
        }
        #expect(rows("SELECT name, type FROM pragma_table_info('Book')")
            == ["_pk INTEGER", "_entity INTEGER", "_version INTEGER", "title TEXT", "price REAL", "author INTEGER", "translator INTEGER"])
        #expect(rows("SELECT name FROM pragma_table_info('Author')") == ["_pk", "_entity", "_version", "name"])
        #expect(rows("SELECT name FROM pragma_table_info('Person')") == ["_pk", "_entity", "_version", "name", "passport"])
        #expect(rows("SELECT name FROM pragma_index_list('Book') ORDER BY name") == ["Book_author_index", "Book_translator_index"])
        #expect(rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '\\_amber\\_%' ESCAPE '\\' AND name NOT IN ('_amber_metadata', '_amber_history') ORDER BY name")
            == ["_amber_Book.tags", "_amber_Person.followers", "_amber_Shelf.books"])
        #expect(rows("SELECT name FROM pragma_table_info('_amber_Book.tags')") == ["source", "target", "source_order"])
        #expect(rows("SELECT name FROM pragma_table_info('_amber_Person.followers')") == ["source", "target"])
        #expect(rows("SELECT name FROM pragma_index_list('_amber_Book.tags') WHERE origin = 'c'") == ["_amber_Book.tags_target_index"])
    }
}
