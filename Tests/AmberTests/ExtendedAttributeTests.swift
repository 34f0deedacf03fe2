import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Extended attributes: keys an extensible entity's objects take at run time,
/// stored in one JSON column, exact or refused, tracked, undone and merged per
/// key, and usable in predicates and sorting.
@Suite("Extended attributes") struct ExtendedAttributeTests {
    static func description() -> ModelDescription {
        ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
            }.extensible()
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("rank")
                Relationship.toOne("author", "Author", inverse: "books")
            }.extensible()
            EntityDescription("EBook") {
                Attribute.string("format")
            }.inheriting(from: "Book")
            EntityDescription("Shelf") {
                Attribute.string("label")
            }
        }
    }

    /// A store in a fresh directory, removed by the caller's `defer`.
    static func open(_ directory: URL, _ model: Model? = nil) throws -> Store {
        try Store(path: directory.appendingPathComponent("x.amber").path, model: model ?? Model(description()))
    }

    @Test("the model: JSON, fingerprint, inheritance, and an extensible entity needs no attributes")
    func model() throws {
        let description = Self.description()
        let json = description.jsonText()
        #expect(json.contains("\"extensible\":true"))
        #expect(try ModelDescription(json: Data(json.utf8)) == description)
        var plain = description
        plain.entities[1].isExtensible = false
        #expect(ModelFingerprint(plain).hash != ModelFingerprint(description).hash)
        let model = try Model(description)
        #expect(try model.entity(named: "EBook").isExtensible)
        #expect(try !model.entity(named: "Shelf").isExtensible)
        let bare = try Model(ModelDescription(entities: [EntityDescription("Notes").extensible()]))
        #expect(try bare.entity(named: "Notes").isExtensible)
        // As in Core Data, any entity may have no properties (Xcode models have such entities).
        #expect(try Model(ModelDescription(entities: [EntityDescription("Notes")])).entity(named: "Notes").attributes.isEmpty)
    }

    @Test("keys: set, read, list, remove by null; bad names and clashes refused naming the place")
    func keys() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = Context(store: try Self.open(directory))
        let book = try context.insert("Book")
        try book.setValue(.string("B2"), forExtendedKey: "shelf")
        try book.setValue(.int(3), forKey: "copies")  // by name, like any attribute
        #expect(try book.value(forKey: "shelf") == .string("B2"))
        #expect(try book.value(forExtendedKey: "copies") == .int(3))
        #expect(try book.value(forKey: "missing") == .null)
        #expect(try book.extendedKeys() == ["copies", "shelf"])
        #expect(try book.dictionary()["shelf"] == .string("B2"))
        try book.setValue(.null, forKey: "copies")
        #expect(try book.extendedKeys() == ["shelf"])
        for (key, words) in [("1st", "must start with a letter"), ("shelf-mark", "must start with a letter"), ("", "must start"),
                             ("Title", "clashes with the modelled title"), ("author", "clashes with the modelled author"),
                             ("format", "clashes with the modelled format")]
        {
            let error = amberError { try book.setValue(.int(1), forKey: key) }
            guard case .invalidValue(let place, let expected, let given)? = error else {
                Issue.record("\(key): \(String(describing: error))")
                continue
            }
            #expect(place == "Book.\(key)")
            #expect("\(expected) \(given)".contains(words), "\(expected) \(given)")
        }
        // A sub-entity's own attribute is its own; its extended keys are inherited.
        let ebook = try context.insert("EBook")
        try ebook.setValue(.string("epub"), forKey: "format")
        try ebook.setValue(.string("C1"), forKey: "shelf")
        #expect(try ebook.extendedValues() == ["shelf": .string("C1")])
        // Not extensible: unknown names stay unknown.
        let shelf = try context.insert("Shelf")
        guard case .unknownAttribute(let entity, let name, _)? = amberError({ try shelf.setValue(.int(1), forKey: "rank") }) else {
            Issue.record("a key of an entity that is not extensible was accepted")
            return
        }
        #expect(entity == "Shelf" && name == "rank")
        #expect(try shelf.extendedKeys().isEmpty)
    }

    @Test("values that cannot read back exactly are refused at set, naming the key, and change nothing")
    func refusedValues() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = Context(store: try Self.open(directory))
        let book = try context.insert("Book")
        try book.setValue(.int(7), forKey: "kept")
        var deep = Value.int(1)
        for _ in 0...ExtendedValues.maximumDepth { deep = .array([deep]) }
        let nanWithPayload = Value.double(Double(bitPattern: 0x7FF8_0000_0000_0ABC))
        for value in [Value.objectID(book.objectID), .custom(CustomValue(className: "Color", bytes: Data([1, 2, 3]))), deep,
                      .array([.objectID(book.objectID)]), nanWithPayload, .decimal(.nan)]
        {
            let error = amberError { try book.setValue(value, forKey: "odd") }
            guard case .invalidValue(let place, _, _)? = error else {
                Issue.record("\(value) was accepted")
                continue
            }
            #expect(place == "Book.odd")
        }
        #expect(try book.extendedValues() == ["kept": .int(7)])
    }

    /// A value of every kind extended attributes take, nested ones too.
    static func randomValue(_ random: inout SplitMix64, depth: Int = 0) -> Value {
        let kinds = depth < 3 ? 13 : 11
        switch Int(random.next() % UInt64(kinds)) {
        case 0: return .bool(random.next() % 2 == 0)
        case 1: return .int(Int64(bitPattern: random.next()))
        case 2: return .int(Int64(random.next() % 1000) - 500)
        case 3:
            // Any bit pattern but NaNs with payloads (one NaN is kept, exactly).
            let double = Double(bitPattern: random.next())
            return .double(double.isNaN ? .nan : double)
        case 4:
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            return .float(float.isNaN ? .nan : float)
        case 5: return .string(String((0..<Int(random.next() % 12)).map { _ in "aé\"\\\n😀z€ \u{0}".randomElement(using: &random) ?? "a" }))
        case 6: return .binary(Data((0..<Int(random.next() % 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(Int64(random.next() % 4_000_000_000) - 2_000_000_000) + 0.123456))
        case 8: return .decimal(Decimal(string: "\(Int64(random.next() % 1_000_000) - 500_000).\(random.next() % 100_000)") ?? 0)
        case 9: return .uuid(UUID(uuid: (0..<16).reduce(into: UUID().uuid) { uuid, index in
            withUnsafeMutableBytes(of: &uuid) { $0[index] = UInt8(truncatingIfNeeded: random.next()) }
        }))
        case 10: return .uri(URL(string: "https://example.org/b/\(random.next() % 1000)?q=\(random.next() % 10)") ?? URL(fileURLWithPath: "/"))
        case 11: return .array((0..<Int(random.next() % 4)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var items: [String: Value] = [:]
            for index in 0..<Int(random.next() % 4) { items["k\(index) é"] = randomValue(&random, depth: depth + 1) }
            return .dictionary(items)
        }
    }

    @Test("every kind of value reads back exactly after save and reopen (random values, fixed seed)", arguments: StoreKind.allCases)
    func exactRoundTrip(kind: StoreKind) throws {
        let model = try Model(Self.description())
        let (store, cleanup) = try kind.open(model)
        defer { cleanup() }
        var random = SplitMix64(seed: 0xE17E)
        var expected: [[String: Value]] = []
        do {
            let context = Context(store: store)
            for _ in 0..<200 {
                let book = try context.insert("Book")
                var values: [String: Value] = [:]
                for index in 0..<Int(random.next() % 5) {
                    let value = Self.randomValue(&random)
                    try book.setValue(value, forExtendedKey: "k\(index)")
                    values["k\(index)"] = value
                }
                values["nested"] = .array([.double(-0.0), .float(-0.0), .null, .dictionary([:]),
                                           .date(Date(timeIntervalSince1970: DateText.range.lowerBound))])
                try book.setValue(values["nested"] ?? .null, forExtendedKey: "nested")
                // A date no binding can read back (Python's datetime ends with the year 9999) is refused, inside or not.
                // So is NaN or infinity inside an array or dictionary: C and Python read those as JSON, which holds neither.
                for refused in [Value.date(Date(timeIntervalSinceReferenceDate: -.infinity)),
                                .array([.date(Date(timeIntervalSince1970: DateText.range.upperBound))]),
                                .array([.double(.nan)]), .dictionary(["k": .float(.infinity)])] {
                    guard case .invalidValue(let place, _, let given)? = amberError({ try book.setValue(refused, forExtendedKey: "far") }) else {
                        Issue.record("\(refused) was not refused")
                        continue
                    }
                    #expect(place == "Book.far" && (given.contains("outside the years 1 to 9999") || given.contains("JSON")), "\(given)")
                }
                expected.append(values)
            }
            try context.save()
        }
        let context = Context(store: try kind.reopen(store, model: model) ?? store)
        let books = try context.fetch(FetchRequest("Book"))
        #expect(books.count == expected.count)
        for (book, values) in zip(books.sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }, expected) {
            let read = try book.extendedValues()
            #expect(Value.dictionary(read).isIdentical(to: .dictionary(values)), "\(read) != \(values)")
        }
    }

    @Test("changed and committed values, isUpdated and observers are per key")
    func tracking() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = Context(store: try Self.open(directory))
        let book = try context.insert("Book")
        try book.setValue(.string("Dune"), forKey: "title")
        try book.setValue(.string("B2"), forKey: "shelf")
        #expect(book.changedValues() == ["title": .string("Dune"), "shelf": .string("B2")])
        try context.save()
        #expect(!book.isUpdated)
        var reports: [ChangeReport] = []
        context.addObserver { reports.append($0) }
        try book.setValue(.int(2), forKey: "copies")
        try book.setValue(.null, forKey: "shelf")
        #expect(book.isUpdated)
        #expect(book.changedValues() == ["copies": .int(2), "shelf": .null])
        #expect(try book.committedValues()["shelf"] == .string("B2"))
        #expect(try book.committedValues()["copies"] == nil)
        try context.save()
        #expect(reports.last?.updated.first?.keys == ["copies", "shelf"])
        // Setting a key back to its saved value is no change.
        try book.setValue(.int(3), forKey: "copies")
        try book.setValue(.int(2), forKey: "copies")
        #expect(!book.isUpdated, "\(String(describing: book.committed)) \(book.values)")
    }

    @Test("a save's report keeps extended keys beside the derived values the store computed")
    func savedReportWithDerivedValues() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try Model(ModelDescription {
            EntityDescription("Note") {
                Attribute.string("title")
                Attribute.string("folded").derived("canonical:(title)")
            }.extensible()
        })
        let context = Context(store: try Self.open(directory, model))
        let note = try context.insert("Note")
        try context.save()
        var reports: [ChangeReport] = []
        context.addObserver { reports.append($0) }
        try note.setValue("Émile", forKey: "title")
        try note.setValue("B2", forKey: "shelf")
        try context.save()
        #expect(reports.last?.updated.first?.keys == ["title", "folded", "shelf"])
        #expect(try note.value(forKey: "folded") == "emile")
    }

    @Test("undo and redo go key by key, and keep keys merged in meanwhile")
    func undo() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Self.open(directory)
        let context = Context(store: store), other = Context(store: store)
        let book = try context.insert("Book")
        try context.save()
        context.undoStack = UndoStack()
        try book.setValue(.string("B2"), forKey: "shelf")
        try book.setValue(.int(2), forKey: "copies")
        #expect(try context.undo())
        #expect(try book.extendedValues() == ["shelf": .string("B2")])
        #expect(try context.redo())
        #expect(try book.extendedValues() == ["shelf": .string("B2"), "copies": .int(2)])
        try context.save()
        // Another context adds a key; undoing this context's last set leaves it.
        let theirs = try #require(try other.fetch(FetchRequest("Book")).first)
        try theirs.setValue(.string("signed"), forKey: "note")
        try other.save()
        try context.mergeSavedChanges()
        #expect(try context.undo())
        #expect(try book.extendedValues() == ["shelf": .string("B2"), "note": .string("signed")])
        #expect(try context.undo())
        #expect(try book.extendedValues() == ["note": .string("signed")])
    }

    @Test("a refresh or a merge keeps the keys set here and takes the others from the store", arguments: StoreKind.allCases)
    func refreshMerge(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Model(Self.description()))
        defer { cleanup() }
        let context = Context(store: store), other = Context(store: store)
        let book = try context.insert("Book")
        try book.setValue(.string("A1"), forKey: "shelf")
        try book.setValue(.int(1), forKey: "copies")
        try context.save()
        let theirs = try #require(try other.fetch(FetchRequest("Book")).first)
        try theirs.setValue(.int(5), forKey: "copies")
        try theirs.setValue(.string("signed"), forKey: "note")
        try other.save()
        try book.setValue(.string("B2"), forKey: "shelf")  // pending here
        try context.refresh(book, mergeChanges: true)
        #expect(try book.extendedValues() == ["shelf": .string("B2"), "copies": .int(5), "note": .string("signed")])
        #expect(book.changedValues() == ["shelf": .string("B2")])
        try context.save()
        try other.mergeSavedChanges()
        #expect(try theirs.extendedValues() == ["shelf": .string("B2"), "copies": .int(5), "note": .string("signed")])
        // Without keeping changes, the store's keys replace those set here.
        try book.setValue(.string("Z9"), forKey: "shelf")
        try context.refresh(book, mergeChanges: false)
        #expect(try book.value(forKey: "shelf") == .string("B2"))
    }

    @Test("a save conflict is settled key by key under every merge policy", arguments: StoreKind.allCases)
    func saveConflicts(kind: StoreKind) throws {
        let model = try Model(Self.description())
        for policy in [MergePolicy.objectWins, .storeWins, .overwrite] {
            let (store, cleanup) = try kind.open(model)
            defer { cleanup() }
            let context = Context(store: store), other = Context(store: store)
            context.mergePolicy = policy
            let book = try context.insert("Book")
            try book.setValue(.string("A1"), forKey: "shelf")
            try context.save()
            let theirs = try #require(try other.fetch(FetchRequest("Book")).first)
            try theirs.setValue(.string("C3"), forKey: "shelf")
            try theirs.setValue(.string("signed"), forKey: "note")
            try other.save()
            try book.setValue(.string("B2"), forKey: "shelf")
            try book.setValue(.int(4), forKey: "copies")
            try context.save()
            let expected: [String: Value] = switch policy {
            case .objectWins: ["shelf": .string("B2"), "copies": .int(4), "note": .string("signed")]
            case .storeWins: ["shelf": .string("C3"), "copies": .int(4), "note": .string("signed")]
            default: ["shelf": .string("B2"), "copies": .int(4)]
            }
            #expect(try book.extendedValues() == expected, "\(policy) here")
            #expect(!book.hasChanges)
            let fresh = try #require(try Context(store: store).fetch(FetchRequest("Book")).first)
            #expect(try fresh.extendedValues() == expected, "\(policy) stored")
        }
        // Under .error the conflict is reported and nothing is written.
        let (store, cleanup) = try kind.open(model)
        defer { cleanup() }
        let context = Context(store: store), other = Context(store: store)
        let book = try context.insert("Book")
        try context.save()
        let theirs = try #require(try other.fetch(FetchRequest("Book")).first)
        try theirs.setValue(.int(1), forKey: "copies")
        try other.save()
        try book.setValue(.int(2), forKey: "copies")
        guard case .saveFailed(let problems)? = amberError({ try context.save() }) else {
            Issue.record("a conflict on an extended attribute was not reported")
            return
        }
        #expect(problems.first?.rule == .conflict)
    }

    // MARK: Predicates and sorting

    /// One book's extended values, as the reference evaluates them.
    struct Sample {
        var key: Int64
        var values: [String: Value]
        func int(_ name: String) -> Int64? { if case .int(let v)? = values[name] { v } else { nil } }
        func double(_ name: String) -> Double? { if case .double(let v)? = values[name] { v } else { nil } }
        func string(_ name: String) -> String? { if case .string(let v)? = values[name] { v } else { nil } }
    }

    static func date(_ day: Int) -> Date { Date(timeIntervalSinceReferenceDate: Double(day) * 86_400 + 0.25) }
    static let codes = (0..<4).map { _ in UUID() }

    /// 300 books with random extended values of every comparable kind (some missing), saved.
    static func samples(_ context: Context) throws -> [Sample] {
        var random = SplitMix64(seed: 0x5EED)
        var samples: [Sample] = []
        var books: [ManagedObject] = []
        let words = ["abc", "abd", "Bob", "bébé", "zed", "ab", ""]
        for index in 0..<300 {
            let book = try context.insert("Book")
            try book.setValue(.string("t\(index)"), forKey: "title")
            var values: [String: Value] = [:]
            func maybe(_ name: String, _ value: Value) throws {
                guard random.next() % 5 != 0 else { return }
                values[name] = value
                try book.setValue(value, forExtendedKey: name)
            }
            try maybe("level", .int(Int64(random.next() % 101) - 50))
            // Now and then a Double JSON cannot write as itself: it compares as a REAL column would hold it.
            let specials: [Double] = [.nan, .infinity, -.infinity, -0.0, 0]
            try maybe("score", .double(random.next() % 8 == 0 ? specials[Int(random.next() % 5)] : Double(random.next() % 1000) / 997))
            try maybe("due", .date(date(Int(random.next() % 60))))
            try maybe("tag", .string(words[Int(random.next() % UInt64(words.count))]))
            try maybe("flag", .bool(random.next() % 2 == 0))
            try maybe("cost", .decimal(Decimal(Int(random.next() % 400)) / 10))
            try maybe("code", .uuid(codes[Int(random.next() % 4)]))
            try maybe("mixed", random.next() % 2 == 0 ? .int(Int64(random.next() % 10)) : .string("\(random.next() % 10)"))
            samples.append(Sample(key: 0, values: values))
            books.append(book)
        }
        try context.save()
        for (index, book) in books.enumerated() { samples[index].key = book.objectID.primaryKey ?? 0 }
        return samples
    }

    @Test("predicates on extended attributes agree with a brute-force evaluation, as do counts and sorting", arguments: StoreKind.allCases)
    func predicatesAgreeWithReference(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Model(Self.description()))
        defer { cleanup() }
        let context = Context(store: store)
        let samples = try Self.samples(context)
        let fold = { (text: String) in text.folding(options: [.caseInsensitive], locale: nil) }
        let cases: [(String, [Value], (Sample) -> Bool)] = [
            ("level > %@", [10], { ($0.int("level") ?? .min) > 10 }),
            ("level == %@", [3], { $0.int("level") == 3 }),
            ("level != %@", [3], { $0.int("level") != 3 }),
            ("level BETWEEN {-5, 5}", [], { (-5...5).contains($0.int("level") ?? 99) }),
            ("level IN {1, 2, 3}", [], { [1, 2, 3].contains($0.int("level") ?? 0) }),
            ("level IN %@", [.array([.int(-1), .int(7)])], { [-1, 7].contains($0.int("level") ?? 0) }),
            ("level == nil", [], { $0.values["level"] == nil }),
            ("NOT (level > 0)", [], { !(($0.int("level") ?? 0) > 0) }),
            ("score < %@", [.double(0.5)], { ($0.double("score") ?? 1) < 0.5 }),
            ("score >= %@", [.float(0.75)], { ($0.double("score") ?? 0) >= Double(Float(0.75)) }),
            ("score == 0", [], { $0.double("score") == 0 }),
            ("score > 1e300", [], { ($0.double("score") ?? 0) > 1e300 }),
            ("score < %@", [.double(-.infinity)], { _ in false }),
            ("level ==[c] 5", [], { $0.int("level") == 5 }),
            ("due < %@", [.date(Self.date(30))], { if case .date(let d)? = $0.values["due"] { d < Self.date(30) } else { false } }),
            ("due == %@", [.date(Self.date(7))], { $0.values["due"] == .date(Self.date(7)) }),
            ("tag BEGINSWITH 'ab'", [], { $0.string("tag")?.hasPrefix("ab") ?? false }),
            ("tag CONTAINS[c] 'B'", [], { $0.string("tag").map { fold($0).contains("b") } ?? false }),
            ("tag LIKE 'a*'", [], { $0.string("tag")?.hasPrefix("a") ?? false }),
            ("tag ==[cd] 'BEBE'", [], { $0.string("tag") == "bébé" }),
            ("flag == YES", [], { $0.values["flag"] == .bool(true) }),
            ("flag == NO", [], { $0.values["flag"] == .bool(false) }),
            ("cost > %@", [.decimal(Decimal(string: "10.5") ?? 0)], {
                if case .decimal(let d)? = $0.values["cost"] { d.number > Decimal(string: "10.5") ?? 0 } else { false } }),
            ("code == %@", [.uuid(Self.codes[1])], { $0.values["code"] == .uuid(Self.codes[1]) }),
            ("mixed == 5", [], { $0.values["mixed"] == .int(5) }),
            ("mixed == '5'", [], { $0.values["mixed"] == .string("5") }),
            ("level > 0 AND tag == 'abc' OR flag == NO", [], {
                (($0.int("level") ?? 0) > 0 && $0.string("tag") == "abc") || $0.values["flag"] == .bool(false) }),
            ("title == 't7' OR level < -45", [], { $0.key == samples[7].key || ($0.int("level") ?? 0) < -45 }),
        ]
        for (format, arguments, reference) in cases {
            let request = FetchRequest("Book", predicate: try FetchPredicate(format, arguments: arguments))
            let fetched = Set(try context.fetch(request).compactMap(\.objectID.primaryKey))
            let expected = Set(samples.filter(reference).map(\.key))
            #expect(fetched == expected, "\(format): \(fetched.count) fetched, \(expected.count) expected")
            #expect(try context.count(request) == expected.count, "\(format)")
            #expect(!expected.isEmpty || format.contains("infinity") || arguments.contains(.double(-.infinity)),
                    "\(format) selects nothing: the sample does not test it")
        }
        // Sorting: absent values first, then by value; the key breaks ties.
        let sorted = try context.fetch(FetchRequest("Book", sortedBy: [SortKey("level"), SortKey("title", ascending: false)]))
        let order = samples.sorted { a, b in
            let (x, y) = (a.int("level") ?? .min, b.int("level") ?? .min)
            return x != y ? x < y : a.key > b.key
        }.map(\.key)
        #expect(sorted.compactMap(\.objectID.primaryKey).map { key in samples.first { $0.key == key }?.int("level") }
            == order.map { key in samples.first { $0.key == key }?.int("level") })
        let folded = try context.fetch(FetchRequest("Book", where: "tag != nil", sortedBy: [SortKey("tag", caseInsensitive: true)]))
        let foldedTags = try folded.map { try $0.value(forKey: "tag") }.compactMap { if case .string(let s) = $0 { s.lowercased() } else { nil } }
        #expect(foldedTags == foldedTags.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        let descending = try context.fetch(FetchRequest("Book", sortedBy: [SortKey("tag", ascending: false)]))
        let tags = try descending.map { try $0.value(forKey: "tag") }.compactMap { if case .string(let s) = $0 { s } else { nil } }
        #expect(tags == tags.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.reversed())
    }

    @Test("key paths reach extended attributes through to-one and to-many relationships", arguments: StoreKind.allCases)
    func keyPaths(kind: StoreKind) throws {
        let (store, cleanup) = try kind.open(try Model(Self.description()))
        defer { cleanup() }
        let context = Context(store: store)
        let borges = try context.insert("Author"), cortazar = try context.insert("Author")
        try borges.setValue(.string("Georgie"), forKey: "nickname")
        for (title, author, shelf) in [("Ficciones", borges, "A1"), ("Aleph", borges, "B2"), ("Rayuela", cortazar, "B2")] {
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            try book.setValue(.string(shelf), forKey: "shelf")
            try book.setObject(author, forKey: "author")
        }
        try context.save()
        let byNickname = try context.fetch("Book", where: "author.nickname == 'Georgie'", sortedBy: [SortKey("title")])
        #expect(try titles(byNickname) == ["Aleph", "Ficciones"])
        #expect(try context.fetch("Author", where: "ANY books.shelf == 'A1'") == [borges])
        #expect(try context.fetch("Author", where: "ALL books.shelf == 'B2'") == [cortazar])
        #expect(try context.fetch("Book", sortedBy: [SortKey("author.nickname", ascending: false), SortKey("title")]).map(\.objectID)
            == [byNickname[0].objectID, byNickname[1].objectID, try #require(try context.fetch("Book", where: "title == 'Rayuela'").first).objectID])
    }

    @Test("predicates name the place of a clash, a value no stored form equals, and unknown keys of other entities")
    func predicateErrors() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = Context(store: try Self.open(directory))
        for (entity, format, arguments, at, words) in [
            ("Book", "Title == 'x'", [Value](), 1, "clashes with the modelled title"),
            ("Book", "shelf == %@", [.array([1])], 10, "Book.shelf is an extended attribute"),
            ("Book", "shelf.name == 'x'", [], 1, "no such attribute or relationship"),
            ("Shelf", "colour == 'red'", [], 1, "Shelf.colour: no such attribute"),
        ] {
            let error = amberError { _ = try context.fetch(FetchRequest(entity, predicate: try FetchPredicate(format, arguments: arguments))) }
            let unknown = words.hasPrefix("no such") || words.hasSuffix("no such attribute")
            guard let (position, message) = error.flatMap({ error -> (Int, String)? in
                switch error {  // an unknown name is an error of its own, with the same position and message
                case .invalidPredicate(let position, let message) where !unknown, .unknownKeyPath(let position, let message) where unknown:
                    (position, message)
                default: nil
                }
            }) else {
                Issue.record("\(format): \(String(describing: error))")
                continue
            }
            #expect(position == at, "\(format)")
            #expect(message.contains(words), "\(message)")
        }
        #expect(amberError { _ = try context.fetch(FetchRequest("Shelf", sortedBy: [SortKey("colour")])) } != nil)
    }

    // MARK: amber_extended

    /// What SQL `expression` gives for `document` and `key` (bound as ?1 and ?2): its type and text, or the error.
    static func evaluate(_ db: OpaquePointer?, _ expression: String, _ document: String, _ key: String) -> String {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT typeof(\(expression)), quote(\(expression))", -1, &statement, nil) == SQLITE_OK else {
            return "prepare failed"
        }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        sqlite3_bind_text(statement, 1, document, -1, transient)
        sqlite3_bind_text(statement, 2, key, -1, transient)
        guard sqlite3_step(statement) == SQLITE_ROW else { return "error" }
        return String(cString: sqlite3_column_text(statement, 0)) + " " + String(cString: sqlite3_column_text(statement, 1))
    }

    @Test("amber_extended gives what json_extract gives, on what Amber writes and on JSON written by hand")
    func extendedFunctionAgreesWithJSONExtract() throws {
        var db: OpaquePointer?
        #expect(sqlite3_open(":memory:", &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        guard let db else { return }
        SQLFunctions.register(on: db)
        var random = SplitMix64(seed: 0xF00D)
        var documents: [String] = []
        for _ in 0..<400 {
            var values: [String: Value] = [:]
            for index in 0..<Int(random.next() % 5) { values["k\(index)"] = Self.randomValue(&random) }
            if case .string(let text) = ExtendedValues.encode(values) { documents.append(text) }
        }
        documents += [
            "{}", " { \"k0\" : 1 , \"k1\" :\t\"a b\" }\n", "{\"k0\":[1,{\"k1\":\"}\"}],\"k1\":2}", "{\"k0\":\"a\\\"b\\u00e9\"}",
            "{\"k0\":1,\"k0\":2}", "{\"k0\":123456789012345678901}", "{\"k0\":-0}", "{\"k0\":1e3,\"k1\":-2.5E-3}", "{\"k0\":true,\"k1\":false,\"k2\":null}",
            "{\"k0\":{\"k1\":[]}}", "{\"k0\": [ 1 , \"a b\" , {\"x\" : null} ] }", "{\"k1\":\"\",\"k0\":\"\"}", "{\"k0\":999999999999999999}", "{\"k0\":-999999999999999999}", "[1,2]", "7",
        ]
        for document in documents {
            for key in ["k0", "k1", "k2", "k9", "#"] {
                let ours = Self.evaluate(db, "amber_extended(?1, ?2)", document, key)
                let sqlites = Self.evaluate(db, "json_extract(?1, '$.\"' || ?2 || '\"')", document, key)
                #expect(ours == sqlites, "\(document) [\(key)]: \(ours) vs \(sqlites)")
            }
        }
        // Malformed JSON is an error either way; an escaped key is found, as JSON means it.
        for document in ["{\"k0\":01}", "{\"k0\" 1}", "{\"k0\":tru}", "{\"k0\":\"open", "{\"k1\":1,", "{\"k0\":[1,2"] {
            #expect(Self.evaluate(db, "amber_extended(?1, ?2)", document, "k0") == "error", "\(document)")
        }
        #expect(Self.evaluate(db, "amber_extended(?1, ?2)", "{\"\\u006b0\":5}", "k0") == "integer 5")
    }
}
