import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Context.insert(_:setting:columns:): the column-wise batch insert.
@Suite struct ColumnInsertTests {
    /// A deterministic generator (SplitMix64), so a failure reproduces.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func everyColumnKindGivesTheValuesOfSingleSets() throws {
        let model = try everyTypeModel()
        let store = try Store.inMemory(model: model)
        let entity = try model.entity(named: "Sample")
        var random = Seeded(state: 42)
        let rows = 200
        let nulls = (0..<rows).map { _ in Int.random(in: 0..<5, using: &random) == 0 }
        let i16 = (0..<rows).map { _ in Int64.random(in: -32768...32767, using: &random) }
        let i64 = (0..<rows).map { _ in Int64.random(in: .min ... .max, using: &random) }
        let ratios = (0..<rows).map { _ in Double.random(in: -1e6...1e6, using: &random) }
        let weights = (0..<rows).map { _ in Float.random(in: -1e3...1e3, using: &random) }
        let names = (0..<rows).map { row in row % 3 == 0 ? "né \(row) 🍮" : "name \(row)" }
        let flags = (0..<rows).map { _ in Bool.random(using: &random) }
        let dates: [Date] = (0..<rows).map { _ in
            let seconds = Double(Int.random(in: 0..<2_000_000_000, using: &random))
            return Date(timeIntervalSince1970: seconds + 0.25)
        }
        let blobs: [Data] = (0..<rows).map { (row: Int) -> Data in
            var bytes: [UInt8] = []
            for index in 0..<(row % 9) { bytes.append(UInt8(truncatingIfNeeded: index * 37 + row)) }
            return Data(bytes)
        }
        let keys = (0..<rows).map { _ in UUID() }
        let prices: [Value] = (0..<rows).map { (row: Int) -> Value in .decimal(Decimal(string: "\(row).\(row % 100)") ?? 0) }
        let attributes = try ["i16", "i64", "ratio", "weight", "name", "flag", "when", "blob", "key", "price", "i32"].map {
            try entity.attribute(named: $0)
        }
        let columns: [ColumnValues] = [
            .integers(i16, nulls: nulls), .integers(i64), .doubles(ratios), .floats(weights, nulls: nulls), .strings(names),
            .booleans(flags, nulls: nulls), .dates(dates), .binary(blobs, nulls: nulls), .uuids(keys), .values(prices),
            // A float column into an Integer 32 attribute? No: floats are refused there, so an integer column.
            .integers(i16.map { $0 * 3 }),
        ]
        let byColumns = Context(store: store)
        let inserted = try byColumns.insert(entity, setting: attributes, columns: columns)
        #expect(inserted.count == rows)

        let oneByOne = Context(store: store)
        for row in 0..<rows {
            let object = try oneByOne.insert(entity)
            for (attribute, column) in zip(attributes, columns) {
                try object.setValue(column.value(at: row, className: nil), for: attribute)
            }
            for attribute in attributes {
                #expect(try object.value(for: attribute) == inserted[row].value(for: attribute), "\(attribute) row \(row)")
            }
        }
        #expect(try inserted[1].value(for: attributes[0]) == (nulls[1] ? .null : .int(i16[1])))
        #expect(try inserted[0].value(for: attributes[3]) == (nulls[0] ? .null : .float(weights[0])))
        try byColumns.save()
        #expect(try Context(store: store).count(FetchRequest("Sample")) == rows)
    }

    @Test func customColumnsCarryStructBytesWithTheirStride() throws {
        let registry = try colorRegistry()
        let model = try coverModel(registry, encode: .immediate)
        let store = try Store.inMemory(model: model)
        let entity = try model.entity(named: "Book")
        let title = try entity.attribute(named: "title"), cover = try entity.attribute(named: "cover")
        var bytes = Data()
        for row in 0..<3 {
            for channel in [Float(row), 0.5, 0.25, 1] { withUnsafeBytes(of: channel) { bytes.append(contentsOf: $0) } }
        }
        let context = Context(store: store)
        let books = try context.insert(entity, setting: [title, cover],
                                       columns: [.strings(["a", "b", "c"]), .custom(stride: 16, bytes: bytes, nulls: [false, true, false])])
        #expect(try books[0].value(for: cover) == color(0, 0.5, 0.25, 1, in: registry))
        #expect(try books[1].value(for: cover) == .null)
        #expect(try books[2].value(for: cover) == color(2, 0.5, 0.25, 1, in: registry))
        try context.save()
        let fetched = try Context(store: store).fetch(FetchRequest("Book", sortedBy: [SortKey("title")]))
        #expect(try fetched.map { try $0.value(for: cover) } == [color(0, 0.5, 0.25, 1, in: registry), .null,
                                                                 color(2, 0.5, 0.25, 1, in: registry)])
    }

    @Test func aRefusedValueNamesAttributeAndRowAndDropsTheBatch() throws {
        let model = try everyTypeModel()
        let store = try Store.inMemory(model: model)
        let entity = try model.entity(named: "Sample")
        let i16 = try entity.attribute(named: "i16"), name = try entity.attribute(named: "name")
        let context = Context(store: store)
        let kept = try context.insert(entity)
        let error = amberError {
            try context.insert(entity, setting: [name, i16], columns: [.strings(["a", "b", "c"]), .integers([1, 2, 40_000])])
        }
        guard case .invalidValue(let place, _, let given) = error else {
            Issue.record("expected invalidValue, got \(String(describing: error))")
            return
        }
        #expect(place == "Sample.i16 in row 2")
        #expect(given.contains("out of range"))
        // Nothing of the batch stays; what was there before does.
        #expect(context.insertedObjects.count == 1 && context.insertedObjects[0] === kept)

        // A double column into an Integer attribute is refused, as a single set refuses it.
        guard case .invalidValue(let place2, _, _) = amberError({
            try context.insert(entity, setting: [i16], columns: [.doubles([1.0])])
        }) else {
            Issue.record("a double into Integer 16 must be refused")
            return
        }
        #expect(place2 == "Sample.i16 in row 0")
        #expect(context.insertedObjects.count == 1)
    }

    @Test func columnsThatDoNotFitAreRefusedBeforeAnyInsert() throws {
        let model = try everyTypeModel()
        let store = try Store.inMemory(model: model)
        let entity = try model.entity(named: "Sample")
        let i16 = try entity.attribute(named: "i16"), name = try entity.attribute(named: "name")
        let context = Context(store: store)
        let cases: [([Attribute], [ColumnValues], String)] = [
            ([name, i16], [.strings(["a", "b"]), .integers([1])], "Sample.i16 (column 1)"),
            ([name], [.strings(["a"]), .integers([1])], "Sample columns"),
            ([], [], "Sample columns"),
            ([i16], [.integers([1, 2], nulls: [true])], "Sample.i16 (column 0)"),
            ([i16], [.custom("Color", stride: 3, bytes: Data(count: 4))], "Sample.i16 (column 0)"),
            ([i16], [.custom(stride: 2, bytes: Data(count: 4))], "Sample.i16 (column 0)"),  // no value class to default to
        ]
        for (attributes, columns, expected) in cases {
            guard case .invalidValue(let place, _, _) = amberError({
                try context.insert(entity, setting: attributes, columns: columns)
            }) else {
                Issue.record("expected a refusal naming \(expected)")
                continue
            }
            #expect(place == expected)
        }
        let other = try booksModel().entity(named: "Book").attribute(named: "title")
        #expect(amberError { try context.insert(entity, setting: [other], columns: [.strings(["x"])]) }
            == .foreignAttribute(attribute: "Book.title", object: "an object of Sample"))
        #expect(context.insertedObjects.isEmpty)
        #expect(try context.insert(entity, setting: [i16], columns: [.integers([])]).isEmpty)
    }

    @Test func aStructOfAnotherSizeIsRefusedNamingTheRow() throws {
        let registry = try colorRegistry()
        let model = try coverModel(registry)
        let store = try Store.inMemory(model: model)
        let entity = try model.entity(named: "Book")
        let title = try entity.attribute(named: "title"), cover = try entity.attribute(named: "cover")
        let context = Context(store: store)
        guard case .invalidValue(let place, _, _) = amberError({
            try context.insert(entity, setting: [title, cover],
                               columns: [.strings(["a", "b"]), .custom(stride: 8, bytes: Data(count: 16), nulls: [true, false])])
        }) else {
            Issue.record("an 8-byte Color must be refused")
            return
        }
        #expect(place == "Book.cover in row 1")
        #expect(context.insertedObjects.isEmpty)
    }

    @Test func anImmediateEncodeFailureNamesTheRow() throws {
        let behaviour = Behaviour()
        let registry = try colorRegistry(behaviour: behaviour)
        let model = try coverModel(registry, encode: .immediate)
        let store = try Store.inMemory(model: model)
        let entity = try model.entity(named: "Book")
        let cover = try entity.attribute(named: "cover")
        let context = Context(store: store)
        behaviour.mode = .throwing
        let error = amberError { try context.insert(entity, setting: [cover], columns: [.custom(stride: 16, bytes: Data(count: 32))]) }
        guard case .transformerFailed(let place, let transformer, _, _) = error else {
            Issue.record("expected transformerFailed, got \(String(describing: error))")
            return
        }
        #expect(place.hasSuffix(" in row 0") && place.hasPrefix("Book.cover"))
        #expect(transformer == "ColorToData")
        #expect(context.insertedObjects.isEmpty)
    }

    // MARK: Relationships

    static func authorsModel() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author").ordered()
            }
            EntityDescription("Book") {
                Attribute.string("title")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        })
    }

    /// Both batch inserts point each row at its destinations, the inverses
    /// following; a refused destination leaves nothing behind; one undo takes the batch and its links back.
    @Test func batchInsertsTakeRelationshipsAllOrNothing() throws {
        let model = try Self.authorsModel()
        let store = try Store(url: "memory:", model: model)
        let context = Context(store: store)
        context.undoStack = UndoStack()
        let authorEntity = try model.entity(named: "Author"), bookEntity = try model.entity(named: "Book")
        let name = try authorEntity.attribute(named: "name"), books = try authorEntity.relationship(named: "books")
        let title = try bookEntity.attribute(named: "title"), author = try bookEntity.relationship(named: "author")
        let authors = try context.insert(authorEntity, setting: [name], to: ["Le Guin", "Banks"])
        context.undoStack?.removeAll()

        let inserted = try context.insert(bookEntity, setting: [title], to: ["Lathe", "Excession", "Orphan", "Earthsea"],
                                          relating: [RelationshipColumn(author, objects: [authors[0], authors[1], nil, authors[0]])])
        #expect(try authors[0].objects(for: books) == [inserted[0], inserted[3]])
        #expect(try inserted[2].object(for: author) == nil && inserted[1].object(for: author) === authors[1])
        // Column-wise, a to-many takes each row's members in order; a member moves from its old owner.
        let both = try context.insert(authorEntity, setting: [name], columns: [.strings(["Both", "None"])],
                                      relating: [RelationshipColumn(books, members: [[inserted[3], inserted[1]], []])])
        #expect(try both[0].objects(for: books) == [inserted[3], inserted[1]])
        #expect(try authors[1].objects(for: books).isEmpty && authors[0].objects(for: books) == [inserted[0]])
        // Relationships alone give the rows.
        let bare = try context.insert(bookEntity, setting: [], to: [], relating: [RelationshipColumn(author, objects: [authors[1]])])
        #expect(bare.count == 1)
        #expect(try authors[1].objects(for: books) == bare)
        try context.save()

        let other = Context(store: store)
        let stranger = try other.insert(authorEntity)
        let counted = try context.count(FetchRequest("Book"))
        let refusals: [(RelationshipColumn, String)] = [
            (RelationshipColumn(author, objects: [authors[0], inserted[0]]), "Book.author in row 1"),
            (RelationshipColumn(author, objects: [stranger, nil]), "Book.author in row 0"),
            (RelationshipColumn(author, members: [[authors[0], authors[1]], []]), "Book.author in row 0"),
            (RelationshipColumn(author, objects: [authors[0]]), "Book.author"),
            (RelationshipColumn(books, objects: [authors[0], nil]), "Author.books"),
        ]
        for (column, place) in refusals {
            let error = amberError { try context.insert(bookEntity, setting: [title], to: ["A", "B"], relating: [column]) }
            #expect(error.map { "\($0)".hasPrefix(place) } == true, "\(String(describing: error))")
            #expect(!context.hasChanges)
            #expect(try context.count(FetchRequest("Book")) == counted)
        }
        let twice = amberError {
            try context.insert(authorEntity, setting: [name], columns: [.strings(["Twice"])],
                               relating: [RelationshipColumn(books, members: [[inserted[0], inserted[0]]])])
        }
        #expect(twice.map { "\($0)" } == "Author.books in row 0: expected each object once, given \(inserted[0].objectID) twice")
        #expect(!context.hasChanges)
        #expect(try authors[0].objects(for: books) == [inserted[0]])

        // One undo takes the batch and its links back.
        _ = try context.insert(bookEntity, setting: [title], to: ["Late"], relating: [RelationshipColumn(author, objects: [authors[0]])])
        #expect(try authors[0].objects(for: books).count == 2)
        #expect(try context.undo())
        #expect(!context.hasChanges)
        #expect(try authors[0].objects(for: books) == [inserted[0]])
    }
}
