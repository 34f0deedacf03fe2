import CSQLite
import Foundation
import Synchronization
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

@Suite struct TransformerTests {
    /// Which forms of a transformed value are current is kept per slot: two
    /// bits in a word up to 32 attributes, an array beyond. Both sides of the
    /// boundary decode lazily, encode at save, and roll back alike.
    @Test(arguments: [31, 32, 33, 40])
    func codecStatesHoldForWideEntities(attributeCount: Int) throws {
        var attributes = (0..<(attributeCount - 2)).map { Attribute.string("s\($0)") }
        attributes += [Attribute.transformable("first"), Attribute.transformable("last", transformers: ["JSON"])]
        let model = try Model(ModelDescription(entities: [EntityDescription("Wide", attributes: attributes)]))
        let store = try Store.inMemory(model: model)
        let writer = Context(store: store)
        let wide = try writer.insert("Wide")
        try wide.setValue(["a", 1], forKey: "first")
        try wide.setValue(["b": 2.5], forKey: "last")
        try writer.save()
        let reader = Context(store: store)
        let fetched = try #require(try reader.fetch("Wide").first)
        #expect(try fetched.value(forKey: "last") == ["b": 2.5])
        #expect(try fetched.value(forKey: "first") == ["a", 1])
        try fetched.setValue(["c"], forKey: "last")
        reader.rollback()
        #expect(try fetched.value(forKey: "last") == ["b": 2.5], "rolled back to the stored form, decoded afresh")
        try fetched.setValue(["d"], forKey: "last")
        try reader.save()
        #expect(try Context(store: store).fetch("Wide").first?.value(forKey: "last") == ["d"])
    }

    /// A direct call refuses a value of another class before the transformer runs, both ways.
    @Test func directCallsRefuseValuesOfAnotherClass() throws {
        let registry = Registry()
        let calls = Mutex(0)
        try registry.register(Transformer(name: "Shout", from: "String", to: "String",
                                          forward: { value in calls.withLock { $0 += 1 }; return value },
                                          reverse: { value in calls.withLock { $0 += 1 }; return value }))
        let shout = try registry.transformer(named: "Shout")
        #expect(try shout.forward("hey") == "hey")
        for call in [{ _ = try shout.forward(42) }, { _ = try shout.reverse(.binary(Data([1]))) }] {
            guard case .transformerFailed(_, "Shout", _, let message)? = amberError(call) else {
                Issue.record("a value of another class reached the transformer")
                continue
            }
            #expect(message.contains("takes String, not") && message.contains("nothing was called"))
        }
        #expect(calls.withLock { $0 } == 1)
        #expect(amberError { _ = try registry.transformer(named: "Shoot") } == .unknownTransformer(name: "Shoot", suggestion: "Shout"))
    }

    @Test func transformableValuesRoundTripThroughTheStore() throws {
        let registry = try colorRegistry()
        let store = try Store.inMemory(model: try coverModel(registry))
        let context = Context(store: store)
        let book = try context.insert("Book")
        try book.setValue("Dune", forKey: "title")
        let sand = try color(0.9, 0.7, 0.4, 1, in: registry)
        try book.setValue(sand, forKey: "cover")
        try context.save()
        let reader = Context(store: store)
        let fetched = try reader.fetch("Book")[0]
        #expect(try fetched.value(forKey: "cover") == sand)
        let fields = try #require(registry.structClass(named: "Color")).fieldValues(of: try fetched.value(forKey: "cover"))
        #expect(fields == ["r": .float(0.9), "g": .float(0.7), "b": .float(0.4), "a": .float(1)])
        // Equality predicates compare the stored form.
        #expect(try reader.fetch("Book", where: "cover == %@", sand).count == 1)
        #expect(try reader.fetch("Book", where: "cover != %@", try color(0, 0, 0, 1, in: registry)).count == 1)
        #expect(amberError { _ = try reader.fetch("Book", where: "cover > %@", sand) } != nil)
    }

    @Test func aReverseWithOnlyAValueFunctionIsCheckedAsTheBytePathIs() throws {
        // No byte function: the value API calls the value function, and checks its result.
        let registry = try colorRegistry()
        try registry.register(Transformer(
            name: "ShortColor", from: "Color", to: "Binary",
            forward: { value in
                guard case .custom(let color) = value else { return value }
                return .binary(color.bytes)
            },
            reverse: { _ in .custom(CustomValue(className: "Color", bytes: Data(count: 12))) }))
        let transformer = try registry.transformer(named: "ShortColor")
        let red = try color(1, 0, 0, 1, in: registry)
        let stored = try transformer.forward(red)
        guard case .custom(let redBytes) = red else {
            Issue.record("a colour is a custom value")
            return
        }
        #expect(stored == .binary(redBytes.bytes))
        let error = amberError { _ = try transformer.reverse(stored) }
        #expect(error?.description.contains("reverse returned Color of 12 bytes (sizeof Color is 16), but it declares Color") == true,
                "\(String(describing: error))")
    }

    @Test func settingAValueOfAnotherClassOrSizeIsRefused() throws {
        let registry = try colorRegistry()
        try registry.declare(.opaque(name: "Key", size: 32))
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.transformable("cover", valueClass: "Color", transformers: ["ColorToData"])
                Attribute.undefined("secret", valueClass: "Key")
                Attribute.transformable("tags")
            }
        }, registry: registry)
        let context = Context(store: try Store.inMemory(model: model))
        let book = try context.insert("Book")
        #expect(amberError { try book.setValue("red", forKey: "cover") }
            == .invalidValue(place: "Book.cover", expected: "Color", given: "String \"red\""))
        let short = Value.custom(CustomValue(className: "Color", bytes: Data(count: 12)))
        #expect(amberError { try book.setValue(short, forKey: "cover") }
            == .invalidValue(place: "Book.cover", expected: "Color", given: "Color of 12 bytes (sizeof Color is 16)"))
        #expect(amberError { try book.setValue(.custom(CustomValue(className: "Key", bytes: Data(count: 31))), forKey: "secret") }
            == .invalidValue(place: "Book.secret", expected: "Key", given: "Key of 31 bytes (32 expected)"))
        #expect(amberError { try book.setValue(.decimal(1), forKey: "tags") } != nil, "decimals are not plist-like")
        #expect(try book.value(forKey: "cover") == .null, "nothing changed")
        try book.setValue(["a", 1, [true]], forKey: "tags")
    }

    /// A transformer nobody registered, with no near name, is reported with
    /// how to supply it; a store saved with it, opened where it is missing,
    /// says the same (not "not an Amber store").
    @Test func aMissingTransformerSaysHowToSupplyOne() throws {
        let registry = Registry()
        try registry.register(Transformer(name: "Shout", from: "String", to: "String", source: "test",
                                          forward: { value in value }, reverse: { value in value }))
        let description = ModelDescription {
            EntityDescription("Note") { Attribute.transformable("text", valueClass: "String", transformers: ["Shout"]) }
        }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notes.amber").path
        let context = Context(store: try Store(path: path, model: try Model(description, registry: registry)))
        try context.insert("Note").setValue("hello", forKey: "text")
        try context.save()
        for attempt in [{ _ = try Model(description, registry: Registry()) }, { _ = try Store(openingExisting: path, registry: Registry()) }] {
            guard case .invalidModel(let problems)? = amberError(attempt) else {
                Issue.record("expected the model's problems, got \(errorText(attempt))")
                continue
            }
            let text = problems.map(\.description).joined()
            #expect(text.hasPrefix("Note.text: Shout: no such transformer; register one before binding the model: a plugin"), "\(text)")
            #expect(text.contains("--secure-unarchiver Shout") && text.contains("--transformer Shout=archive") && text.contains("PropertyList values"), "\(text)")
        }
        #expect(try Context(store: try Store(openingExisting: path, registry: registry)).fetch("Note").first?.value(forKey: "text") == "hello")
        // So is a value class nobody declared.
        let gauge = ModelDescription { EntityDescription("Dial") { Attribute.undefined("reading", valueClass: "Gauge") } }
        guard case .invalidModel(let problems)? = amberError({ _ = try Model(gauge, registry: Registry()) }) else {
            Issue.record("expected the model's problems")
            return
        }
        #expect(problems.map(\.description).first?.hasPrefix("Dial.reading: Gauge: no such value class; declare it before binding the model: "
            + "in the model file's valueClasses") == true, "\(problems)")
    }

    @Test func bindingReportsMisspellingsAndChainsThatDoNotLineUp() throws {
        let registry = try colorRegistry()
        try registry.register(Transformer(name: "Deflate", from: "Binary", to: "Binary", forward: { $0 }, reverse: { $0 }))
        try registry.register(Transformer(name: "Tint", from: "Color", to: "Color", forward: { $0 }, reverse: { $0 }))
        try registry.register(Transformer(name: "OneWay", from: "Binary", to: "String", forward: { _ in "x" }))
        let description = ModelDescription {
            EntityDescription("Book") {
                Attribute.transformable("a", valueClass: "Colour", transformers: ["ColorToData"])
                Attribute.transformable("b", valueClass: "Color", transformers: ["ColourToData"])
                Attribute.transformable("c", valueClass: "Color", transformers: ["Deflate", "ColorToData"])
                Attribute.transformable("d", valueClass: "Color", transformers: ["Tint"])
                Attribute.transformable("e", valueClass: "Color", transformers: ["ColorToData", "OneWay"])
                Attribute.transformable("f", valueClass: "Color")
                Attribute.string("g").stored(in: "a")
                Attribute.undefined("h", valueClass: "Color", transformers: ["ColorToData"])
            }
        }
        guard case .invalidModel(let problems) = amberError({ _ = try Model(description, registry: registry) }) else {
            Issue.record("expected invalidModel")
            return
        }
        #expect(problems.map(\.description) == [
            "Book.a: Colour: no such value class; did you mean Color?",
            "Book.b: ColourToData: no such transformer; did you mean ColorToData?",
            "Book.c: link 1, transformer \"Deflate\" takes Binary but receives Color (the attribute's value class)",
            "Book.d: the chain ends in Color, which cannot be stored; it must end in Binary, String, Integer or Double",
            "Book.e: transformer \"OneWay\" is not reversible, so stored values could never be read back",
            "Book.f: link 1, transformer \"AmberArchive\" takes PropertyList but receives Color (the attribute's value class)",
            "Book.g: valueClass, transformer and storage apply to transformable and undefined attributes, not to string",
            "Book.h: a transient attribute with transformers needs storage: the persistent attribute that keeps its encoded form",
        ])
    }

    @Test func duplicateNamesAreRefusedNamingBothSources() throws {
        let registry = try colorRegistry()
        let error = amberError {
            try registry.register(Transformer(name: "ColorToData", from: "Color", to: "Binary", source: "libother.so",
                                              forward: { $0 }, reverse: { $0 }))
        }
        #expect(error?.description == "transformer \"ColorToData\" from libother.so refused: the name is already registered by test")
        #expect(amberError { try registry.declare(.opaque(name: "Color", size: nil), source: "app") }?.description
            == "value class \"Color\" from app refused: the name is already registered by Swift")
        #expect(amberError { try registry.declare(.opaque(name: "String", size: nil)) } != nil, "built-in names are reserved")
        // A model may not redeclare a registry class either.
        let model = ModelDescription { EntityDescription("A") { Attribute.string("s") } }.declaring(.opaque(name: "Color", size: 4))
        #expect(amberError { _ = try Model(model, registry: registry) }?.description.contains("valueClasses.Color: already declared by Swift") == true)
    }

    @Test(arguments: [Behaviour.Mode.throwing, .wrongClass, .wrongSize])
    func aFailingOrLyingTransformerFailsTheSaveAndKeepsTheChanges(mode: Behaviour.Mode) throws {
        let behaviour = Behaviour()
        let registry = try colorRegistry(behaviour: behaviour)
        let store = try Store.inMemory(model: try coverModel(registry))
        let context = Context(store: store)
        let plain = try context.insert("Book")
        try plain.setValue("No cover", forKey: "title")
        let book = try context.insert("Book")
        try book.setValue("Dune", forKey: "title")
        let sand = try color(0.9, 0.7, 0.4, 1, in: registry)
        try book.setValue(sand, forKey: "cover")

        behaviour.mode = mode == .wrongSize ? .wrongClass : mode  // forward has no size to lie about
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("the save should fail")
            return
        }
        #expect(problems.count == 1)
        #expect(problems[0].objectID == book.objectID)
        #expect(problems[0].place == "Book.cover")
        #expect(problems[0].rule == .transformer)
        #expect(problems[0].message.hasPrefix("transformer \"ColorToData\" (test) forward"))
        #expect(try Context(store: store).count(FetchRequest("Book")) == 0, "nothing written, not even the other book")
        #expect(context.insertedObjects.count == 2)
        #expect(try book.value(forKey: "cover") == sand)

        behaviour.mode = .honest
        try context.save()
        // Reading through a lying reverse is an error on that attribute only.
        behaviour.mode = mode
        let reader = Context(store: store)
        let fetched = try reader.fetch("Book", where: "title == 'Dune'")[0]
        let error = amberError { _ = try fetched.value(forKey: "cover") }
        guard case .transformerFailed(let place, let transformer, _, let message) = error else {
            Issue.record("expected transformerFailed, got \(String(describing: error))")
            return
        }
        #expect(place.hasPrefix("Book.cover of amber://"))
        #expect(transformer == "ColorToData")
        #expect(message.hasPrefix("reverse"))
        #expect(try fetched.value(forKey: "title") == "Dune", "other attributes stay readable")
    }

    @Test func lazyDecodingDecodesOnFirstReadOnly() throws {
        let counter = CallCounter()
        let registry = try colorRegistry(counter: counter)
        let store = try Store.inMemory(model: try coverModel(registry))
        try fillCovers(store, registry, count: 10)
        counter.reset()
        let context = Context(store: store)
        let books = try context.fetch("Book")
        #expect(counter.reverse == 0, "nothing decoded at fetch")
        _ = try books[0].value(forKey: "cover")
        _ = try books[0].value(forKey: "cover")
        #expect(counter.reverse == 1, "decoded once, then cached")
        #expect(!books[0].hasChanges, "decoding is not a change")
        try context.save()
        #expect(counter.forward == 0, "an unchanged value is never re-encoded")
    }

    @Test func eagerDecodingDecodesAtFetch() throws {
        let counter = CallCounter()
        let registry = try colorRegistry(counter: counter)
        let store = try Store.inMemory(model: try coverModel(registry, decode: .eager))
        try fillCovers(store, registry, count: 10)
        counter.reset()
        let books = try Context(store: store).fetch("Book")
        #expect(counter.reverse == 10)
        for book in books { _ = try book.value(forKey: "cover") }
        #expect(counter.reverse == 10, "reads use the values decoded at fetch")
    }

    @Test func encodingAtSaveEncodesOnceForManySets() throws {
        let counter = CallCounter()
        let registry = try colorRegistry(counter: counter)
        let context = Context(store: try Store.inMemory(model: try coverModel(registry)))
        let book = try context.insert("Book")
        try book.setValue("Dune", forKey: "title")
        for i in 0..<5 { try book.setValue(try color(Float(i), 0, 0, 1, in: registry), forKey: "cover") }
        #expect(counter.forward == 0)
        try context.save()
        #expect(counter.forward == 1)
    }

    @Test func immediateEncodingEncodesOnEverySet() throws {
        let counter = CallCounter()
        let behaviour = Behaviour()
        let registry = try colorRegistry(counter: counter, behaviour: behaviour)
        let context = Context(store: try Store.inMemory(model: try coverModel(registry, encode: .immediate)))
        let book = try context.insert("Book")
        try book.setValue("Dune", forKey: "title")
        for i in 0..<5 { try book.setValue(try color(Float(i), 0, 0, 1, in: registry), forKey: "cover") }
        #expect(counter.forward == 5)
        try context.save()
        #expect(counter.forward == 5, "save reuses the encodings")
        // With immediate encoding a failure surfaces at the set, and nothing changes.
        behaviour.mode = .throwing
        let before = try book.value(forKey: "cover")
        #expect(amberError { try book.setValue(try color(9, 9, 9, 9, in: registry), forKey: "cover") } != nil)
        #expect(try book.value(forKey: "cover") == before)
        #expect(!book.hasChanges)
    }

    @Test func rollbackRestoresTransformedValues() throws {
        let registry = try colorRegistry()
        let store = try Store.inMemory(model: try coverModel(registry))
        try fillCovers(store, registry, count: 1)
        let context = Context(store: store)
        let book = try context.fetch("Book")[0]
        let original = try book.value(forKey: "cover")
        try book.setValue(try color(0, 0, 0, 0, in: registry), forKey: "cover")
        #expect(book.isUpdated)
        #expect(book.changedValues().keys.sorted() == ["cover"])
        context.rollback()
        #expect(try book.value(forKey: "cover") == original)
        #expect(!context.hasChanges)
    }

    @Test func transientShadowAttributeStaysInSyncWithItsStorage() throws {
        let counter = CallCounter()
        let registry = try colorRegistry(counter: counter)
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.undefined("color", valueClass: "Color", transformers: ["ColorToData"]).stored(in: "colorData")
                Attribute.binary("colorData")
            }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let book = try context.insert("Book")
        let red = try color(1, 0, 0, 1, in: registry)
        try book.setValue(red, forKey: "color")
        try context.save()
        #expect(try book.value(forKey: "colorData") == .binary(Data(try #require(red.customBytes))))

        let reader = Context(store: store)
        let fetched = try reader.fetch("Book")[0]
        counter.reset()
        #expect(try fetched.value(forKey: "color") == red, "the transient value is decoded from its storage")
        #expect(counter.reverse == 1)
        // Setting the storage directly makes the transient attribute decode afresh.
        let blue = try color(0, 0, 1, 1, in: registry)
        try fetched.setValue(.binary(Data(try #require(blue.customBytes))), forKey: "colorData")
        #expect(try fetched.value(forKey: "color") == blue)
        reader.rollback()
        #expect(try fetched.value(forKey: "color") == red)
        #expect(amberError { _ = try reader.fetch("Book", where: "color == nil") } != nil, "transient: not in the store")
    }

    @Test func corruptStoredBytesFailOnlyThatAttribute() throws {
        let registry = Registry()
        let model = try Model(ModelDescription {
            EntityDescription("Note") {
                Attribute.string("title")
                Attribute.transformable("tags")
            }
        }, registry: registry)
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notes.amber").path
        do {
            let context = Context(store: try Store(path: path, model: model))
            for title in ["good", "bad"] {
                let note = try context.insert("Note")
                try note.setValue(.string(title), forKey: "title")
                try note.setValue(["x", ["y": 1]], forKey: "tags")
            }
            try context.save()
        }
        var db: OpaquePointer?
        sqlite3_open(path, &db)
        sqlite3_exec(db, "UPDATE Note SET tags = x'414D42520107FF' WHERE title = 'bad'", nil, nil, nil)
        sqlite3_close(db)
        let context = Context(store: try Store(path: path, model: model))
        let notes = try context.fetch("Note", sortedBy: [.ascending("title")])
        #expect(try notes[1].value(forKey: "tags") == ["x", ["y": 1]])
        #expect(try notes[0].value(forKey: "title") == "bad")
        let error = amberError { _ = try notes[0].value(forKey: "tags") }
        #expect(error?.description.contains("transformer \"AmberArchive\" (built-in) reverse failed: archive byte") == true)
    }

    @Test func jsonTransformerKeepsValuesReadableInSQL() throws {
        let registry = Registry()
        let model = try Model(ModelDescription {
            EntityDescription("Note") {
                Attribute.transformable("meta", transformers: [Registry.jsonTransformerName])
            }
        }, registry: registry)
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let meta: Value = ["tags": ["a", "b"], "stars": 4, "seen": .date(Date(timeIntervalSince1970: 1.5)),
                           "raw": .binary(Data([1, 2])), "id": .uuid(UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")!)]
        let note = try context.insert("Note")
        try note.setValue(meta, forKey: "meta")
        try context.save()
        #expect(try Context(store: store).fetch("Note")[0].value(forKey: "meta") == meta)
        let statement = try store.connection.statement("SELECT json_extract(meta, '$.tags[1]'), json_extract(meta, '$.stars') FROM Note")
        defer { statement.reset() }
        #expect(try statement.step())
        #expect(try statement.string(0) == "b")
        #expect(statement.int64(1) == 4)
    }

    @Test func defaultArchiveStoresPlistLikeValues() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Note") { Attribute.transformable("payload") }
        }, registry: Registry())
        let store = try Store.inMemory(model: model)
        let context = Context(store: store)
        let payload: Value = [
            "n": .null, "b": true, "i": .int(-1 << 40), "d": 2.5, "f": .float(1.25), "s": "héllo",
            "data": .binary(Data([0, 255])), "when": .date(Date(timeIntervalSinceReferenceDate: 1.000_000_1)),
            "id": .uuid(UUID()), "list": [1, [2, [3]]], "empty": [:],
        ]
        try context.insert("Note").setValue(payload, forKey: "payload")
        try context.save()
        #expect(try Context(store: store).fetch("Note")[0].value(forKey: "payload") == payload)
    }

    @Test func modelFilesDeclareValueClassesAndTransformableAttributes() throws {
        let registry = try colorRegistry()
        let json = """
        {"valueClasses": [
            {"name": "Point", "kind": "struct", "fields": [{"name": "x", "type": "double"}, {"name": "y", "type": "double"}]},
            {"name": "Segment", "kind": "struct", "fields": [{"name": "from", "type": "Point"}, {"name": "to", "type": "Point"}]},
            {"name": "Digest", "kind": "opaque", "size": 32}
         ],
         "entities": [{"name": "Shape", "attributes": [
            {"name": "fill", "type": "transformable", "valueClass": "Color", "transformer": "ColorToData", "decode": "eager"},
            {"name": "tags", "type": "transformable", "transformer": ["JSON"], "encode": "immediate"},
            {"name": "scratch", "type": "undefined", "transient": true, "valueClass": "Segment"}
         ]}]}
        """
        let description = try ModelDescription(json: Data(json.utf8))
        let model = try Model(description, registry: registry)
        let shape = try model.entity(named: "Shape")
        #expect(try shape.attribute(named: "fill").transformerNames == ["ColorToData"])
        #expect(try shape.attribute(named: "tags").codec?.encodePolicy == .immediate)
        #expect(try shape.attribute(named: "scratch").valueClassName == "Segment")
        #expect(try ModelDescription(json: Data(description.jsonText().utf8)) == description)
        #expect(amberError { _ = try ModelDescription(json: Data(#"{"entities": [], "valueClasses": [{"name": "X", "kind": "blob"}]}"#.utf8)) }?
            .description == "$.valueClasses[0].kind: expected \"struct\" or \"opaque\", found \"blob\"")
    }
}

/// Saves `count` books with covers into `store`.
private func fillCovers(_ store: Store, _ registry: Registry, count: Int) throws {
    let context = Context(store: store)
    for i in 0..<count {
        let book = try context.insert("Book")
        try book.setValue(.string("Book \(i)"), forKey: "title")
        try book.setValue(try color(Float(i) / 10, 0.5, 0.5, 1, in: registry), forKey: "cover")
    }
    try context.save()
}

extension Value {
    var customBytes: Data? {
        if case .custom(let c) = self { return c.bytes }
        return nil
    }
}
