import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Runs `sql` on the file at `path` with plain SQLite: how the tests change a copy behind the store's back.
private func execute(_ path: String, _ sql: String) throws {
    var db: OpaquePointer?
    defer { sqlite3_close(db) }
    guard sqlite3_open(path, &db) == SQLITE_OK, sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
        throw AmberError.sqlite(code: 1, message: String(cString: sqlite3_errmsg(db)))
    }
}

/// The problems of a save that failed, or none.
private func problems(_ body: () throws -> Void) -> [SaveProblem] {
    do {
        try body()
        return []
    } catch AmberError.saveFailed(let problems) {
        return problems
    } catch {
        return [SaveProblem(objectID: nil, place: "", rule: .store, message: "\(error)")]
    }
}

/// 16 bytes of `uuid`, as Core Data keeps one.
private func bytes(_ uuid: UUID) -> Value { .binary(withUnsafeBytes(of: uuid.uuid) { Data($0) }) }

@Suite("Core Data stores: writing")
struct CoreDataWriteTests {
    @Test("a save keeps Core Data's bookkeeping: Z_MAX, Z_ENT, Z_OPT, to-one keys, values as Core Data stores them")
    func savesKeepTheBookkeeping() throws {
        let (fixture, store) = try sampleModel()
        defer { fixture.remove() }
        let metadata = try fixture.rows("SELECT * FROM Z_METADATA UNION ALL SELECT Z_CONTENT, NULL, NULL FROM Z_MODELCACHE")
        let context = Context(store: store)
        let (id, updated, marked) = (UUID(), Date(timeIntervalSinceReferenceDate: 700_000_000.25), Date(timeIntervalSinceReferenceDate: -86_400.5))
        let person = try context.insert("Person")
        for (key, value) in [("firstName", Value.string("Ada")), ("lastName", .string("Lovelace")), ("id", .uuid(id)), ("updatedAt", .date(updated))] {
            try person.setValue(value, forKey: key)
        }
        let car = try context.insert("ExpensiveSportCar")
        for (key, value) in [("maker", Value.string("Amber")), ("model", .string("One")), ("numberPlate", .string("AMB-001")),
                             ("isLimitedEdition", .bool(true)), ("markedForDeletionAsOf", .date(marked))] {
            try car.setValue(value, forKey: key)
        }
        try car.setObject(person, forKey: "owner")
        let changed = try #require(try context.fetch(FetchRequest("Person", sortedBy: [SortKey("lastName"), SortKey("firstName")], limit: 1)).first)
        let changedKey = try #require(changed.objectID.primaryKey)
        try changed.setValue(.string("Changed"), forKey: "firstName")
        let doomed = try #require(try context.fetch(FetchRequest("Car", predicate: FetchPredicate("owner == nil"), limit: 1)).first)
        let doomedKey = try #require(doomed.objectID.primaryKey)
        try context.delete(doomed)
        try context.save()

        // New keys follow each root's Z_MAX, which rises with them; a sub-entity's row stays at 0.
        #expect(car.objectID.primaryKey == 126 && person.objectID.primaryKey == 21)
        #expect(try fixture.rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
            == [[.string("Car"), .int(126)], [.string("SportCar"), .int(0)], [.string("ExpensiveSportCar"), .int(0)], [.string("Person"), .int(21)]])
        #expect(try fixture.rows("SELECT Z_ENT, Z_OPT, ZOWNER, ZISLIMITEDEDITION, ZMARKEDFORDELETIONASOF, ZMAKER, ZMODEL, ZNUMBERPLATE, ZCOLOR FROM ZCAR WHERE Z_PK = 126")
            == [[.int(3), .int(1), .int(21), .int(1), .double(-86_400.5), .string("Amber"), .string("One"), .string("AMB-001"), .null]])
        #expect(try fixture.rows("SELECT Z_ENT, Z_OPT, ZFIRSTNAME, ZLASTNAME, ZID, ZUPDATEDAT FROM ZPERSON WHERE Z_PK = 21")
            == [[.int(4), .int(1), .string("Ada"), .string("Lovelace"), bytes(id), .double(700_000_000.25)]])
        #expect(try fixture.rows("SELECT Z_OPT, ZFIRSTNAME FROM ZPERSON WHERE Z_PK = \(changedKey)") == [[.int(2), .string("Changed")]])
        #expect(try fixture.rows("SELECT count(*) FROM ZCAR WHERE Z_PK = \(doomedKey)") == [[.int(0)]])
        // Core Data's own metadata and model cache are left as they were.
        #expect(try fixture.rows("SELECT * FROM Z_METADATA UNION ALL SELECT Z_CONTENT, NULL, NULL FROM Z_MODELCACHE") == metadata)

        // Read back by another store on the file, as another program would.
        let again = Context(store: try Store(path: fixture.path, model: sampleModelModel()))
        let read = try #require(try again.fetch(FetchRequest("ExpensiveSportCar", predicate: FetchPredicate("numberPlate == 'AMB-001'"))).first)
        #expect(try read.value(forKey: "markedForDeletionAsOf") == .date(marked) && read.value(forKey: "isLimitedEdition") == .bool(true))
        let owner = try #require(try read.object(forKey: "owner"))
        #expect(try owner.value(forKey: "id") == .uuid(id) && owner.value(forKey: "updatedAt") == .date(updated))
        #expect(try owner.objects(forKey: "cars").map(\.objectID) == [read.objectID])

        // A key once given is not given again, even after its row is deleted.
        try again.delete(read)
        try again.save()
        let next = try again.insert("Car")
        try next.setValue(.string("AMB-002"), forKey: "numberPlate")
        try again.save()
        #expect(next.objectID.primaryKey == 127)
        #expect(try fixture.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Car'") == [[.int(127)]])
    }

    @Test("a row changed by another program since it was read is a conflict (Z_OPT), and Core Data's unique indexes name the constraint")
    func conflictsAndUniqueness() throws {
        let (fixture, store) = try sampleModel()
        defer { fixture.remove() }
        let request = FetchRequest("Person", sortedBy: [SortKey("lastName"), SortKey("firstName")], limit: 1)
        let here = Context(store: store), there = Context(store: try Store(path: fixture.path, model: sampleModelModel()))
        let mine = try #require(try here.fetch(request).first), theirs = try #require(try there.fetch(request).first)
        try theirs.setValue(.string("Theirs"), forKey: "firstName")
        try there.save()
        try mine.setValue(.string("Mine"), forKey: "firstName")
        let found = problems { try here.save() }
        #expect(found.map(\.rule) == [.conflict], "\(found)")
        #expect(try fixture.rows("SELECT Z_OPT, ZFIRSTNAME FROM ZPERSON WHERE Z_PK = \(mine.objectID.primaryKey ?? -1)") == [[.int(2), .string("Theirs")]])
        here.rollback()

        // Person(firstName, lastName) and Car(numberPlate) are unique indexes in the file.
        let plate = try #require(try here.fetch(FetchRequest("Car", limit: 1)).first?.value(forKey: "numberPlate"))
        let twin = try here.insert("Person")
        for key in ["firstName", "lastName"] { try twin.setValue(try theirs.value(forKey: key), forKey: key) }
        try twin.setValue(.uuid(UUID()), forKey: "id")
        try twin.setValue(.date(Date()), forKey: "updatedAt")
        let car = try here.insert("SportCar")
        try car.setValue(plate, forKey: "numberPlate")
        let refused = problems { try here.save() }
        #expect(refused.map(\.rule) == [.uniqueness, .uniqueness], "\(refused)")
        #expect(refused.contains { $0.message.contains("firstName") && $0.message.contains("lastName") }, "\(refused)")
        #expect(refused.contains { $0.message.contains("numberPlate") }, "\(refused)")
        // Nothing was written: not the rows, not Z_MAX.
        #expect(try fixture.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT IN (1, 4) ORDER BY Z_ENT") == [[.int(125)], [.int(20)]])
        #expect(try fixture.rows("SELECT count(*) FROM ZPERSON") == [[.int(20)]])
    }

    @Test("Core Data's derived-attribute triggers run and report, entity columns name the destination, decimals are exact or refused")
    func derivedValuesEntityColumnsAndDecimals() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel2_V1.sqlite")
        defer { fixture.remove() }
        // The store keeps Core Data's persistent history, which Amber does not write: saving is refused, by name.
        do {
            let context = Context(store: try Store(openingExisting: fixture.path, registry: CoreDataStoreTests.sampleModel2Registry()))
            let book = try #require(try context.fetch(FetchRequest("Book", limit: 1)).first)
            try book.setValue(.string("Changed"), forKey: "title")
            #expect {
                try context.save()
            } throws: { error in
                guard case AmberError.unsupported(_, let capability) = error else { return false }
                return capability.contains("persistent history")
            }
        }
        // Without its history tables, the same store saves.
        try execute(fixture.path, "DROP TABLE ACHANGE; DROP TABLE ATRANSACTION; DROP TABLE ATRANSACTIONSTRING; DELETE FROM Z_PRIMARYKEY WHERE Z_ENT >= 16000")
        let context = Context(store: try Store(openingExisting: fixture.path, registry: CoreDataStoreTests.sampleModel2Registry()))
        let novel = try #require(try context.fetch(FetchRequest("GraphicNovel", limit: 1)).first)
        let book = try #require(try context.fetch(FetchRequest("Book")).first { $0.entity.name == "Book" })
        let counts = try [novel, book].map { try $0.value(forKey: "pagesCount") }
        var pages: [ManagedObject] = []
        for owner in [novel, book] {
            let page = try context.insert("Page")
            try page.setValue(.int(1000), forKey: "number")
            try page.setValue(.bool(false), forKey: "isBookmarked")
            try page.setValue(.binary(Data("a page".utf8)), forKey: "content")
            try page.setObject(owner, forKey: "book")
            pages.append(page)
        }
        try book.setValue(.decimal(ScaledDecimal("12.5") ?? ScaledDecimal(0)), forKey: "price")
        try context.save()
        // Core Data's trigger counted the pages; the save told the context.
        for (owner, count) in zip([novel, book], counts) {
            guard case .int(let before) = count else { continue }
            #expect(try owner.value(forKey: "pagesCount") == .int(before + 1))
            #expect(try fixture.rows("SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = \(owner.objectID.primaryKey ?? -1)") == [[.int(before + 1)]])
        }
        // Z1_BOOK holds the entity of the book each page points at.
        let numbers = try fixture.rows("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME IN ('GraphicNovel', 'Book') ORDER BY Z_NAME DESC")
        #expect(try fixture.rows("SELECT Z1_BOOK FROM ZPAGE WHERE Z_PK IN (\(pages.compactMap { $0.objectID.primaryKey.map(String.init) }.joined(separator: ","))) ORDER BY Z_PK")
            == numbers)
        #expect(try fixture.rows("SELECT ZPRICE, typeof(ZPRICE) FROM ZBOOK WHERE Z_PK = \(book.objectID.primaryKey ?? -1)") == [[.double(12.5), .string("real")]])
        // Moving a page to another book moves both counts and the entity column.
        try pages[0].setObject(book, forKey: "book")
        try context.save()
        #expect(try fixture.rows("SELECT Z1_BOOK FROM ZPAGE WHERE Z_PK = \(pages[0].objectID.primaryKey ?? -1)") == [numbers[1]])
        if case .int(let before) = counts[1] { #expect(try book.value(forKey: "pagesCount") == .int(before + 2)) }

        // A decimal the store's SQLite number cannot hold exactly is refused, naming the attribute and what it would read back as.
        for (text, kept) in [("1.23456789012345678", "1.23456789012346"), ("9.90", "9.9"), ("12345678901234567890", "1.23456789012346e+19")] {
            try book.setValue(.decimal(ScaledDecimal(text) ?? ScaledDecimal(0)), forKey: "price")
            let refused = problems { try context.save() }
            #expect(refused.count == 1 && refused[0].message.contains("Book.price") && refused[0].message.contains("would read back as \(kept)"),
                    "\(refused)")
            context.rollback()
        }
        // A whole number of up to 19 digits is an SQLite integer, kept exactly.
        try book.setValue(.decimal(ScaledDecimal("1234567890123456789") ?? ScaledDecimal(0)), forKey: "price")
        try context.save()
        #expect(try fixture.rows("SELECT ZPRICE FROM ZBOOK WHERE Z_PK = \(book.objectID.primaryKey ?? -1)") == [[.int(1_234_567_890_123_456_789)]])
        try book.setValue(.decimal(ScaledDecimal("12.5") ?? ScaledDecimal(0)), forKey: "price")
        try context.save()
        let reopened = Context(store: try Store(openingExisting: fixture.path, registry: CoreDataStoreTests.sampleModel2Registry()))
        let price = try reopened.fetch(FetchRequest("Book")).first { $0.objectID.primaryKey == book.objectID.primaryKey }?.value(forKey: "price")
        #expect(price == .decimal(ScaledDecimal("12.5") ?? ScaledDecimal(0)))
    }

    /// Posts with archived info and tags (many-to-many), playlists with ordered songs: Core Data's layout, made with SQL.
    private static let libraryModel = """
        <entity name="Post"><attribute name="title" optional="YES" attributeType="String"/>
          <attribute name="info" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromDataTransformer"/>
          <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="posts" inverseEntity="Tag"/></entity>
        <entity name="Tag"><attribute name="name" optional="YES" attributeType="String"/>
          <relationship name="posts" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Post" inverseName="tags" inverseEntity="Post"/></entity>
        <entity name="Playlist"><attribute name="name" optional="YES" attributeType="String"/>
          <relationship name="songs" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" destinationEntity="Song" inverseName="playlist" inverseEntity="Song"/></entity>
        <entity name="Song"><attribute name="title" optional="YES" attributeType="String"/>
          <relationship name="playlist" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Playlist" inverseName="songs" inverseEntity="Playlist"/></entity>
        """

    private static func libraryStore(at path: String) throws {
        try execute(path, """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Post', 0, 2), (2, 'Tag', 0, 3), (3, 'Playlist', 0, 1), (4, 'Song', 0, 3);
            INSERT INTO Z_METADATA VALUES (1, '\(UUID().uuidString)', NULL);
            CREATE TABLE ZPOST (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR, ZINFO BLOB);
            CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE Z_1TAGS (Z_1POSTS INTEGER, Z_2TAGS INTEGER, PRIMARY KEY (Z_1POSTS, Z_2TAGS));
            CREATE TABLE ZPLAYLIST (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE ZSONG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPLAYLIST INTEGER, Z_FOK_PLAYLIST INTEGER, ZTITLE VARCHAR);
            INSERT INTO ZPOST VALUES (1, 1, 1, 'first', NULL), (2, 1, 1, 'second', NULL);
            INSERT INTO ZTAG VALUES (1, 2, 1, 'a'), (2, 2, 1, 'b'), (3, 2, 1, 'c');
            INSERT INTO Z_1TAGS VALUES (1, 1), (1, 2), (2, 2);
            INSERT INTO ZPLAYLIST VALUES (1, 3, 1, 'road trip');
            INSERT INTO ZSONG VALUES (1, 4, 1, 1, 1024, 'one'), (2, 4, 1, 1, 2048, 'two'), (3, 4, 1, 1, 3072, 'three');
            """)
    }

    @Test("join rows, order columns and archived values are written as Core Data keeps them")
    func joinRowsOrderAndArchives() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("library.sqlite").path
        try Self.libraryStore(at: path)
        let model = try Model(importXML(Self.libraryModel).model, registry: Registry())
        let context = Context(store: try Store(path: path, model: model))
        let posts = try context.fetch(FetchRequest("Post", sortedBy: [SortKey("title")]))
        let tags = try context.fetch(FetchRequest("Tag", sortedBy: [SortKey("name")]))
        let info: Value = .dictionary(["name": .string("Ada"), "n": .int(-42), "x": .double(2.5), "f": .float(1.5), "ok": .bool(true),
                                       "when": .date(Date(timeIntervalSinceReferenceDate: 12.5)), "id": .uuid(UUID()), "raw": .binary(Data([0, 1, 2])),
                                       "list": .array([.int(1), .string("zwei ✓"), .null])])
        let post = try context.insert("Post")
        try post.setValue(.string("third"), forKey: "title")
        try post.setValue(info, forKey: "info")
        try post.setObjects([tags[0], tags[2]], forKey: "tags")
        try posts[0].remove(tags[1], from: try posts[0].entity.relationship(named: "tags"))
        let playlist = try #require(try context.fetch(FetchRequest("Playlist")).first)
        let songs = try playlist.objects(forKey: "songs")
        let song = try context.insert("Song")
        try song.setValue(.string("zero"), forKey: "title")
        try playlist.setObjects([song, songs[2], songs[0], songs[1]], forKey: "songs")
        try context.save()

        let file = CoreDataFixture(existing: path)
        let key = try #require(post.objectID.primaryKey)
        #expect(key == 3)
        #expect(try file.rows("SELECT Z_1POSTS, Z_2TAGS FROM Z_1TAGS ORDER BY 1, 2") == [[.int(1), .int(1)], [.int(2), .int(2)], [.int(3), .int(1)], [.int(3), .int(3)]])
        #expect(try file.rows("SELECT Z_PK FROM ZSONG WHERE ZPLAYLIST = 1 ORDER BY Z_FOK_PLAYLIST") == [4, 3, 1, 2].map { [Value.int($0)] })
        #expect(try file.rows("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
            == [[.string("Post"), .int(3)], [.string("Tag"), .int(3)], [.string("Playlist"), .int(1)], [.string("Song"), .int(4)]])
        // The archive is Core Data's (NSKeyedArchiver, bplist00), and reads back as the value that was saved.
        guard case .binary(let archived)? = try file.rows("SELECT ZINFO FROM ZPOST WHERE Z_PK = 3").first?.first else {
            Issue.record("no archive")
            return
        }
        #expect(archived.starts(with: Data("bplist00".utf8)))
        #expect(try KeyedArchive(archived).rootValue() == info)
        let reopened = Context(store: try Store(path: path, model: model))
        #expect(try reopened.fetch(FetchRequest("Post", predicate: FetchPredicate("title == 'third'"))).first?.value(forKey: "info") == info)

        // Deleting a tag removes its join rows; deleting the playlist cascades to its songs.
        try context.delete(tags[0])
        try context.delete(playlist)
        try context.save()
        #expect(try file.rows("SELECT Z_1POSTS, Z_2TAGS FROM Z_1TAGS ORDER BY 1, 2") == [[.int(2), .int(2)], [.int(3), .int(3)]])
        #expect(try file.rows("SELECT count(*) FROM ZSONG") == [[.int(0)]])
    }
}

/// Random inserts, changes, moves and deletes on a copy of SampleModel, each
/// round saved and then compared, row by row, with a plain model of what
/// the rows must hold, read with plain SQLite: values, entity numbers, owner
/// keys (the delete rule nullifies), `Z_MAX` and `Z_OPT`.
@Suite("Core Data stores: seeded writes")
struct CoreDataSeededWriteTests {
    struct Car: Equatable { var entity: String, maker: String, plate: String, owner: Int64? }

    @Test("seeded rounds of changes leave exactly the rows a plain model predicts", arguments: [UInt64(3), 11, 2026])
    func roundsMatchAPlainModel(_ seed: UInt64) throws {
        let (fixture, store) = try sampleModel()
        defer { fixture.remove() }
        let numbers = Dictionary(uniqueKeysWithValues: try fixture.rows("SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY").compactMap { row -> (String, Int64)? in
            guard case .string(let name) = row[0], case .int(let number) = row[1] else { return nil }
            return (name, number)
        })
        let context = Context(store: store)
        var people: [Int64: String] = [:], cars: [Int64: Car] = [:]
        var objects: [Int64: ManagedObject] = [:]
        for person in try context.fetch(FetchRequest("Person")) {
            guard let key = person.objectID.primaryKey, case .string(let first) = try person.value(forKey: "firstName") else { continue }
            people[key] = first
            objects[key] = person
        }
        var carObjects: [Int64: ManagedObject] = [:]
        for car in try context.fetch(FetchRequest("Car")) {
            guard let key = car.objectID.primaryKey, case .string(let plate) = try car.value(forKey: "numberPlate") else { continue }
            let maker = if case .string(let text) = try car.value(forKey: "maker") { text } else { "" }
            cars[key] = Car(entity: car.entity.name, maker: maker, plate: plate, owner: try car.object(forKey: "owner")?.objectID.primaryKey)
            carObjects[key] = car
        }
        var random = SplitMix64(seed: seed), serial = 0
        // The largest key each table has given: new rows take the next ones, and Z_MAX follows.
        var given = (car: Int64(125), person: Int64(20))
        for round in 0..<8 {
            var newPeople: [(ManagedObject, String)] = [], newCars: [(ManagedObject, Car)] = []
            // A row is written when its values differ at the save from what it held before (a change undone in the round writes nothing).
            let carsBefore = cars
            let versionsBefore = Dictionary(uniqueKeysWithValues: try fixture.rows("SELECT Z_PK, Z_OPT FROM ZCAR").compactMap { row -> (Int64, Int64)? in
                guard case .int(let key) = row[0], case .int(let version) = row[1] else { return nil }
                return (key, version)
            })
            for _ in 0..<12 {
                serial += 1
                switch Int.random(in: 0..<6, using: &random) {
                case 0:
                    let person = try context.insert("Person")
                    let first = "Seed\(seed)-\(serial)"
                    try person.setValue(.string(first), forKey: "firstName")
                    try person.setValue(.string("Round \(round)"), forKey: "lastName")
                    try person.setValue(.uuid(UUID()), forKey: "id")
                    try person.setValue(.date(Date(timeIntervalSinceReferenceDate: Double(serial))), forKey: "updatedAt")
                    newPeople.append((person, first))
                case 1:
                    let entity = ["Car", "SportCar", "ExpensiveSportCar"][Int.random(in: 0..<3, using: &random)]
                    let car = try context.insert(entity)
                    let value = Car(entity: entity, maker: "Maker \(serial % 5)", plate: "SEED-\(seed)-\(serial)", owner: nil)
                    try car.setValue(.string(value.maker), forKey: "maker")
                    try car.setValue(.string(value.plate), forKey: "numberPlate")
                    newCars.append((car, value))
                case 2:
                    guard let key = cars.keys.sorted().randomElement(using: &random), let car = carObjects[key] else { continue }
                    let maker = "Changed \(serial)"
                    try car.setValue(.string(maker), forKey: "maker")
                    cars[key]?.maker = maker
                case 3:
                    guard let key = cars.keys.sorted().randomElement(using: &random), let car = carObjects[key],
                          let owner = people.keys.sorted().randomElement(using: &random), let person = objects[owner] else { continue }
                    try car.setObject(person, forKey: "owner")
                    cars[key]?.owner = owner
                case 4:
                    guard let key = cars.keys.sorted().randomElement(using: &random), let car = carObjects[key] else { continue }
                    try context.delete(car)
                    cars[key] = nil
                    carObjects[key] = nil
                default:
                    guard let key = people.keys.sorted().randomElement(using: &random), let person = objects[key] else { continue }
                    try context.delete(person)
                    people[key] = nil
                    objects[key] = nil
                    for (carKey, car) in cars where car.owner == key {
                        cars[carKey]?.owner = nil  // Person.cars nullifies
                    }
                }
            }
            try context.save()
            for (person, first) in newPeople {
                let key = try #require(person.objectID.primaryKey)
                #expect(key == given.person + 1, "round \(round)")
                given.person = key
                people[key] = first
                objects[key] = person
            }
            for (car, value) in newCars {
                let key = try #require(car.objectID.primaryKey)
                #expect(key == given.car + 1, "round \(round)")
                given.car = key
                cars[key] = value
                carObjects[key] = car
            }
            // Every row as the plain model says, read with plain SQLite.
            let storedPeople = try fixture.rows("SELECT Z_PK, Z_ENT, ZFIRSTNAME FROM ZPERSON ORDER BY Z_PK")
            #expect(storedPeople == people.keys.sorted().map { [.int($0), .int(numbers["Person"] ?? -1), .string(people[$0] ?? "")] }, "round \(round)")
            let storedCars = try fixture.rows("SELECT Z_PK, Z_ENT, ZMAKER, ZNUMBERPLATE, ZOWNER, Z_OPT FROM ZCAR ORDER BY Z_PK")
            #expect(storedCars.map { Array($0.prefix(5)) } == cars.keys.sorted().map { key -> [Value] in
                let car = cars[key] ?? Car(entity: "", maker: "", plate: "", owner: nil)
                return [.int(key), .int(numbers[car.entity] ?? -1), .string(car.maker), .string(car.plate), car.owner.map(Value.int) ?? .null]
            }, "round \(round)")
            // A changed row's version rose by one; an untouched one kept its own; a new row starts at 1.
            for row in storedCars {
                guard case .int(let key) = row[0], case .int(let version) = row[5] else { continue }
                let expected = versionsBefore[key].map { carsBefore[key] != cars[key] ? $0 + 1 : $0 } ?? 1
                #expect(version == expected, "round \(round), car \(key)")
            }
            // Z_MAX is the largest key ever given, deleted rows' included.
            #expect(try fixture.rows("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME IN ('Car', 'Person') ORDER BY Z_NAME")
                == [[.int(given.car)], [.int(given.person)]], "round \(round)")
        }
    }
}

/// Binary attributes with "Allows External Storage", in the layout people who
/// read Apple's stores report (no fixture shows one): a marker byte, then
/// the bytes (1) or a file name in `.<store>_SUPPORT/_EXTERNAL_DATA/` (2).
@Suite("Core Data stores: external storage")
struct CoreDataExternalStorageTests {
    @Test("external-storage values read from the row or the file, anything else is refused naming the attribute, and writes keep the marker")
    func externalStorage() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("Photos.sqlite").path
        let external = folder.appendingPathComponent(".Photos_SUPPORT/_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: external, withIntermediateDirectories: true)
        let large = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try large.write(to: external.appendingPathComponent("4C2B-FILE"))
        try execute(path, """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Photo', 0, 3);
            INSERT INTO Z_METADATA VALUES (1, '\(UUID().uuidString)', NULL);
            CREATE TABLE ZPHOTO (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZDATA BLOB);
            INSERT INTO ZPHOTO VALUES (1, 1, 1, 'inline', x'01CAFE'), (2, 1, 1, 'file', x'02' || CAST('4C2B-FILE' AS BLOB)), (3, 1, 1, 'none', NULL);
            """)
        let imported = try importXML("""
            <entity name="Photo"><attribute name="name" optional="YES" attributeType="String"/>
              <attribute name="data" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/></entity>
            """)
        let model = try Model(imported.model)
        let context = Context(store: try Store(path: path, model: model))
        let photos = try context.fetch(FetchRequest("Photo", sortedBy: [SortKey("name")]))
        #expect(try photos.map { try $0.value(forKey: "data") } == [.binary(large), .binary(Data([0xCA, 0xFE])), .null])

        // Written in the row, after the marker.
        let photo = try context.insert("Photo")
        try photo.setValue(.string("new"), forKey: "name")
        try photo.setValue(.binary(Data([7, 8, 9])), forKey: "data")
        try context.save()
        #expect(try CoreDataFixture(existing: path).rows("SELECT hex(ZDATA) FROM ZPHOTO WHERE Z_PK = 4") == [[.string("01070809")]])
        #expect(try Context(store: try Store(path: path, model: model)).fetch(FetchRequest("Photo", predicate: FetchPredicate("name == 'new'")))
            .first?.value(forKey: "data") == .binary(Data([7, 8, 9])))

        // A value in no layout Amber knows, a file outside the folder, missing, or a symbolic link: the fetch fails naming the attribute.
        try FileManager.default.createSymbolicLink(atPath: external.appendingPathComponent("link").path, withDestinationPath: path)
        for column in ["x'07CAFE'", "x'02' || CAST('../Photos.sqlite' AS BLOB)", "x'02' || CAST('gone' AS BLOB)", "x'02' || CAST('link' AS BLOB)"] {
            try execute(path, "UPDATE ZPHOTO SET ZDATA = \(column) WHERE Z_PK = 1")
            #expect {
                try Context(store: try Store(path: path, model: model)).fetch(FetchRequest("Photo"))
            } throws: { error in "\(error)".contains("Photo.data") }
        }
        // An Amber store keeps such an attribute's bytes as they are.
        let amber = Context(store: try Store.inMemory(model: model))
        let kept = try amber.insert("Photo")
        try kept.setValue(.binary(Data([1, 2])), forKey: "data")
        try amber.save()
        #expect(try amber.fetch(FetchRequest("Photo")).first?.value(forKey: "data") == .binary(Data([1, 2])))
    }
}
