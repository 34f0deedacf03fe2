import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberValues

/// Fetched properties: read-only properties whose value is a fetch, from
/// Swift, JSON and Xcode models, checked against a brute-force filter over
/// the same objects, kept until the object is refreshed, and refused at bind
/// with their place.
@Suite struct FetchedPropertyTests {
    static let genres = ["sf", "poetry", "crime"]

    static func description() -> ModelDescription {
        ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Attribute.string("favouriteGenre")
                Attribute.integer32("born")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            .fetching("recentBooks", entity: "Book", where: "author == $FETCH_SOURCE AND year >= 2000",
                      sortedBy: [SortKey("year", ascending: false), SortKey("title")])
            .fetching("favouriteGenreBooks", entity: "Book", where: "genre == $FETCH_SOURCE.favouriteGenre", sortedBy: [SortKey("title")])
            .fetching("poetry", entity: "Book", where: "genre == $FETCHED_PROPERTY.userInfo.genre AND author != $FETCH_SOURCE",
                      sortedBy: [SortKey("title")], limit: 3, userInfo: ["genre": "poetry"])
            EntityDescription("Poet") { Attribute.string("school") }.inheriting(from: "Author")
            EntityDescription("Book") {
                Attribute.string("title").required()
                Attribute.string("genre")
                Attribute.integer32("year")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        }
    }

    @Test("a fetched property reads what a brute-force filter picks, in its order, on every kind of store", arguments: StoreKind.allCases)
    func matchesABruteForceFilter(_ kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(Model(Self.description()))
        defer { cleanup() }
        let context = Context(store: store)
        var random = SplitMix64(seed: 77)
        var authors: [ManagedObject] = []
        for index in 0..<6 {
            let author = try context.insert(index % 3 == 2 ? "Poet" : "Author")
            try author.setValue(.string("author \(index)"), forKey: "name")
            try author.setValue(index == 4 ? .null : .string(Self.genres[index % 3]), forKey: "favouriteGenre")
            authors.append(author)
        }
        var books: [(title: String, genre: String, year: Int64, author: Int)] = []
        for index in 0..<120 {
            let book = try context.insert("Book")
            let row = (title: String(format: "book %03d", index), genre: Self.genres.randomElement(using: &random) ?? "sf",
                       year: Int64.random(in: 1950...2025, using: &random), author: Int.random(in: 0..<authors.count, using: &random))
            try book.setValue(.string(row.title), forKey: "title")
            try book.setValue(.string(row.genre), forKey: "genre")
            try book.setValue(.int(row.year), forKey: "year")
            try book.setObject(authors[row.author], forKey: "author")
            books.append(row)
        }
        try context.save()

        let reader = Context(store: store)
        for (index, author) in authors.enumerated() {
            let fetched = try #require(try reader.fetch(FetchRequest("Author", predicate: FetchPredicate("name == %@", .string("author \(index)")))).first)
            let recent = try fetched.fetchedObjects(forKey: "recentBooks").map { try $0.value(forKey: "title") }
            let expected = books.filter { $0.author == index && $0.year >= 2000 }
                .sorted { ($0.year, $1.title) > ($1.year, $0.title) }.map { Value.string($0.title) }
            #expect(recent == expected && !expected.isEmpty, "author \(index)")
            let favourite = try fetched.fetchedObjects(forKey: "favouriteGenreBooks").map { try $0.value(forKey: "title") }
            let genre = index == 4 ? nil : Self.genres[index % 3]
            #expect(favourite == books.filter { $0.genre == genre }.map(\.title).sorted().map(Value.string), "author \(index)")
            let poetry = try fetched.fetchedObjects(forKey: "poetry").map { try $0.value(forKey: "title") }
            #expect(poetry == Array(books.filter { $0.genre == "poetry" && $0.author != index }.map(\.title).sorted().prefix(3)).map(Value.string))
            _ = author
        }
        // A sub-entity has its parent's fetched properties.
        let poet = try #require(try reader.fetch(FetchRequest("Poet", limit: 1)).first)
        #expect(try !poet.fetchedObjects(forKey: "recentBooks").isEmpty)
    }

    @Test("a fetched property is kept until its object is refreshed, and an unknown one is named")
    func keptUntilRefreshed() throws {
        let store = try Store(url: "memory:", model: Model(Self.description()))
        let context = Context(store: store)
        let author = try context.insert("Author")
        try author.setValue(.string("Le Guin"), forKey: "name")
        func add(_ title: String, year: Int64) throws {
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            try book.setValue(.int(year), forKey: "year")
            try book.setObject(author, forKey: "author")
        }
        try add("The Telling", year: 2000)
        try context.save()
        let first = try author.fetchedObjects(forKey: "recentBooks")
        #expect(try first.map { try $0.value(forKey: "title") } == [.string("The Telling")])
        try add("Lavinia", year: 2008)
        try context.save()
        // Kept as first read, as Core Data keeps it.
        #expect(try author.fetchedObjects(forKey: "recentBooks").map(\.objectID) == first.map(\.objectID))
        try context.refresh(author, mergeChanges: true)
        #expect(try author.fetchedObjects(forKey: "recentBooks").map { try $0.value(forKey: "title") } == [.string("Lavinia"), .string("The Telling")])
        #expect {
            try author.fetchedObjects(forKey: "recentBook")
        } throws: { error in
            guard case AmberError.unknownFetchedProperty("Author", "recentBook", "recentBooks") = error else { return false }
            return true
        }
        // Not a property a value or a relationship is read as.
        #expect(throws: AmberError.self) { try author.value(forKey: "recentBooks") }

        // What a new object read is kept under its saved ID; what a released object read goes with it.
        let newcomer = try context.insert("Author")
        try newcomer.setValue(.string("Butler"), forKey: "name")
        #expect(try newcomer.fetchedObjects(forKey: "recentBooks").isEmpty)
        try context.save()
        #expect(context.fetchedResults[newcomer.objectID] != nil && context.fetchedResults.count == 2)
        let reader = Context(store: store)
        do {
            let authors = try reader.fetch(FetchRequest("Author"))
            for fetched in authors { _ = try fetched.fetchedObjects(forKey: "recentBooks") }
            withExtendedLifetime(authors) { #expect(reader.fetchedResults.count == 2) }
        }
        #expect(reader.fetchedResults.isEmpty)
    }

    @Test("a JSON model keeps its fetched properties, and an Xcode model's are imported")
    func jsonAndXcodeModels() throws {
        let description = Self.description()
        let text = description.jsonText()
        #expect(text.contains("\"fetchedProperties\""))
        #expect(try ModelDescription(json: Data(text.utf8)) == description)
        // Fetched properties do not shape the store: the version hash is the same without them.
        var bare = description
        bare.entities = bare.entities.map { var entity = $0; entity.fetchedProperties = []; return entity }
        #expect(try Model(bare).versionHash == Model(description).versionHash)

        let imported = try importXML("""
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
              <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/>
              <fetchedProperty name="classics" optional="YES">
                <fetchRequest name="fetchedPropertyFetchRequest" entity="Book" predicateString="author == $FETCH_SOURCE AND era == $FETCHED_PROPERTY.userInfo.era"/>
                <userInfo><entry key="era" value="Regency"/></userInfo>
              </fetchedProperty></entity>
            <entity name="Book"><attribute name="title" optional="YES" attributeType="String"/>
              <attribute name="era" optional="YES" attributeType="String"/>
              <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/></entity>
            """)
        #expect(!imported.notes.contains { $0.place == "Author.classics" }, "\(imported.notes)")
        // One Amber cannot bind (a to-many in $FETCH_SOURCE's path, a variable it does not fill) is left out with a note; the model imports.
        let partly = try importXML("""
            <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
              <fetchedProperty name="odd" optional="YES"><fetchRequest name="r" entity="Author" predicateString="name == $SOMETHING"/></fetchedProperty>
              <fetchedProperty name="named" optional="YES"><fetchRequest name="r" entity="Author" predicateString="name == $FETCH_SOURCE.name"/></fetchedProperty>
              <fetchedProperty optional="YES"><fetchRequest name="r" entity="Author"/></fetchedProperty></entity>
            """)
        #expect(try partly.model.entity("Author").fetchedProperties.map(\.name) == ["named"])
        #expect(partly.notes(at: "Author.odd").first?.hasPrefix("fetched property not imported: $SOMETHING") == true, "\(partly.notes)")
        #expect(partly.notes(at: "Author").contains { $0.contains("without a name") })
        _ = try Model(partly.model)
        let property = try #require(try imported.model.entity("Author").fetchedProperties.first)
        #expect(property == FetchedPropertyDescription("classics", entity: "Book", where: "author == $FETCH_SOURCE AND era == $FETCHED_PROPERTY.userInfo.era",
                                                       userInfo: ["era": "Regency"]))
        let model = try Model(imported.model)
        let context = Context(store: try Store(url: "memory:", model: model))
        let author = try context.insert("Author")
        for (title, era) in [("Persuasion", "Regency"), ("Orlando", "Modernist")] {
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            try book.setValue(.string(era), forKey: "era")
            try book.setObject(author, forKey: "author")
        }
        try context.save()
        // The user info's entries are text, compared as text.
        #expect(try author.fetchedObjects(forKey: "classics").map { try $0.value(forKey: "title") } == [.string("Persuasion")])
    }

    @Test("a fetched property that cannot work is refused at bind, naming Entity.property")
    func refusedAtBind() throws {
        func problems(_ property: FetchedPropertyDescription, on entity: String = "Author") -> [String] {
            var description = Self.description()
            if let index = description.entities.firstIndex(where: { $0.name == entity }) { description.entities[index].fetchedProperties.append(property) }
            do {
                _ = try Model(description)
                return []
            } catch AmberError.invalidModel(let problems) {
                return problems.map(\.description)
            } catch {
                return ["\(error)"]
            }
        }
        #expect(problems(FetchedPropertyDescription("x", entity: "Book", where: "genre == $GENRE")).first?.contains("Author.x: $GENRE") == true)
        #expect(problems(FetchedPropertyDescription("x", entity: "Book", where: "genre == $FETCHED_PROPERTY.userInfo.missing")).first?.contains("Author.x") == true)
        #expect(problems(FetchedPropertyDescription("x", entity: "Book", where: "genre == $FETCH_SOURCE.nope")).first?.contains("Author.x: $FETCH_SOURCE.nope") == true)
        #expect(problems(FetchedPropertyDescription("x", entity: "Book", where: "titel == 'a'")).first?.contains("titel") == true)
        #expect(problems(FetchedPropertyDescription("x", entity: "Boook")).first?.contains("Book") == true)
        #expect(problems(FetchedPropertyDescription("name", entity: "Book")).first?.contains("Author.name") == true)
        #expect(problems(FetchedPropertyDescription("recentBooks", entity: "Book"), on: "Poet").first?.contains("Poet.recentBooks") == true)
        #expect(problems(FetchedPropertyDescription("x", entity: "Book", limit: 0)).first?.contains("limit") == true)
        #expect(problems(FetchedPropertyDescription("recentBooks", entity: "Book")) == ["Author.recentBooks: duplicate fetched property name"])
        // A sub-entity's own attribute may not take the name of a fetched property it inherits.
        var clash = Self.description()
        if let poet = clash.entities.firstIndex(where: { $0.name == "Poet" }) { clash.entities[poet].attributes.append(Attribute.string("poetry")) }
        #expect(throws: AmberError.self) { try Model(clash) }
        #expect(problems(FetchedPropertyDescription("x", entity: "Book")).isEmpty)
    }
}
