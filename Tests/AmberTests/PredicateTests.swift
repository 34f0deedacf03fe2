import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// A store with a handful of books to query.
private func library() throws -> Context {
    let store = try Store.inMemory(model: try booksModel())
    let context = Context(store: store)
    let day = 86_400.0
    try insertBook(context, "Cien años de soledad", "García Márquez", price: .decimal(Decimal(string: "12.99")!), pages: .int(417),
                   published: .date(Date(timeIntervalSince1970: 0)))
    try insertBook(context, "L'Étranger", "Camus", price: .decimal(Decimal(string: "8.50")!), pages: .int(159),
                   published: .date(Date(timeIntervalSince1970: 10 * day)))
    try insertBook(context, "Dune", "Herbert", price: .decimal(Decimal(string: "9.99")!), pages: .int(412),
                   published: .date(Date(timeIntervalSince1970: 20 * day)))
    try insertBook(context, "dune messiah", "Herbert", price: .decimal(Decimal(string: "100.5")!), pages: .int(256))
    try insertBook(context, "Emma", "Austen", pages: .int(474))
    try insertBook(context, "x' OR 1=1 --", "Mallory")
    try context.save()
    return Context(store: store)
}

private func matching(_ context: Context, _ format: String, _ arguments: Value...) throws -> [String] {
    try titles(context.fetch(FetchRequest("Book", predicate: FetchPredicate(format, arguments: arguments), sortedBy: [.ascending("title")])))
}

@Suite struct PredicateTests {
    @Test func comparisonOperators() throws {
        let c = try library()
        #expect(try matching(c, "title == 'Dune'") == ["Dune"])
        #expect(try matching(c, "title = \"Dune\"") == ["Dune"])
        #expect(try matching(c, "pages > 412") == ["Cien años de soledad", "Emma"])
        #expect(try matching(c, "pages >= 412") == ["Cien años de soledad", "Dune", "Emma"])
        #expect(try matching(c, "pages < 200") == ["L'Étranger"])
        #expect(try matching(c, "pages <= 256") == ["L'Étranger", "dune messiah"])
        #expect(try matching(c, "pages =< 256 AND pages => 256") == ["dune messiah"])
        #expect(try matching(c, "author != 'Herbert' AND pages <> 474") == ["Cien años de soledad", "L'Étranger", "x' OR 1=1 --"])
        #expect(try matching(c, "412 < pages") == ["Cien años de soledad", "Emma"], "constant on the left")
    }

    @Test func decimalsCompareAsNumbersAndEqualExactly() throws {
        let c = try library()
        #expect(try matching(c, "price > 10") == ["Cien años de soledad", "dune messiah"], "100.5 > 10 numerically, not as text")
        #expect(try matching(c, "price == 12.99") == ["Cien años de soledad"])
        #expect(try matching(c, "price == %@", .decimal(Decimal(string: "8.5")!)) == ["L'Étranger"])
        #expect(try matching(c, "price BETWEEN {9, 13}") == ["Cien años de soledad", "Dune"])
    }

    @Test func stringOperatorsAndModifiers() throws {
        let c = try library()
        #expect(try matching(c, "title BEGINSWITH 'Dune'") == ["Dune"])
        #expect(try matching(c, "title BEGINSWITH[c] 'dune'") == ["Dune", "dune messiah"])
        #expect(try matching(c, "title ENDSWITH 'messiah'") == ["dune messiah"])
        #expect(try matching(c, "title ENDSWITH[c] 'DAD'") == ["Cien años de soledad"])
        #expect(try matching(c, "title CONTAINS 'años'") == ["Cien años de soledad"])
        #expect(try matching(c, "title CONTAINS 'anos'") == [])
        #expect(try matching(c, "title CONTAINS[d] 'anos'") == ["Cien años de soledad"])
        #expect(try matching(c, "title CONTAINS[c] 'ÉTRANGER'") == ["L'Étranger"])
        #expect(try matching(c, "title CONTAINS[c] 'etranger'") == [])
        #expect(try matching(c, "title CONTAINS[cd] 'etranger'") == ["L'Étranger"])
        #expect(try matching(c, "title ==[c] 'DUNE'") == ["Dune"])
        #expect(try matching(c, "author ==[cd] 'garcia marquez'") == ["Cien años de soledad"])
        #expect(try matching(c, "title LIKE 'D*e'") == ["Dune"])
        #expect(try matching(c, "title LIKE[c] 'd?ne*'") == ["Dune", "dune messiah"])
        #expect(try matching(c, "title LIKE 'Emm?'") == ["Emma"])
        #expect(try matching(c, "title MATCHES '[A-Z][a-z]+'") == ["Dune", "Emma"])
        #expect(try matching(c, "title MATCHES[c] 'DUNE.*'") == ["Dune", "dune messiah"])
        #expect(try matching(c, "title BEGINSWITH ''").count == 6, "every string begins with the empty string")
        #expect(try matching(c, "title ENDSWITH ''").count == 6)
    }

    @Test func inBetweenAndLogic() throws {
        let c = try library()
        #expect(try matching(c, "author IN {'Austen', 'Camus'}") == ["Emma", "L'Étranger"])
        #expect(try matching(c, "author IN %@", ["Austen", "Herbert"]) == ["Dune", "Emma", "dune messiah"])
        #expect(try matching(c, "author IN[c] {'austen'}") == ["Emma"])
        #expect(try matching(c, "author IN {}") == [])
        #expect(try matching(c, "pages BETWEEN {200, 415}") == ["Dune", "dune messiah"])
        #expect(try matching(c, "pages BETWEEN %@", [.int(400), .int(420)]) == ["Cien años de soledad", "Dune"])
        #expect(try matching(c, "author == 'Herbert' OR author == 'Camus'") == ["Dune", "L'Étranger", "dune messiah"])
        #expect(try matching(c, "author == 'Herbert' && pages > 300") == ["Dune"])
        #expect(try matching(c, "author == 'Herbert' || pages > 470") == ["Dune", "Emma", "dune messiah"])
        #expect(try matching(c, "NOT author == 'Herbert' AND NOT (pages > 300 OR pages == nil)") == ["L'Étranger"])
        #expect(try matching(c, "!(pages < 1000)") == ["x' OR 1=1 --"], "NOT of a comparison with nil is true")
        #expect(try matching(c, "TRUEPREDICATE").count == 6)
        #expect(try matching(c, "FALSEPREDICATE") == [])
    }

    @Test func nilComparisons() throws {
        let c = try library()
        #expect(try matching(c, "price == nil") == ["Emma", "x' OR 1=1 --"])
        #expect(try matching(c, "price = NULL") == ["Emma", "x' OR 1=1 --"])
        #expect(try matching(c, "nil == price") == ["Emma", "x' OR 1=1 --"])
        #expect(try matching(c, "published != nil") == ["Cien años de soledad", "Dune", "L'Étranger"])
        #expect(try matching(c, "price < nil") == [])
        #expect(try matching(c, "author != 'Herbert' AND price != 8.5") == ["Cien años de soledad", "Emma", "x' OR 1=1 --"],
                "!= keeps objects whose value is nil")
    }

    @Test func substitutionOfValuesAndKeys() throws {
        let c = try library()
        #expect(try matching(c, "%K == %@", "author", "Camus") == ["L'Étranger"])
        #expect(try matching(c, "published > %@", .date(Date(timeIntervalSince1970: 5 * 86_400))) == ["Dune", "L'Étranger"])
        #expect(try matching(c, "pages > %d AND title CONTAINS %@", 400, "u") == ["Dune"])
        let error = amberError { _ = try matching(c, "title == %@") }
        #expect(error == .invalidPredicate(position: 10, message: "%@ has no argument (0 given)"))
        #expect(amberError { _ = try matching(c, "title == %@", "a", "b") }
            == .invalidPredicate(position: 12, message: "2 arguments given, 1 used"))
        #expect(amberError { _ = try matching(c, "%K == 1", 5) } != nil)
    }

    @Test func injectionAttemptsAreJustValues() throws {
        let c = try library()
        #expect(try matching(c, "title == \"x' OR 1=1 --\"") == ["x' OR 1=1 --"])
        #expect(try matching(c, "title == 'x\\' OR 1=1 --'") == ["x' OR 1=1 --"])
        #expect(try matching(c, "title == %@", "x' OR 1=1 --") == ["x' OR 1=1 --"])
        #expect(try matching(c, "title == %@", "' OR '1'='1") == [])
        #expect(try matching(c, "title == %@", "Dune'; DROP TABLE Book; --") == [])
        #expect(try matching(c, "title CONTAINS %@", "%") == [])
        // %K cannot smuggle SQL in as a column name either.
        #expect(amberError { _ = try matching(c, "%K == 1", "title\" OR 1=1 --") } != nil)
        #expect(try c.count(FetchRequest("Book")) == 6)
    }

    @Test func syntaxErrorsGiveThePosition() throws {
        let c = try library()
        func error(_ format: String) -> AmberError? { amberError { _ = try matching(c, format) } }
        #expect(error("title == ") == .invalidPredicate(position: 10, message: "expected a value or attribute name, found the end"))
        #expect(error("title ~ 'x'") == .invalidPredicate(position: 7, message: "expected a comparison operator (==, <, CONTAINS, IN, …), found \"~ 'x'\""))
        #expect(error("(title == 'x'") == .invalidPredicate(position: 14, message: "expected ) to close the ( at this nesting, found the end"))
        #expect(error("title == 'abc") == .invalidPredicate(position: 10, message: "unterminated string (missing closing ')"))
        #expect(error("title CONTAINS[x] 'a'") == .invalidPredicate(position: 16, message: "unknown modifier \"x\" (use c, d or n)"))
        #expect(error("titel == 'x'") == .unknownKeyPath(position: 1, message: "Book.titel: no such attribute; did you mean title?"))
        #expect(error("pages == 'many'") == .invalidPredicate(position: 10, message: "cannot compare a integer16 attribute with String \"many\""))
        #expect(error("pages CONTAINS 'x'") == .invalidPredicate(position: 1, message: "CONTAINS needs a string attribute; Book.pages is integer16"))
        #expect(error("title MATCHES '('") != nil)
        #expect(error("title == 'a' AND") != nil)
        #expect(error("title == 'a' extra") != nil)
    }

    @Test func sortLimitOffsetAndCount() throws {
        let c = try library()
        let byPages = try titles(c.fetch("Book", where: "pages != nil", sortedBy: [.descending("pages")]))
        #expect(byPages == ["Emma", "Cien años de soledad", "Dune", "dune messiah", "L'Étranger"])
        let paged = try titles(c.fetch("Book", where: "pages != nil", sortedBy: [.descending("pages")], limit: 2, offset: 1))
        #expect(paged == ["Cien años de soledad", "Dune"])
        let byPrice = try titles(c.fetch("Book", where: "price != nil", sortedBy: [.ascending("price")]))
        #expect(byPrice == ["L'Étranger", "Dune", "Cien años de soledad", "dune messiah"])
        let caseless = try titles(c.fetch(FetchRequest("Book", predicate: FetchPredicate("title BEGINSWITH[c] 'd'"),
                                                      sortedBy: [SortKey("title", ascending: false, caseInsensitive: true)])))
        #expect(caseless == ["dune messiah", "Dune"])
        #expect(try c.count(FetchRequest("Book", where: "author == 'Herbert'")) == 2)
        #expect(try c.count(FetchRequest("Book", limit: 4, offset: 3)) == 3)
        #expect(amberError { _ = try c.fetch("Book", sortedBy: [.ascending("pagez")]) }?.description
            == "Book.pagez: no such attribute; did you mean pages?")
    }
}
