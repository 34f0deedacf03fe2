import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberValues

/// Predicates and sorts over the object graph, checked against a brute-force
/// filter of the same objects in memory, on random graphs (fixed seeds).
@Suite struct GraphPredicateTests {
    private static let description = ModelDescription {
        EntityDescription("Publisher") {
            Attribute.string("country")
            Relationship.toMany("authors", "Author", inverse: "publisher")
        }
        EntityDescription("Author") {
            Attribute.string("name")
            Relationship.toOne("publisher", "Publisher", inverse: "authors")
            Relationship.toMany("books", "Book", inverse: "author")
        }
        EntityDescription("Book") {
            Attribute.string("title")
            Attribute.double("price")
            Relationship.toOne("author", "Author", inverse: "books")
            Relationship.toMany("tags", "Tag", inverse: "books")
        }
        EntityDescription("Tag") {
            Attribute.string("label")
            Relationship.toMany("books", "Book", inverse: "tags")
        }
    }

    /// The reference graph: plain values, by index.
    private struct Graph {
        var countries: [String?] = []
        var authorNames: [String?] = [], authorPublisher: [Int?] = []
        var titles: [String] = [], prices: [Double?] = [], bookAuthor: [Int?] = [], bookTags: [Set<Int>] = []
        var labels: [String] = []

        func books(of author: Int) -> [Int] { bookAuthor.indices.filter { bookAuthor[$0] == author } }
        func books(tagged tag: Int) -> [Int] { bookTags.indices.filter { bookTags[$0].contains(tag) } }
    }

    private func randomGraph(_ random: inout SplitMix64) -> Graph {
        var graph = Graph()
        let words = ["Ada", "Bea", "Cy", "Dot", "Eve"]
        graph.countries = (0..<4).map { _ in Int.random(in: 0..<5, using: &random) == 0 ? nil : ["FR", "UK", "US"].randomElement(using: &random) }
        for _ in 0..<12 {
            graph.authorNames.append(Int.random(in: 0..<6, using: &random) == 0 ? nil : words.randomElement(using: &random))
            graph.authorPublisher.append(Int.random(in: 0..<4, using: &random) == 0 ? nil : Int.random(in: 0..<4, using: &random))
        }
        graph.labels = ["red", "green", "blue", "grey", "gold"]
        for index in 0..<50 {
            graph.titles.append("T\(index)")
            graph.prices.append(Int.random(in: 0..<7, using: &random) == 0 ? nil : Double(Int.random(in: 0...40, using: &random)) / 2)
            graph.bookAuthor.append(Int.random(in: 0..<8, using: &random) == 0 ? nil : Int.random(in: 0..<12, using: &random))
            graph.bookTags.append(Set((0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: 0..<5, using: &random) }))
        }
        return graph
    }

    /// Saves `graph`, returning each object's ID by entity and index.
    private func save(_ graph: Graph, in context: Context) throws -> [String: [ObjectID]] {
        let model = context.model
        let publishers = try graph.countries.map { (country) throws -> ManagedObject in
            let object = try context.insert("Publisher")
            try object.setValue(country.map(Value.string) ?? .null, forKey: "country")
            return object
        }
        let authors = try graph.authorNames.indices.map { (index) throws -> ManagedObject in
            let object = try context.insert("Author")
            try object.setValue(graph.authorNames[index].map(Value.string) ?? .null, forKey: "name")
            if let publisher = graph.authorPublisher[index] { try object.setObject(publishers[publisher], forKey: "publisher") }
            return object
        }
        let tags = try graph.labels.map { (label) throws -> ManagedObject in
            let object = try context.insert("Tag")
            try object.setValue(.string(label), forKey: "label")
            return object
        }
        let tagRelationship = try model.entity(named: "Book").relationship(named: "tags")
        let books = try graph.titles.indices.map { (index) throws -> ManagedObject in
            let object = try context.insert("Book")
            try object.setValue(.string(graph.titles[index]), forKey: "title")
            try object.setValue(graph.prices[index].map(Value.double) ?? .null, forKey: "price")
            if let author = graph.bookAuthor[index] { try object.setObject(authors[author], forKey: "author") }
            for tag in graph.bookTags[index].sorted() { try object.add(tags[tag], to: tagRelationship) }
            return object
        }
        try context.save()
        return ["Publisher": publishers.map(\.objectID), "Author": authors.map(\.objectID), "Book": books.map(\.objectID),
                "Tag": tags.map(\.objectID)]
    }

    @Test func keyPathPredicatesMatchABruteForceFilter() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Model(Self.description)
        var cases = 0
        for seed in 0..<3 {
            var random = SplitMix64(seed: UInt64(seed) + 100)
            let graph = randomGraph(&random)
            let context = Context(store: try Store(path: directory.appendingPathComponent("graph\(seed).amber").path, model: model))
            let ids = try save(graph, in: context)
            func keys(_ entity: String, _ indices: [Int]) -> Set<Int64> { Set(indices.compactMap { ids[entity]?[$0].primaryKey }) }
            func fetched(_ entity: String, _ format: String, _ arguments: [Value]) throws -> Set<Int64> {
                Set(try context.fetch(FetchRequest(entity, predicate: FetchPredicate(format, arguments: arguments))).compactMap(\.objectID.primaryKey))
            }
            let books = Array(graph.titles.indices), authors = Array(graph.authorNames.indices), tags = Array(graph.labels.indices)
            for _ in 0..<120 {
                let name = ["Ada", "Bea", "Cy", "Dot", "Eve"].randomElement(using: &random) ?? "Ada"
                let country = ["FR", "UK", "US"].randomElement(using: &random) ?? "FR"
                let price = Double(Int.random(in: 0...40, using: &random)) / 2
                let count = Int.random(in: 0...6, using: &random)
                let label = graph.labels.randomElement(using: &random) ?? "red"
                let someAuthors = authors.filter { _ in Bool.random(using: &random) }
                let author = authors.randomElement(using: &random) ?? 0
                let checks: [(String, String, [Value], Set<Int64>)] = [
                    ("Book", "author.name == %@", [.string(name)], keys("Book", books.filter { graph.bookAuthor[$0].flatMap { graph.authorNames[$0] } == name })),
                    ("Book", "author.publisher.country == %@", [.string(country)], keys("Book", books.filter {
                        graph.bookAuthor[$0].flatMap { graph.authorPublisher[$0] }.flatMap { graph.countries[$0] } == country })),
                    ("Book", "author.publisher == nil", [], keys("Book", books.filter { graph.bookAuthor[$0].flatMap { graph.authorPublisher[$0] } == nil })),
                    ("Book", "author == %@", [.objectID(ids["Author"]![author])], keys("Book", books.filter { graph.bookAuthor[$0] == author })),
                    ("Book", "author IN %@", [.array(someAuthors.map { .objectID(ids["Author"]![$0]) })],
                     keys("Book", books.filter { graph.bookAuthor[$0].map(someAuthors.contains) ?? false })),
                    ("Book", "price > %@ AND author.name != %@", [.double(price), .string(name)], keys("Book", books.filter {
                        (graph.prices[$0].map { $0 > price } ?? false) && graph.bookAuthor[$0].flatMap { graph.authorNames[$0] } != name })),
                    ("Author", "ANY books.price > %@", [.double(price)], keys("Author", authors.filter { a in
                        graph.books(of: a).contains { graph.prices[$0].map { $0 > price } ?? false } })),
                    ("Author", "ALL books.price > %@", [.double(price)], keys("Author", authors.filter { a in
                        graph.books(of: a).allSatisfy { graph.prices[$0].map { $0 > price } ?? false } })),
                    ("Author", "NONE books.price > %@", [.double(price)], keys("Author", authors.filter { a in
                        !graph.books(of: a).contains { graph.prices[$0].map { $0 > price } ?? false } })),
                    ("Author", "books.@count > %@", [.int(Int64(count))], keys("Author", authors.filter { graph.books(of: $0).count > count })),
                    ("Author", "books.@sum.price > %@", [.double(price * 3)], keys("Author", authors.filter { a in
                        graph.books(of: a).compactMap { graph.prices[$0] }.reduce(0, +) > price * 3 })),
                    ("Author", "books.@avg.price < %@", [.double(price)], keys("Author", authors.filter { a in
                        let known = graph.books(of: a).compactMap { graph.prices[$0] }
                        return !known.isEmpty && known.reduce(0, +) / Double(known.count) < price })),
                    ("Author", "books.@max.price >= %@", [.double(price)], keys("Author", authors.filter { a in
                        graph.books(of: a).compactMap { graph.prices[$0] }.max().map { $0 >= price } ?? false })),
                    ("Author", "ANY books.tags.label == %@", [.string(label)], keys("Author", authors.filter { a in
                        graph.books(of: a).contains { b in graph.bookTags[b].contains { graph.labels[$0] == label } } })),
                    ("Author", "ALL books.tags.label == %@", [.string(label)], keys("Author", authors.filter { a in
                        graph.books(of: a).allSatisfy { b in graph.bookTags[b].allSatisfy { graph.labels[$0] == label } } })),
                    ("Publisher", "ANY authors.books.price < %@", [.double(price)], keys("Publisher", graph.countries.indices.filter { p in
                        authors.contains { a in graph.authorPublisher[a] == p && graph.books(of: a).contains { graph.prices[$0].map { $0 < price } ?? false } } })),
                    ("Tag", "ANY books.author.name BEGINSWITH %@", [.string(String(name.prefix(1)))], keys("Tag", tags.filter { t in
                        graph.books(tagged: t).contains { graph.bookAuthor[$0].flatMap { graph.authorNames[$0] }?.hasPrefix(String(name.prefix(1))) ?? false } })),
                    ("Tag", "books.@count == 0", [], keys("Tag", tags.filter { graph.books(tagged: $0).isEmpty })),
                    ("Author", "SUBQUERY(books, $b, $b.price > %@ AND ANY $b.tags.label == %@).@count >= 2", [.double(price), .string(label)],
                     keys("Author", authors.filter { a in
                         graph.books(of: a).count { (graph.prices[$0].map { $0 > price } ?? false) && graph.bookTags[$0].contains { graph.labels[$0] == label } } >= 2 })),
                    ("Publisher", "SUBQUERY(authors, $a, $a.name == %@ OR SUBQUERY($a.books, $b, $b.price < %@).@count > 1).@count > 0",
                     [.string(name), .double(price)], keys("Publisher", graph.countries.indices.filter { p in
                         authors.contains { a in graph.authorPublisher[a] == p
                             && (graph.authorNames[a] == name || graph.books(of: a).count { graph.prices[$0].map { $0 < price } ?? false } > 1) } })),
                    ("Book", "SUBQUERY(author.books, $b, $b.price == nil).@count == %@", [.int(Int64(count % 3))], keys("Book", books.filter { b in
                        (graph.bookAuthor[b].map { a in graph.books(of: a).count { graph.prices[$0] == nil } } ?? 0) == count % 3 })),
                ]
                for (entity, format, arguments, expected) in checks {
                    #expect(try fetched(entity, format, arguments) == expected, "seed \(seed): \(entity) \(format) \(arguments)")
                    #expect(try context.count(FetchRequest(entity, predicate: FetchPredicate(format, arguments: arguments))) == expected.count)
                    cases += 1
                }
            }
            // Sorting by a to-one key path: nil first, then by name; ties by primary key.
            let sorted = try context.fetch(FetchRequest("Book", sortedBy: [SortKey("author.name"), SortKey("title")]))
            let expected = books.sorted { a, b in
                let (x, y) = (graph.bookAuthor[a].flatMap { graph.authorNames[$0] }, graph.bookAuthor[b].flatMap { graph.authorNames[$0] })
                if x != y { return (x ?? "") < (y ?? "") || x == nil }
                return graph.titles[a] < graph.titles[b]
            }
            #expect(sorted.map(\.objectID) == expected.map { ids["Book"]![$0] })
        }
        #expect(cases == 3 * 120 * 21)
    }

    @Test func badKeyPathsAreErrorsWithTheirPosition() throws {
        let model = try Model(Self.description)
        let context = Context(store: try Store.inMemory(model: model))
        func message(_ entity: String, _ format: String, _ arguments: Value...) -> String? {
            amberError { _ = try context.fetch(FetchRequest(entity, predicate: FetchPredicate(format, arguments: arguments))) }?.description
        }
        #expect(message("Book", "author.nmae == 'x'") == "predicate, position 1: author.nmae: Author.nmae: no such attribute or relationship; did you mean name?")
        #expect(message("Author", "books.price > 3") == "predicate, position 1: books.price: Author.books is a to-many relationship; "
            + "put ANY, ALL or NONE before the key path, or use a collection operator such as books.@count")
        #expect(message("Author", "ANY name == 'x'") == "predicate, position 5: ANY name: the key path has no to-many relationship to quantify over")
        #expect(message("Author", "books.@cnt > 3") == "predicate, position 1: books.@cnt: unknown collection operator @cnt; did you mean @count?")
        #expect(message("Author", "books.@sum.title > 3") == "predicate, position 1: books.@sum.title: @sum needs numbers; Book.title is string")
        #expect(message("Book", "title.length > 3") == "predicate, position 1: title.length: Book.title is an attribute; a key path cannot go on from it")
        #expect(message("Book", "author > %@", .int(3)) == "predicate, position 8: author is a relationship: compare it with ==, != or IN")
        #expect(message("Book", "author == %@", .int(3)) == "predicate, position 11: an object is compared with an object ID, given Integer 3")
        #expect(message("Author", "SUBQUERY(books, $b, price > 3).@count > 0") == "predicate, position 21: inside SUBQUERY, a key path starts with its member: $b.price")
        #expect(message("Author", "SUBQUERY(bokks, $b, $b.price > 3).@count > 0")
            == "predicate, position 1: SUBQUERY(bokks, …): the key path must end at a to-many relationship (Author has no to-many bokks); did you mean books?")
        #expect(message("Author", "SUBQUERY(books, $b, $b.price > 3) > 0") == "predicate, position 35: SUBQUERY(…) is followed by .@count, the number of members that match")
        #expect(message("Author", "SUBQUERY(books, $b, $b.titel > 3).@count > 0")
            == "predicate, position 21: Book.titel: no such attribute or relationship; did you mean title?")
        #expect(message("Author", "SUBQUERY(books, $b, SUBQUERY($b.tags, $t, $b.price > 1).@count > 0).@count > 0")
            == "predicate, position 43: $b belongs to an enclosing SUBQUERY; an inner one reads only its own member")
        #expect(amberError { _ = try context.fetch(FetchRequest("Book", sortedBy: [SortKey("author.nope")])) }?.description
            == "Book.author.nope: expected a stored attribute to sort by, given author.nope: Author.nope: no such attribute or relationship; did you mean name?")
        // A relationship is no sort key, and the error says so rather than "no such attribute" (issue 43).
        #expect(amberError { _ = try context.fetch(FetchRequest("Book", sortedBy: [SortKey("author")])) }?.description
            == "Book.author: expected a stored attribute to sort by, given a relationship (sort by one of its destination's attributes: author.name, say)")
        #expect(amberError { _ = try context.fetch(FetchRequest("Author", sortedBy: [SortKey("books")])) }?.description
            == "Author.books: expected a stored attribute to sort by, given a to-many relationship")
    }
}
