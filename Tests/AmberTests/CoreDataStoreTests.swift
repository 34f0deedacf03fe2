import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Stores Core Data wrote on Apple systems, with their models, in ../shared/coredata beside the repository.
let sharedCoreData = repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/coredata")

/// A fixture store copied (with its -wal and -shm) into a scratch folder, so nothing touches the shared copy.
struct CoreDataFixture {
    let folder = temporaryDirectory()
    let path: String

    init(_ name: String) throws {
        let source = sharedCoreData.appendingPathComponent(name)
        path = folder.appendingPathComponent(source.lastPathComponent).path
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: path + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path + suffix)
        }
    }

    /// A store already in place (made by a test), read but never removed through this value.
    init(existing path: String) {
        self.path = path
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    /// Every row of `sql`, read with plain SQLite calls: the reference the store's reading is compared with.
    func rows(_ sql: String) throws -> [[Value]] {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw AmberError.notAStore(path: path, reason: "open") }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw AmberError.sqlite(code: 1, message: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[Value]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append((0..<sqlite3_column_count(statement)).map { column -> Value in
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: .int(sqlite3_column_int64(statement, column))
                case SQLITE_FLOAT: .double(sqlite3_column_double(statement, column))
                case SQLITE_TEXT: .string(String(cString: sqlite3_column_text(statement, column)))
                case SQLITE_BLOB:
                    .binary(Data(bytes: sqlite3_column_blob(statement, column), count: Int(sqlite3_column_bytes(statement, column))))
                default: .null
                }
            })
        }
        return rows
    }
}

/// The model of a fixture, imported from its Xcode bundle.
func coreDataModel(_ bundle: String, version: String? = nil, registry: Registry = Registry()) throws -> Model {
    let url = sharedCoreData.appendingPathComponent(bundle)
    let options = XcodeImportOptions(registry: registry)
    let imported = try version.map { try XcodeModelImport(contentsOf: url, version: $0, options: options) }
        ?? XcodeModelImport(contentsOf: url, options: options)
    return try Model(imported.model, registry: registry)
}

/// A Core Data date (seconds since 2001, as the reference reads them) as the store should read it.
private func date(_ value: Value) -> Value {
    guard case .double(let seconds) = value else { return value }
    return .date(Date(timeIntervalSinceReferenceDate: seconds))
}

/// A Core Data UUID (16 bytes) as the store should read it.
private func uuid(_ value: Value) -> Value {
    guard case .binary(let bytes) = value, bytes.count == 16 else { return value }
    return .uuid(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
}

/// SampleModel (a copy): Car → SportCar → ExpensiveSportCar in one table, Person with a UUID, a date, and cars.
func sampleModel() throws -> (CoreDataFixture, Store) {
    let fixture = try CoreDataFixture("CoreDataPlus/SampleModel_V1.sqlite")
    return (fixture, try Store(path: fixture.path, model: sampleModelModel()))
}

/// SampleModel's app model, with the app's Color transformer stood in for: the stored bytes are handed over as they are.
func sampleModelModel() throws -> Model {
    let registry = Registry()
    try registry.register(Transformer(name: "ColorTransformer", from: ValueClass.binary.rawValue, to: ValueClass.binary.rawValue,
                                      source: "test", forward: { $0 }, reverse: { $0 }))
    return try coreDataModel("CoreDataPlus/SampleModel.xcdatamodeld", registry: registry)
}

@Suite("Core Data stores")
struct CoreDataStoreTests {

    @Test("every row and value of a store with a hierarchy reads as plain SQLite reads it")
    func everyValueMatchesAPlainReading() throws {
        let (fixture, store) = try sampleModel()
        defer { fixture.remove() }
        let context = Context(store: store)
        // Entity numbers looked up by name in Z_PRIMARYKEY, then each row's Z_ENT.
        let numbers = Dictionary(uniqueKeysWithValues: try fixture.rows("SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY").map { row -> (String, Value) in
            guard case .string(let name) = row[0] else { return ("", .null) }
            return (name, row[1])
        })
        let cars = try context.fetch(FetchRequest("Car"))
        let reference = try fixture.rows("SELECT Z_PK, Z_ENT, ZMAKER, ZMODEL, ZNUMBERPLATE, ZMARKEDFORDELETIONASOF, ZOWNER, ZISLIMITEDEDITION FROM ZCAR ORDER BY Z_PK")
        #expect(cars.count == reference.count && cars.count == 125)
        let byKey = Dictionary(uniqueKeysWithValues: cars.map { ($0.objectID.primaryKey ?? -1, $0) })
        for row in reference {
            guard case .int(let key) = row[0], let car = byKey[key] else {
                Issue.record("no object for row \(row[0])")
                continue
            }
            #expect(numbers[car.entity.name] == row[1], "row \(key): \(car.entity.name)")
            #expect(try car.value(forKey: "maker") == row[2])
            #expect(try car.value(forKey: "model") == row[3])
            #expect(try car.value(forKey: "numberPlate") == row[4])
            #expect(try car.value(forKey: "markedForDeletionAsOf") == date(row[5]))
            #expect(try car.object(forKey: "owner")?.objectID.primaryKey.map(Value.int) ?? .null == row[6])
            if car.entity.name == "ExpensiveSportCar" {
                let flag: Value = if case .int(let bit) = row[7] { .bool(bit != 0) } else { .null }
                #expect(try car.value(forKey: "isLimitedEdition") == flag)
            }
        }
        #expect(try context.count(FetchRequest("SportCar")) == reference.filter { $0[1] == numbers["SportCar"] || $0[1] == numbers["ExpensiveSportCar"] }.count)
        #expect(try context.count(FetchRequest("ExpensiveSportCar")) == reference.filter { $0[1] == numbers["ExpensiveSportCar"] }.count)

        let people = try context.fetch(FetchRequest("Person", sortedBy: [SortKey("lastName"), SortKey("firstName")]))
        let personRows = try fixture.rows("SELECT Z_PK, ZFIRSTNAME, ZLASTNAME, ZID, ZUPDATEDAT FROM ZPERSON ORDER BY ZLASTNAME, ZFIRSTNAME")
        #expect(people.count == personRows.count && !people.isEmpty)
        for (person, row) in zip(people, personRows) {
            #expect(person.objectID.primaryKey.map(Value.int) == row[0])
            #expect(try person.value(forKey: "firstName") == row[1])
            #expect(try person.value(forKey: "id") == uuid(row[3]))
            #expect(try person.value(forKey: "updatedAt") == date(row[4]))
            // The to-many side, through the cars' owner column.
            let owned = try person.objects(forKey: "cars").compactMap(\.objectID.primaryKey).sorted()
            let expected = try fixture.rows("SELECT Z_PK FROM ZCAR WHERE ZOWNER = \(person.objectID.primaryKey ?? -1) ORDER BY Z_PK").map { $0[0] }
            #expect(owned.map(Value.int) == expected)
        }
        // Object IDs carry the store's own UUID.
        let uuidText = try fixture.rows("SELECT Z_UUID FROM Z_METADATA")[0][0]
        #expect(Value.string(store.identifier.uuidString) == uuidText)
    }

    @Test("predicates on a Core Data store select what a brute-force filter selects")
    func predicatesMatchABruteForceFilter() throws {
        let (fixture, store) = try sampleModel()
        defer { fixture.remove() }
        let context = Context(store: store)
        let all = try context.fetch(FetchRequest("Car"))
        var generator = SplitMix64(seed: 2001)
        let plates = try all.map { try $0.value(forKey: "numberPlate") }
        for _ in 0..<20 {
            guard case .string(let plate) = plates.randomElement(using: &generator) ?? .null else { continue }
            let predicate = try FetchPredicate("numberPlate >= %@ AND owner.lastName BEGINSWITH[c] %@", .string(plate), .string("m"))
            let found = Set(try context.fetch(FetchRequest("Car", predicate: predicate)).compactMap(\.objectID.primaryKey))
            let expected = Set(try all.filter { car in
                guard case .string(let own) = try car.value(forKey: "numberPlate"), own >= plate,
                      case .string(let last) = try car.object(forKey: "owner")?.value(forKey: "lastName") ?? .null else { return false }
                return last.lowercased().hasPrefix("m")
            }.compactMap(\.objectID.primaryKey))
            #expect(found == expected, "plate \(plate)")
        }
        let makers = try context.fetch(FetchRequest("Person", predicate: FetchPredicate("ANY cars.maker == 'FIAT'")))
        let expected = try fixture.rows("SELECT DISTINCT ZOWNER FROM ZCAR WHERE ZMAKER = 'FIAT' AND ZOWNER IS NOT NULL").count
        #expect(makers.count == expected && expected > 0)
    }

    @Test("history, maintenance and batch changes are refused by name on a Core Data store, and opening changes nothing")
    func otherWritesAreRefused() throws {
        let (fixture, store) = try sampleModel()
        defer { fixture.remove() }
        let before = try Data(contentsOf: URL(fileURLWithPath: fixture.path))
        let context = Context(store: store)
        _ = try context.fetch(FetchRequest("Person"))
        try context.save()  // nothing to write
        #expect(store.capabilities == [.sharedAcrossProcesses])
        for attempt in [{ _ = try store.history(after: nil) }, { try store.vacuum() },
                        { _ = try context.batchDelete(FetchRequest("Car", predicate: FetchPredicate("maker == 'FIAT'"))) }] as [() throws -> Void] {
            #expect {
                try attempt()
            } throws: { error in
                guard case AmberError.unsupported(_, let capability) = error else { return false }
                return capability.hasSuffix("(on a store Core Data made)")
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.path)) == before)
    }

    @Test("a store made with one model version opens with it, and another version is refused naming each difference")
    func modelVersionsAreChecked() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel3_V1.sqlite")
        defer { fixture.remove() }
        let store = try Store(path: fixture.path, model: coreDataModel("CoreDataPlus/SampleModel3.xcdatamodeld", version: "SampleModel3"))
        let users = try Context(store: store).fetch(FetchRequest("User", sortedBy: [SortKey("petName")]))
        #expect(try users.map { try $0.value(forKey: "petName") } == fixture.rows("SELECT ZPETNAME FROM ZUSER ORDER BY ZPETNAME").map { $0[0] })
        let later = try coreDataModel("CoreDataPlus/SampleModel3.xcdatamodeld", version: "SampleModel3_v3")
        #expect {
            try Store(path: fixture.path, model: later)
        } throws: { error in
            guard case AmberError.modelMismatch(_, let differences) = error else { return false }
            return Set(differences) == [
                "entity Pet is not in the store (Z_PRIMARYKEY)",
                "entity Pet: the store has no table ZPET",
                "User.pet: table ZUSER has no column ZPET",
                "entity User: column ZUSER.ZPETNAME is not in the model",
            ]
        }
    }

    @Test("a rollback-journal store made by an older Core Data reads with its first model version")
    func rollbackJournalStore() throws {
        let fixture = try CoreDataFixture("wibosco/CoreDataMigration_Example_1.sqlite")
        defer { fixture.remove() }
        let model = try coreDataModel("wibosco/CoreDataMigration_Example.xcdatamodeld", version: "CoreDataMigration_Example")
        let posts = try Context(store: Store(path: fixture.path, model: model)).fetch(FetchRequest("Post", sortedBy: [SortKey("date")]))
        let rows = try fixture.rows("SELECT ZCOLOR, ZCONTENT, ZDATE, ZPOSTID FROM ZPOST ORDER BY ZDATE")
        #expect(posts.count == rows.count && posts.count == 10)
        for (post, row) in zip(posts, rows) {
            #expect(try [post.value(forKey: "color"), post.value(forKey: "content"), post.value(forKey: "date"), post.value(forKey: "postID")]
                == [row[0], row[1], date(row[2]), row[3]])
        }
        // The journal mode is the file's: reading left it as Core Data set it.
        #expect(try fixture.rows("PRAGMA journal_mode") == [[.string("delete")]])
    }

    @Test("files that are not Core Data stores are refused, and so is a store whose own model is damaged")
    func badFiles() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let model = try coreDataModel("CoreDataPlus/SampleModel3.xcdatamodeld")
        // A plain SQLite file with a table of its own: neither an Amber store nor a Core Data store.
        let plain = folder.appendingPathComponent("plain.sqlite").path
        var db: OpaquePointer?
        sqlite3_open(plain, &db)
        sqlite3_exec(db, "CREATE TABLE ZUSER (Z_PK INTEGER PRIMARY KEY, ZNAME VARCHAR)", nil, nil, nil)
        sqlite3_close(db)
        #expect(throws: AmberError.self) { try Store(path: plain, model: model) }
        // Refused before anything changes it: its journal mode stays another program's.
        var check: OpaquePointer?
        sqlite3_open(plain, &check)
        var mode: OpaquePointer?
        sqlite3_prepare_v2(check, "PRAGMA journal_mode", -1, &mode, nil)
        #expect(sqlite3_step(mode) == SQLITE_ROW && String(cString: sqlite3_column_text(mode, 0)) == "delete")
        sqlite3_finalize(mode)
        sqlite3_close(check)
        // A truncated store: its first page only.
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel3_V1.sqlite")
        defer { fixture.remove() }
        let truncated = folder.appendingPathComponent("truncated.sqlite").path
        try Data(try Data(contentsOf: URL(fileURLWithPath: fixture.path)).prefix(4096)).write(to: URL(fileURLWithPath: truncated))
        #expect(throws: AmberError.self) { try Context(store: Store(path: truncated, model: model)).fetch(FetchRequest("User")) }
        // A store whose model cache is damaged is refused naming it.
        let damaged = folder.appendingPathComponent("damaged.sqlite").path
        try FileManager.default.copyItem(atPath: fixture.path, toPath: damaged)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: fixture.path + suffix) {
            try FileManager.default.copyItem(atPath: fixture.path + suffix, toPath: damaged + suffix)
        }
        sqlite3_open(damaged, &db)
        sqlite3_exec(db, "UPDATE Z_MODELCACHE SET Z_CONTENT = CAST(substr(Z_CONTENT, 1, 40) || zeroblob(20) AS BLOB)", nil, nil, nil)
        sqlite3_close(db)
        #expect {
            try Store(openingExisting: damaged)
        } throws: { error in
            guard case AmberError.notAStore(_, let reason) = error else { return false }
            return reason.contains("model cache (Z_MODELCACHE)")
        }
    }

    /// A many-to-many pair in the layout people who read Apple's stores report
    /// (no fixture has one): join table `Z_1TAGS`, Post keys in `Z_1POSTS`, Tag keys in `Z_2TAGS`.
    private static let tagsModel = """
        <entity name="Post"><attribute name="title" optional="YES" attributeType="String"/>
          <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="posts" inverseEntity="Tag"/></entity>
        <entity name="Tag"><attribute name="name" optional="YES" attributeType="String"/>
          <relationship name="posts" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Post" inverseName="tags" inverseEntity="Post"/></entity>
        """

    /// A store in Core Data's layout for ``tagsModel``, made with plain SQL, and its links.
    private static func tagsStore(at path: String, joinTable: String = "Z_1TAGS") -> [(post: Int64, tag: Int64)] {
        var generator = SplitMix64(seed: 39)
        var links: [(post: Int64, tag: Int64)] = []
        for post in Int64(1)...12 { for tag in Int64(1)...5 where Int.random(in: 0..<3, using: &generator) == 0 { links.append((post, tag)) } }
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Post', 0, 12), (2, 'Tag', 0, 5);
            INSERT INTO Z_METADATA VALUES (1, '\(UUID().uuidString)', NULL);
            CREATE TABLE ZPOST (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR);
            CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE \(joinTable) (Z_1POSTS INTEGER, Z_2TAGS INTEGER, PRIMARY KEY (Z_1POSTS, Z_2TAGS));
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12) INSERT INTO ZPOST SELECT i, 1, 1, 'post ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) INSERT INTO ZTAG SELECT i, 2, 1, 'tag ' || i FROM n;
            \(links.map { "INSERT INTO \(joinTable) VALUES (\($0.post), \($0.tag));" }.joined())
            """, nil, nil, nil)
        sqlite3_close(db)
        return links
    }

    /// Two sibling entities declaring `caption`, `size` and `owner`: Core Data keeps the second's in
    /// numbered columns (`ZCAPTION1`), which no fixture shows; the numbering is assumed to follow the model's order.
    private static let attachmentsModel = """
        <entity name="Attachment" isAbstract="YES"><attribute name="added" optional="YES" attributeType="Date"/></entity>
        <entity name="ImageAttachment" parentEntity="Attachment">
          <attribute name="caption" optional="YES" attributeType="String"/>
          <attribute name="size" optional="YES" attributeType="Integer 32" usesScalarValueType="NO"/>
          <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Post" inverseName="images" inverseEntity="Post"/></entity>
        <entity name="VideoAttachment" parentEntity="Attachment">
          <attribute name="caption" optional="YES" attributeType="String"/>
          <attribute name="size" optional="YES" attributeType="Double" usesScalarValueType="NO"/>
          <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Post" inverseName="videos" inverseEntity="Post"/></entity>
        <entity name="Post"><attribute name="text" optional="YES" attributeType="String"/>
          <relationship name="images" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="ImageAttachment" inverseName="owner" inverseEntity="ImageAttachment"/>
          <relationship name="videos" optional="YES" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="VideoAttachment" inverseName="owner" inverseEntity="VideoAttachment"/></entity>
        """

    @Test("sibling entities' properties of one name read from and write to their own numbered columns")
    func siblingPropertiesOfOneName() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("attachments.sqlite").path
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Attachment', 0, 3), (2, 'ImageAttachment', 1, 0), (3, 'VideoAttachment', 1, 0), (4, 'Post', 0, 1);
            INSERT INTO Z_METADATA VALUES (1, '\(UUID().uuidString)', NULL);
            CREATE TABLE ZATTACHMENT (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZSIZE INTEGER, ZOWNER INTEGER, ZOWNER1 INTEGER,
              Z_FOK_OWNER1 INTEGER, ZADDED TIMESTAMP, ZCAPTION VARCHAR, ZCAPTION1 VARCHAR, ZSIZE1 FLOAT);
            CREATE TABLE ZPOST (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTEXT VARCHAR);
            INSERT INTO ZPOST VALUES (1, 4, 1, 'first');
            INSERT INTO ZATTACHMENT (Z_PK, Z_ENT, Z_OPT, ZCAPTION, ZSIZE, ZOWNER) VALUES (1, 2, 1, 'a cat', 640, 1);
            INSERT INTO ZATTACHMENT (Z_PK, Z_ENT, Z_OPT, ZCAPTION1, ZSIZE1, ZOWNER1, Z_FOK_OWNER1) VALUES (2, 3, 1, 'a dog', 2.5, 1, 2), (3, 3, 1, 'a bird', 0.5, 1, 1);
            """, nil, nil, nil)
        sqlite3_close(db)
        let model = try Model(importXML(Self.attachmentsModel).model, registry: Registry())
        let context = Context(store: try Store(path: path, model: model))
        let post = try #require(try context.fetch(FetchRequest("Post")).first)
        #expect(try post.objects(forKey: "videos").map { try $0.value(forKey: "caption") } == [.string("a bird"), .string("a dog")])
        #expect(try post.objects(forKey: "images").map { try $0.value(forKey: "size") } == [.int(640)])
        #expect(try context.count(FetchRequest("VideoAttachment", where: "size > 1")) == 1)
        #expect(try context.count(FetchRequest("ImageAttachment", where: "caption == 'a dog'")) == 0)
        // Written back to the same columns.
        let video = try context.insert("VideoAttachment"), image = try #require(try post.objects(forKey: "images").first)
        try video.setValue(.string("a fish"), forKey: "caption")
        try video.setValue(.double(7.25), forKey: "size")
        try post.setObjects(try post.objects(forKey: "videos") + [video], forKey: "videos")
        try image.setValue(.int(800), forKey: "size")
        try context.save()
        let fixture = CoreDataFixture(existing: path)
        #expect(try fixture.rows("SELECT Z_PK, Z_ENT, ZCAPTION, ZSIZE, ZOWNER, ZCAPTION1, ZSIZE1, ZOWNER1 FROM ZATTACHMENT ORDER BY Z_PK") == [
            [.int(1), .int(2), .string("a cat"), .int(800), .int(1), .null, .null, .null],
            [.int(2), .int(3), .null, .null, .null, .string("a dog"), .double(2.5), .int(1)],
            [.int(3), .int(3), .null, .null, .null, .string("a bird"), .double(0.5), .int(1)],
            [.int(4), .int(3), .null, .null, .null, .string("a fish"), .double(7.25), .int(1)],
        ])
        #expect(try fixture.rows("SELECT ZCAPTION1 FROM ZATTACHMENT WHERE ZOWNER1 = 1 ORDER BY Z_FOK_OWNER1")
            == [[.string("a bird")], [.string("a dog")], [.string("a fish")]])
    }

    @Test("a many-to-many pair reads from Core Data's join table, both ways and in predicates")
    func manyToMany() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("tags.sqlite").path
        let links = Self.tagsStore(at: path)
        let model = try Model(importXML(Self.tagsModel).model, registry: Registry())
        let context = Context(store: try Store(path: path, model: model))
        for post in try context.fetch(FetchRequest("Post")) {
            let key = try #require(post.objectID.primaryKey)
            #expect(Set(try post.objects(forKey: "tags").compactMap(\.objectID.primaryKey)) == Set(links.filter { $0.post == key }.map(\.tag)))
        }
        for tag in try context.fetch(FetchRequest("Tag")) {
            let key = try #require(tag.objectID.primaryKey)
            #expect(Set(try tag.objects(forKey: "posts").compactMap(\.objectID.primaryKey)) == Set(links.filter { $0.tag == key }.map(\.post)))
        }
        let tagged = try context.fetch(FetchRequest("Post", predicate: FetchPredicate("ANY tags.name == 'tag 2'")))
        #expect(Set(tagged.compactMap(\.objectID.primaryKey)) == Set(links.filter { $0.tag == 2 }.map(\.post)) && !tagged.isEmpty)

        let other = folder.appendingPathComponent("misnamed.sqlite").path
        _ = Self.tagsStore(at: other, joinTable: "Z_9TAGS")
        #expect {
            try Store(path: other, model: model)
        } throws: { error in
            guard case AmberError.modelMismatch(_, let differences) = error else { return false }
            return differences == ["Post.tags: the store has no join table Z_1TAGS or Z_2POSTS"]
        }
    }

    /// The registry a program reading SampleModel2 needs: the app's two transformers, handing over the stored bytes.
    static func sampleModel2Registry() throws -> Registry {
        let registry = Registry()
        for name in ["CoverTransformer", "ContentTransformer"] {
            try registry.register(Transformer(name: name, from: ValueClass.propertyListName, to: ValueClass.binary.rawValue, source: "test",
                                              forward: { $0 }, reverse: { $0 }))
        }
        return registry
    }

    @Test("a store alone opens with the model it keeps, and every page reads as plain SQLite reads it")
    func aStoreDescribesItself() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel2_V1.sqlite")
        defer { fixture.remove() }
        let store = try Store(openingExisting: fixture.path, registry: Self.sampleModel2Registry())
        #expect(try store.model.entity(named: "Writer").isAbstract)
        #expect(try store.model.entity(named: "Book").attribute(named: "pagesCount").derivation?.expression == "pages.@count")
        let context = Context(store: store)
        let pages = try context.fetch(FetchRequest("Page", sortedBy: [SortKey("number"), SortKey("content")]))
        let rows = try fixture.rows("SELECT Z_PK, ZNUMBER, ZISBOOKMARKED, ZBOOK, ZCONTENT FROM ZPAGE")
        #expect(pages.count == rows.count && rows.count == 4970)
        let byKey = Dictionary(uniqueKeysWithValues: rows.map { row -> (Value, [Value]) in (row[0], row) })
        for page in pages {
            guard let row = byKey[.int(page.objectID.primaryKey ?? -1)] else {
                Issue.record("no row for \(page.objectID)")
                continue
            }
            #expect(try page.value(forKey: "number") == row[1])
            #expect(try page.value(forKey: "isBookmarked") == (row[2] == .int(1) ? .bool(true) : .bool(false)))
            #expect(try page.object(forKey: "book")?.objectID.primaryKey.map(Value.int) == row[3])
            #expect(try page.value(forKey: "content") == row[4])
        }
        // Books: decimals as Core Data reads its REALs back, the derived count as the store keeps it, and the pages both ways.
        for book in try context.fetch(FetchRequest("Book")) {
            let key = book.objectID.primaryKey ?? -1
            let row = try fixture.rows("SELECT printf('%.15g', ZPRICE), ZPAGESCOUNT, ZTITLE, (SELECT count(*) FROM ZPAGE WHERE ZBOOK = \(key)) FROM ZBOOK WHERE Z_PK = \(key)")[0]
            guard case .string(let price) = row[0], let decimal = ScaledDecimal(price) else {
                Issue.record("price of book \(key)")
                continue
            }
            #expect(try book.value(forKey: "price") == .decimal(decimal))
            #expect(try book.value(forKey: "pagesCount") == row[1])
            #expect(try book.value(forKey: "title") == row[2])
            #expect(try Value.int(Int64(book.objects(forKey: "pages").count)) == row[3])
        }
        let authors = try context.fetch(FetchRequest("Author", sortedBy: [SortKey("alias")]))
        #expect(try authors.map { try $0.value(forKey: "alias") } == fixture.rows("SELECT ZALIAS FROM ZWRITER ORDER BY ZALIAS").map { $0[0] })
        // Writer is abstract: its rows are all Authors.
        #expect(try context.fetch(FetchRequest("Writer")).map(\.entity.name) == authors.map { _ in "Author" })
        let expensive = try context.count(FetchRequest("Book", predicate: FetchPredicate("price > 5 AND author.alias == 'Andrea'")))
        let plain = try fixture.rows("""
            SELECT count(*) FROM ZBOOK b JOIN ZWRITER w ON b.ZAUTHOR = w.Z_PK WHERE b.ZPRICE > 5 AND w.ZALIAS = 'Andrea'
            """)[0][0]
        #expect(Value.int(Int64(expensive)) == plain)
    }

    @Test("the model a store keeps reads as its app's Xcode model says")
    func cachedModelMatchesTheXcodeModel() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel_V1.sqlite")
        defer { fixture.remove() }
        let cached = try Store.coreDataModel(ofStoreAt: fixture.path, registry: Registry()).model
        let xcode = try XcodeModelImport(contentsOf: sharedCoreData.appendingPathComponent("CoreDataPlus/SampleModel.xcdatamodeld"),
                                         options: XcodeImportOptions(registry: Registry())).model
        func shape(_ model: ModelDescription) -> [String] {
            model.entities.sorted { $0.name < $1.name }.flatMap { entity in
                ["\(entity.name) : \(entity.parent ?? "-")"]
                    + entity.attributes.filter { !$0.isTransient }.sorted { $0.name < $1.name }
                        .map { "  \($0.name) \($0.type) optional \($0.isOptional) \($0.transformerNames) \($0.valueClassName ?? "-")" }
                    + entity.relationships.sorted { $0.name < $1.name }
                        .map { "  \($0.name) -> \($0.destination) inverse \($0.inverse ?? "-") many \($0.isToMany) rule \($0.deleteRule)" }
                    + entity.uniquenessConstraints.map { "  unique \($0)" }
            }
        }
        #expect(shape(cached) == shape(xcode))
    }

    @Test("importing copies every object and link into an Amber store, reading the same; failures leave nothing")
    func importIntoAnAmberStore() throws {
        let fixture = try CoreDataFixture("CoreDataPlus/SampleModel2_V1.sqlite")
        defer { fixture.remove() }
        let registry = try Self.sampleModel2Registry()
        let destination = fixture.folder.appendingPathComponent("books.amber").path
        let steps = Locked<[String]>([])
        let counts = try Store.importCoreDataStore(at: fixture.path, into: destination, registry: registry,
                                                   progress: { step in steps.mutate { $0.append(step.step) } })
        #expect(counts["Page"] == 4970 && counts["Author"] == 2 && counts["Writer"] == 0)
        #expect(steps.value.contains("copy Page"))
        let source = Context(store: try Store(openingExisting: fixture.path, registry: registry))
        let copy = Context(store: try Store(openingExisting: destination, registry: registry))
        #expect(copy.store.capabilities.contains(.history))
        for entity in ["Book", "Page", "Feedback", "Author"] {
            let request = FetchRequest(entity)
            let attributes = try source.model.entity(named: entity).attributes.filter { !$0.isTransient }.map(\.name)
            let before = try source.fetch(request).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
            let after = try copy.fetch(request).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
            #expect(before.count == after.count && !before.isEmpty)
            for (old, new) in zip(before, after) {
                #expect(old.objectID.primaryKey == new.objectID.primaryKey && old.entity.name == new.entity.name)
                for name in attributes { #expect(try old.value(forKey: name) == new.value(forKey: name), "\(entity).\(name)") }
                for relationship in old.entity.relationships where !relationship.isToMany {
                    #expect(try old.object(for: relationship)?.objectID.primaryKey == new.object(forKey: relationship.name)?.objectID.primaryKey)
                }
            }
        }
        // A path already taken, a cancelled copy and a model that does not fit leave nothing behind.
        #expect(throws: AmberError.fileExists(path: destination)) {
            try Store.importCoreDataStore(at: fixture.path, into: destination, registry: registry)
        }
        let cancelled = fixture.folder.appendingPathComponent("cancelled.amber").path
        #expect(throws: AmberError.self) {
            try Store.importCoreDataStore(at: fixture.path, into: cancelled, registry: registry, progress: { step in
                if step.step == "copy Page" { throw CancellationError() }
            })
        }
        #expect(!FileManager.default.fileExists(atPath: cancelled))
        // A value a fetch would refuse (a name that is not text) is refused naming it, not copied.
        let users = try CoreDataFixture("CoreDataPlus/SampleModel3_V1.sqlite")
        defer { users.remove() }
        var db: OpaquePointer?
        sqlite3_open(users.path, &db)
        sqlite3_exec(db, "UPDATE ZUSER SET ZNAME = x'FF00' WHERE Z_PK = 3", nil, nil, nil)
        sqlite3_close(db)
        let refusedCopy = users.folder.appendingPathComponent("users.amber").path
        #expect {
            try Store.importCoreDataStore(at: users.path, into: refusedCopy, registry: Registry())
        } throws: { error in
            "\(error)".contains("User.name")
        }
        #expect(!FileManager.default.fileExists(atPath: refusedCopy))
        let other = try coreDataModel("CoreDataPlus/SampleModel3.xcdatamodeld")
        #expect(throws: AmberError.self) { try Store.importCoreDataStore(at: fixture.path, into: cancelled, model: other) }
        #expect(!FileManager.default.fileExists(atPath: cancelled))
    }

    @Test("an ordered to-many reads its members in Core Data's order column (Z_FOK_), not by key")
    func orderedToMany() throws {
        let folder = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("playlists.sqlite").path
        // Songs 1...8 of playlist 1 in the order the reported layout keeps (Z_FOK_PLAYLIST), which is not the key order.
        let order: [Int64] = [5, 2, 8, 1, 7, 3, 6, 4]
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, """
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Playlist', 0, 1), (2, 'Song', 0, 8);
            INSERT INTO Z_METADATA VALUES (1, '\(UUID().uuidString)', NULL);
            CREATE TABLE ZPLAYLIST (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            CREATE TABLE ZSONG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPLAYLIST INTEGER, Z_FOK_PLAYLIST INTEGER, ZTITLE VARCHAR);
            INSERT INTO ZPLAYLIST VALUES (1, 1, 1, 'road trip');
            \(order.enumerated().map { "INSERT INTO ZSONG VALUES (\($0.element), 2, 1, 1, \(($0.offset + 1) * 1024), 'song \($0.element)');" }.joined())
            """, nil, nil, nil)
        sqlite3_close(db)
        let model = try Model(importXML("""
            <entity name="Playlist"><attribute name="name" optional="YES" attributeType="String"/>
              <relationship name="songs" optional="YES" toMany="YES" ordered="YES" deletionRule="Cascade" destinationEntity="Song" inverseName="playlist" inverseEntity="Song"/></entity>
            <entity name="Song"><attribute name="title" optional="YES" attributeType="String"/>
              <relationship name="playlist" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Playlist" inverseName="songs" inverseEntity="Playlist"/></entity>
            """).model, registry: Registry())
        let context = Context(store: try Store(path: path, model: model))
        let playlist = try #require(try context.fetch(FetchRequest("Playlist")).first)
        #expect(try playlist.objects(forKey: "songs").compactMap(\.objectID.primaryKey) == order)
        #expect(try context.fetch(FetchRequest("Song", predicate: FetchPredicate("playlist.name == 'road trip'"))).count == order.count)
    }
}
