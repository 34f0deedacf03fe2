import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// The real Xcode models, in ../shared/models beside the repository (CI clones it there).
let sharedModels = repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/models")

/// The seven real models' files, named so that a missing one fails the tests.
enum RealModel: String, CaseIterable, CustomTestStringConvertible {
    case coreStore = "JohnEstropia__CoreStore__TestsModel.xml"
    case cloudKitShare = "delawaremathguy__CoreDataCloudKitShare__CoreDataCloudKitShare.xml"
    case bookmarks = "duckduckgo__iOS__BookmarksAndFolders.xml"
    case magicalRecord = "magicalpanda__MagicalRecord__TestModel.xml"
    case composite = "phimage__MomXML__TestsModel-composite.xml"
    case cloudKitDemo = "ralfebert__SynchronizingALocalStoreToTheCloud__CoreDataCloudKitDemo.xml"
    case mogenerator = "rentzsch__mogenerator__test.xml"

    var url: URL { sharedModels.appendingPathComponent(rawValue) }
    var testDescription: String { rawValue }

    func imported(_ options: XcodeImportOptions = XcodeImportOptions(registry: Registry())) throws -> XcodeModelImport {
        try XcodeModelImport(contentsOf: url, options: options)
    }
}

/// A model file around `body` (entities and other model-level elements), as Xcode writes it.
func xcodeXML(_ body: String, modelAttributes: String = "") -> Data {
    Data("""
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22222" \
    systemVersion="22G91" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier=""\(modelAttributes)>
    \(body)
    </model>
    """.utf8)
}

/// The import of `body`, with `registry`'s names known.
func importXML(_ body: String, registry: Registry = Registry(), secure: Set<String> = []) throws -> XcodeModelImport {
    try XcodeModelImport(xml: xcodeXML(body), file: "test.xml",
                         options: XcodeImportOptions(registry: registry, secureUnarchiverSubclasses: secure))
}

extension ModelDescription {
    func entity(_ name: String) throws -> EntityDescription {
        try #require(entities.first { $0.name == name }, "no entity \(name)")
    }
}

extension EntityDescription {
    func attribute(_ name: String) throws -> AttributeDescription {
        try #require(attributes.first { $0.name == name }, "no attribute \(self.name).\(name)")
    }

    func relationship(_ name: String) throws -> RelationshipDescription {
        try #require(relationships.first { $0.name == name }, "no relationship \(self.name).\(name)")
    }
}

/// The text of the AmberError `body` throws, or "no error".
func errorText(_ body: () throws -> Void) -> String {
    amberError(body).map { "\($0)" } ?? "no error"
}

extension XcodeModelImport {
    /// The notes about `place`, as text.
    func notes(at place: String) -> [String] { notes.filter { $0.place == place }.map(\.message) }
}

@Suite struct XcodeImportTests {
    // MARK: The seven real models

    /// Every real model imports, binds, and stores an object of each of its
    /// concrete entities (every stored attribute set, to-ones and one member
    /// per to-many linked), which a new store handle reads back exactly.
    @Test(arguments: RealModel.allCases) func realModelStoresAndReadsBackEveryEntity(_ file: RealModel) throws {
        let registry = Registry()
        let imported = try file.imported(XcodeImportOptions(registry: registry))
        let model = try Model(imported.model, registry: registry)
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("model.amber").path

        let context = Context(store: try Store(path: path, model: model))
        let concrete = model.entities.filter { !$0.isAbstract }
        var objects: [String: ManagedObject] = [:]
        var expected: [String: [String: Value]] = [:]
        for (number, entity) in concrete.enumerated() {
            let object = try context.insert(entity)
            objects[entity.name] = object
            for attribute in entity.attributes where !attribute.isTransient && attribute.derivation == nil {
                let value = try Self.sample(for: attribute, number: number)
                try object.setValue(value, for: attribute)
                expected[entity.name, default: [:]][attribute.name] = value
            }
        }
        // Link each object to another object of its destination (not itself), through every relationship that has one.
        var links: [String: [String: ObjectID]] = [:]
        for entity in concrete {
            guard let object = objects[entity.name] else { continue }
            for relationship in entity.relationships {
                let destination = model.destination(of: relationship)
                let candidates = concrete.filter { $0.isKind(of: destination) }.compactMap { objects[$0.name] }
                guard let member = candidates.first(where: { $0 !== object }) else { continue }
                if relationship.isToMany {
                    try object.add(member, to: relationship)
                } else if try object.object(for: relationship) == nil {
                    try object.setObject(member, for: relationship)
                }
            }
        }
        try context.save()
        for entity in concrete {
            guard let object = objects[entity.name] else { continue }
            for relationship in entity.relationships where !relationship.isToMany {
                if let target = try object.object(for: relationship) { links[entity.name, default: [:]][relationship.name] = target.objectID }
            }
        }

        // A new store handle (binding the model the store carries, from its JSON) and a new context.
        let reopened = Context(store: try Store(openingExisting: path, registry: registry))
        for entity in concrete {
            var request = FetchRequest(entity.name)
            request.includesSubentities = false
            let fetched = try reopened.fetch(request)
            try #require(fetched.count == 1, "\(entity.name): \(fetched.count) objects")
            for (name, value) in expected[entity.name] ?? [:] {
                let read = try fetched[0].value(forKey: name)
                #expect(read.isIdentical(to: value), "\(entity.name).\(name): wrote \(value), read \(read)")
            }
            for (name, target) in links[entity.name] ?? [:] {
                #expect(try fetched[0].object(forKey: name)?.objectID == target, "\(entity.name).\(name)")
            }
            for relationship in entity.relationships where relationship.isToMany && !relationship.isOptional {
                #expect(try fetched[0].count(of: fetched[0].entity.relationship(named: relationship.name)) >= 1, "\(relationship) is required")
            }
        }
        #expect(expected.values.map(\.count).reduce(0, +) > 0)
    }

    /// As in Core Data, a required to-many without a minimum may be empty:
    /// every real model saves an object of each concrete entity with only
    /// its required to-ones linked (the bookmarks model's folders have a
    /// required `children`); a `minCount` is enforced as declared.
    @Test(arguments: RealModel.allCases) func realModelSavesObjectsWithEmptyToManys(_ file: RealModel) throws {
        let registry = Registry()
        let model = try Model(try file.imported(XcodeImportOptions(registry: registry)).model, registry: registry)
        let context = Context(store: try Store.inMemory(model: model))
        let concrete = model.entities.filter { !$0.isAbstract }
        var objects: [String: ManagedObject] = [:]
        for (number, entity) in concrete.enumerated() {
            let object = try context.insert(entity)
            objects[entity.name] = object
            for attribute in entity.attributes where !attribute.isTransient && attribute.derivation == nil {
                try object.setValue(try Self.sample(for: attribute, number: number), for: attribute)
            }
        }
        for entity in concrete {
            guard let object = objects[entity.name] else { continue }
            for relationship in entity.relationships where !relationship.isToMany && !relationship.isOptional {
                let destination = model.destination(of: relationship)
                let target = concrete.filter { $0.isKind(of: destination) }.compactMap { objects[$0.name] }.first { $0 !== object }
                try object.setObject(target, for: relationship)
            }
        }
        try context.save()
        let required = concrete.flatMap(\.relationships).filter { $0.isToMany && !$0.isOptional }
        #expect(file != .bookmarks || !required.isEmpty, "the bookmarks model has a required to-many to leave empty")
        for entity in concrete {
            var request = FetchRequest(entity.name)
            request.includesSubentities = false
            #expect(try Context(store: context.store).count(request) == 1, "\(entity.name)")
        }
        // A minimum declared in the model file is kept.
        let counted = try importXML("""
            <entity name="Folder" representedClassName="Folder"><relationship name="items" toMany="YES" minCount="2" \
            deletionRule="Nullify" destinationEntity="Item" inverseName="folder" inverseEntity="Item"/></entity>
            <entity name="Item" representedClassName="Item"><relationship name="folder" optional="YES" maxCount="1" \
            deletionRule="Nullify" destinationEntity="Folder" inverseName="items" inverseEntity="Folder"/></entity>
            """)
        let strict = Context(store: try Store.inMemory(model: try Model(counted.model)))
        let folder = try strict.insert("Folder")
        try folder.add(try strict.insert("Item"), to: try strict.store.model.entity(named: "Folder").relationship(named: "items"))
        #expect(errorText { try strict.save() }.contains("Folder.items: has 1 member, fewer than its minimum of 2"))
    }

    /// A note repeated for many attributes is given once with its places.
    @Test func repeatedNotesAreGrouped() throws {
        let imported = try importXML("""
            <entity name="A"><attribute name="x" optional="YES" attributeType="Transformable" customClassName="NSNumber"/>
            <attribute name="y" optional="YES" attributeType="Transformable" customClassName="NSNumber"/>
            <attribute name="z" optional="YES" attributeType="Integer 16" defaultValueString="NO"/></entity>
            """)
        let groups = XcodeImportNote.grouped(imported.notes)
        let numbers = try #require(groups.first { $0.places.count > 1 })
        #expect(numbers.places == ["A.x", "A.y"] && numbers.description.hasSuffix(", at 2 places: A.x, A.y"))
        #expect(groups.count == Set(imported.notes.map(\.message)).count && groups.contains { $0.places == ["A.z"] })
        #expect(groups.flatMap(\.places).count == imported.notes.count)
    }

    /// A note does not say values are stored where the problem after it says
    /// they cannot be: a registered class with no transformer is told to name one, not that the archive stores it.
    @Test func notesDoNotContradictTheProblemsAfterThem() throws {
        let registry = try colorRegistry()
        let imported = try importXML("""
            <entity name="Tag"><attribute name="color" optional="YES" attributeType="Transformable" customClassName="Color"/></entity>
            """, registry: registry)
        #expect(imported.notes(at: "Tag.color").count == 1)
        #expect(imported.notes(at: "Tag.color").first?.hasPrefix("value class Color is not plist-like, so Amber's archive cannot store it") == true)
        #expect(!imported.notes.contains { $0.message.contains("values are stored through Amber's archive") })
        #expect(errorText { _ = try Model(imported.model, registry: registry) }.contains("transformer \"AmberArchive\" takes PropertyList but receives Color"))
    }

    /// A value of `attribute`'s type or value class, different per entity.
    static func sample(for attribute: Attribute, number: Int) throws -> Value {
        let n = Int64(number)
        switch attribute.type {
        case .integer16:
            // Within the attribute's bounds (mogenerator's Human.age has a minimum of 0).
            var value = 1234 + n
            if case .int(let high)? = attribute.validation.maxValue { value = Swift.min(value, high) }
            if case .int(let low)? = attribute.validation.minValue { value = Swift.max(value, low) }
            return .int(value)
        case .integer32: return .int(2_000_000_000 + n)
        case .integer64: return .int(9_007_199_254_740_993 + n)  // not exact as a Double
        case .decimal: return .decimal(try #require(ScaledDecimal("12345678901234567890.12345")))
        case .double: return .double(0.1 + 0.2 + Double(n))
        case .float: return .float(1.25 + Float(n))
        case .string: return .string("Crème brûlée #\(n)")
        case .boolean: return .bool(number % 2 == 0)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: 123_456_789.123_456 + Double(n)))
        case .binary: return .binary(Data([0, 1, 2, 0xFF, UInt8(number)]))
        case .uuid: return .uuid(UUID())
        case .uri: return .uri(try #require(URL(string: "https://example.com/item/\(n)?q=a%20b")))
        case .transformable, .undefined:
            switch attribute.valueClassName {
            case "Array": return ["one", 2, 3.5, true]
            case "String": return .string("archived \(n)")
            default: return ["fields": ["one": .int(n), "two": "zwei"], "list": [1, "x", false], "at": .date(Date(timeIntervalSinceReferenceDate: 1))]
            }
        case .objectID: throw TestFailure()
        }
    }

    /// Writing the imported model as a JSON model file and reading it back gives the same model.
    @Test(arguments: RealModel.allCases) func realModelSurvivesTheJSONFormat(_ file: RealModel) throws {
        let imported = try file.imported()
        let text = imported.model.jsonText(pretty: true)
        #expect(try ModelDescription(json: Data(text.utf8)) == imported.model)
    }

    @Test func cloudKitDemoHasItsDerivedCountAndArchivedColour() throws {
        let imported = try RealModel.cloudKitDemo.imported()
        let tag = try imported.model.entity("Tag")
        let postCount = try tag.attribute("postCount")
        #expect(postCount.derivation == "posts.@count")
        #expect(postCount.type == .integer64)
        let color = try tag.attribute("color")
        #expect(color.type == .transformable && color.valueClassName == nil && color.transformerNames.isEmpty)
        #expect(imported.notes(at: "Tag.color") == ["no value transformer named: values are stored through Amber's archive (AmberArchive), which keeps plist-like values only"])
        let thumbnail = try imported.model.entity("Attachment").attribute("thumbnail")
        #expect(thumbnail.type == .undefined && thumbnail.isTransient)
        #expect(imported.notes(at: "Attachment.thumbnail").count == 1)
        #expect(imported.notes(at: "ImageData.data").first?.hasPrefix("allowsExternalBinaryDataStorage") == true)
        #expect(try imported.model.entity("ImageData").attribute("data").allowsExternalStorage)
        let attachments = try imported.model.entity("Post").relationship("attachments")
        #expect(attachments.isToMany && attachments.inverse == "post" && attachments.deleteRule == .cascade)
        #expect(try imported.model.entity("Attachment").relationship("post").deleteRule == .nullify)
        #expect(imported.notes.count == 3)
    }

    @Test func derivedCountsFollowTheLinksAfterASave() throws {
        for file in [RealModel.cloudKitDemo, .cloudKitShare] {
            let registry = Registry()
            let model = try Model(try file.imported(XcodeImportOptions(registry: registry)).model, registry: registry)
            let context = Context(store: try Store.inMemory(model: model))
            let (owner, members, count) = file == .cloudKitDemo ? ("Post", "posts", "postCount") : ("Photo", "photos", "photoCount")
            let tag = try context.insert("Tag")
            for _ in 0..<3 { try tag.add(try context.insert(owner), to: try model.entity(named: "Tag").relationship(named: members)) }
            try context.save()
            #expect(try tag.value(forKey: count) == 3, "\(file)")
        }
    }

    @Test func cloudKitShareKeepsUUIDsManyToManyAndDefaults() throws {
        let imported = try RealModel.cloudKitShare.imported()
        let tag = try imported.model.entity("Tag")
        #expect(try tag.attribute("uuid").type == .uuid)
        #expect(try tag.attribute("photoCount").derivation == "photos.@count")
        let photos = try tag.relationship("photos"), tags = try imported.model.entity("Photo").relationship("tags")
        #expect(photos.isToMany && tags.isToMany && photos.inverse == "tags" && tags.inverse == "photos")
        #expect(try imported.model.entity("Rating").attribute("value").defaultValue == .int(0))
        #expect(imported.notes.map(\.description) == [
            "model: usedWithCloudKit: Amber does not sync with CloudKit",
            "PhotoData.data: allowsExternalBinaryDataStorage: kept for stores Core Data made (their marker byte and external files); an Amber store keeps the bytes in its row",
        ])
    }

    @Test func mogeneratorTemplatesInheritanceAndRules() throws {
        let imported = try RealModel.mogenerator.imported()
        let model = imported.model
        #expect(model.templates.map(\.name) == ["allHumans", "byHumanName", "byParent", "byParentName", "oneByHumanName"])
        #expect(model.templates[1].predicate == "humanName == $humanName" && model.templates[1].entityName == "Human")
        #expect(model.templates[0].predicate == nil)
        let bound = try Model(model, registry: Registry())
        #expect(try bound.template(named: "byParentName").variables == ["parentName"])
        let age = try model.entity("Human").attribute("age")
        #expect(age.validation.minValue == .int(0) && age.defaultValue == .int(0) && !age.isOptional)
        #expect(age.userInfo == ["mogenerator.readonly": "true"])
        #expect(try model.entity("Human").userInfo["key with.dots..."] == "value with \"quotes\"")
        #expect(try model.entity("Child").parent == "Human")
        #expect(try model.entity("ConcreteEntityWithCustomClass1").parent == "EntitySansCustomClass2")
        #expect(try model.entity("Parent").attribute("myInt16Transient").isTransient)
        let children = try model.entity("Parent").relationship("children")
        #expect(children.isOneWay && children.isToMany && children.deleteRule == .cascade)
        #expect(try model.entity("Parent").relationship("orderedChildren").isOrdered)
        #expect(imported.notes(at: "Parent.children").first?.hasPrefix("no inverse: imported one-way") == true)
        #expect(imported.notes(at: "Human.meaninglessRelationship").count == 2)
        #expect(imported.notes.filter { $0.kind == .mapped }.count == 3)
        #expect(imported.notes.count == 5)

        // A template fetch on the imported model finds what it should.
        let context = Context(store: try Store.inMemory(model: bound))
        let parent = try context.insert("Parent")
        try parent.setValue("Ada", forKey: "humanName")
        try parent.setValue("Ada", forKey: "parentName")
        let child = try context.insert("Child")
        try child.setObject(parent, forKey: "parent")
        try context.save()
        let request = try bound.fetchRequest(fromTemplate: "byParentName", substituting: ["parentName": "Ada"])
        #expect(try context.fetch(request).map(\.objectID) == [child.objectID])
        #expect(try context.fetch(try bound.fetchRequest(fromTemplate: "byParent", substituting: ["parent": .objectID(parent.objectID)])).count == 1)
    }

    @Test func coreStoreKeepsOrderAndNotesConfigurations() throws {
        let imported = try RealModel.coreStore.imported()
        #expect(try imported.model.entity("TestEntity2").relationship("testToManyOrdered").isOrdered)
        #expect(try !imported.model.entity("TestEntity1AAA").relationship("testToManyUnordered").isOrdered)
        #expect(try imported.model.entity("TestEntity1AAA").attribute("testDecimal").type == .decimal)
        #expect(imported.notes.map(\.place) == ["configuration Config1", "configuration Config2"])
        #expect(imported.notes.allSatisfy { $0.kind == .notHonoured })
        #expect(imported.notes[1].message.contains("TestEntity2"))
    }

    @Test func magicalRecordKeepsAbstractParentsUserInfoAndEmptyEntities() throws {
        let imported = try RealModel.magicalRecord.imported()
        let model = imported.model
        #expect(try model.entity("AbstractRelatedEntity").isAbstract)
        #expect(try model.entity("ConcreteRelatedEntity").parent == "AbstractRelatedEntity")
        #expect(try model.entity("MappedEntity").userInfo == ["relatedByAttribute": "mapped"])
        #expect(try model.entity("MappedEntity").attribute("testMappedEntityID").userInfo == ["mappedKeyName": "id"])
        #expect(try model.entity("SingleEntityRelatedToMappedEntityWithSecondaryMappings").relationship("mappedRelationship").userInfo
            == ["mappedKeyName": "not_in_use", "mappedKeyName.1": "almost_there", "mappedKeyName.2": "actualRelatedObject"])
        let flag = try model.entity("SingleEntityRelatedToMappedEntityWithSecondaryMappings").attribute("notImportedAttribute")
        #expect(flag.defaultValue == .bool(true) && !flag.isOptional)
        #expect(try model.entity("SingleEntityWithNoRelationships").attribute("decimalTestAttribute").defaultValue == .decimal(try Value.decimal(parsing: "0.0")), "the default keeps its written scale")
        let empty = try model.entity("EntityWithDifferentClassName")
        #expect(empty.attributes.isEmpty && empty.relationships.isEmpty)
        let toOne = try model.entity("SingleRelatedEntity").relationship("testAbstractToOneRelationship")
        #expect(toOne.isOneWay && !toOne.isToMany && toOne.minCount == nil && toOne.deleteRule == .cascade)
        #expect(imported.notes.filter { $0.message.hasPrefix("no inverse") }.count == 9)
        #expect(imported.notes.filter { $0.message.hasPrefix("minCount 1 on a to-one") }.count == 6)
        #expect(imported.notes(at: "SingleEntityWithNoRelationships.colorTestAttribute").count == 1)
        #expect(imported.notes.count == 16)
    }

    @Test func bookmarksKeepTheirHierarchyAndURLs() throws {
        let imported = try RealModel.bookmarks.imported()
        let model = imported.model
        #expect(try model.entity("BookmarkItemManagedObject").isAbstract)
        #expect(try model.entity("BookmarkFolderManagedObject").parent == "BookmarkItemManagedObject")
        #expect(try model.entity("BookmarkManagedObject").parent == "BookmarkItemManagedObject")
        let url = try model.entity("BookmarkManagedObject").attribute("url")
        #expect(url.type == .uri && !url.isOptional)
        let children = try model.entity("BookmarkFolderManagedObject").relationship("children")
        #expect(children.isToMany && children.isOrdered && !children.isOptional && children.deleteRule == .cascade
                && children.destination == "BookmarkItemManagedObject" && children.inverse == "parent")
        #expect(imported.notes.isEmpty)

        // The ordered children of a folder keep their order through a store.
        let bound = try Model(model, registry: Registry())
        let context = Context(store: try Store.inMemory(model: bound))
        let folder = try context.insert("BookmarkFolderManagedObject")
        try folder.setValue(false, forKey: "isFavorite")
        var bookmarks: [ManagedObject] = []
        for title in ["c", "a", "b"] {
            let bookmark = try context.insert("BookmarkManagedObject")
            try bookmark.setValue(.string(title), forKey: "title")
            try bookmark.setValue(false, forKey: "isFavorite")
            try bookmark.setValue(.uri(try #require(URL(string: "https://duckduckgo.com/\(title)"))), forKey: "url")
            try folder.add(bookmark, to: try bound.entity(named: "BookmarkFolderManagedObject").relationship(named: "children"))
            bookmarks.append(bookmark)
        }
        try context.save()
        let reader = Context(store: context.store)
        let again = try reader.fetch("BookmarkFolderManagedObject")
        // Object IDs become permanent at the save, so they are compared after it.
        #expect(try again.first?.objects(forKey: "children").map(\.objectID) == bookmarks.map(\.objectID))
        #expect(try again.first?.objects(forKey: "children").map { try $0.value(forKey: "title") } == ["c", "a", "b"])
    }

    @Test func compositeIsAnUncheckedDictionary() throws {
        let imported = try RealModel.composite.imported()
        let produit = try imported.model.entity("Produit")
        let composite = try produit.attribute("attribute1")
        #expect(composite.type == .transformable && composite.valueClassName == nil && composite.transformerNames.isEmpty)
        let notes = imported.notes.filter { $0.place == "Produit.attribute1" }
        #expect(notes.map(\.kind) == [.mapped])
        #expect(notes.first?.message.hasPrefix("composite Composite (fields one, two, three: Composite1 (no fields)) is imported as a transformable attribute") == true)
        #expect(notes.first?.message.contains("the fields are not checked") == true)
        let custom = try produit.attribute("attribute")
        #expect(custom.type == .transformable && custom.valueClassName == nil)
        #expect(imported.notes(at: "Produit.attribute").contains { $0.hasPrefix("values are not checked against class CustomClass") })
        #expect(try imported.model.entity("Client").attribute("id").userInfo == ["key": "value", "key1": "value"])
        #expect(try produit.attribute("prix").defaultValue == .double(0))
    }

    // MARK: Bundles

    /// A `.xcdatamodeld` with versions `Notes`, `Notes 2` and `Notes 10` (entity Note gains an attribute per version).
    private func makeBundle(in directory: URL, current: String?) throws -> URL {
        let bundle = directory.appendingPathComponent("Notes.xcdatamodeld")
        for (version, attributes) in [("Notes", ["title"]), ("Notes 2", ["title", "body"]), ("Notes 10", ["title", "body", "tag"])] {
            let folder = bundle.appendingPathComponent("\(version).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let entity = "<entity name=\"Note\">" + attributes.map { "<attribute name=\"\($0)\" optional=\"YES\" attributeType=\"String\"/>" }.joined() + "</entity>"
            try xcodeXML(entity).write(to: folder.appendingPathComponent("contents"))
        }
        if let current {
            let plist = try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": current], format: .xml, options: 0)
            try plist.write(to: bundle.appendingPathComponent(".xccurrentversion"))
        }
        return bundle
    }

    @Test func bundleReadsEveryVersionAndChoosesTheCurrentOne() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try makeBundle(in: directory, current: "Notes 2.xcdatamodel")
        let bundle = try XcodeModelBundle(contentsOf: url, options: XcodeImportOptions(registry: Registry()))
        #expect(bundle.versions.map(\.name) == ["Notes", "Notes 2", "Notes 10"])
        #expect(bundle.versions.map { $0.imported.model.entities[0].attributes.count } == [1, 2, 3])
        #expect(bundle.currentVersionName == "Notes 2")
        #expect(try bundle.current.model.entity("Note").attributes.map(\.name) == ["title", "body"])
        #expect(bundle.version(named: "Notes 10.xcdatamodel")?.model.entities[0].attributes.count == 3)
        // Opening the bundle as a model means its current version; a version folder means that version.
        #expect(try XcodeModelImport(contentsOf: url).model == bundle.current.model)
        let folder = url.appendingPathComponent("Notes 10.xcdatamodel")
        #expect(try XcodeModelImport(contentsOf: folder).model.entities[0].attributes.count == 3)
        #expect(try XcodeModelImport(contentsOf: folder.appendingPathComponent("contents")).model.entities[0].attributes.count == 3)
    }

    @Test func bundleWithoutCurrentVersionFileIsAnErrorNamingIt() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try makeBundle(in: directory, current: nil)
        let error = amberError { _ = try XcodeModelBundle(contentsOf: url) }
        guard case .invalidXcodeModel(let file, _, _, let message) = error else {
            Issue.record("expected invalidXcodeModel, got \(String(describing: error))")
            return
        }
        #expect(file.hasSuffix("Notes.xcdatamodeld/.xccurrentversion"))
        #expect(message.contains("3 versions (Notes, Notes 2, Notes 10)"))
        #expect("\(error.map { "\($0)" } ?? "")".contains(".xccurrentversion: <_XCCurrentVersionName>: missing"))

        // One version needs no pointer; a pointer to a missing version is an error with the nearest name.
        try FileManager.default.removeItem(at: url.appendingPathComponent("Notes 2.xcdatamodel"))
        try FileManager.default.removeItem(at: url.appendingPathComponent("Notes 10.xcdatamodel"))
        #expect(try XcodeModelBundle(contentsOf: url).currentVersionName == "Notes")
        let chosen = try makeBundle(in: temporaryDirectory(), current: nil)
        defer { try? FileManager.default.removeItem(at: chosen.deletingLastPathComponent()) }
        // A version asked for by name needs no pointer either.
        #expect(try XcodeModelImport(contentsOf: chosen, version: "Notes 10").model.entities[0].attributes.count == 3)
        #expect(errorText { _ = try XcodeModelImport(contentsOf: chosen, version: "Notes 3") }
            .hasSuffix("<model>: no version \"Notes 3\" (the bundle has Notes, Notes 2, Notes 10); did you mean Notes 2?"))
        let other = try makeBundle(in: temporaryDirectory(), current: "Note 2.xcdatamodel")
        defer { try? FileManager.default.removeItem(at: other.deletingLastPathComponent()) }
        #expect(errorText { _ = try XcodeModelBundle(contentsOf: other) }.contains("names version \"Note 2\", which the bundle does not hold; did you mean Notes 2?"))
    }

    // MARK: Damaged and newer files

    @Test func malformedXMLNamesLineAndElement() throws {
        let mismatched = Data("""
        <?xml version="1.0" encoding="UTF-8"?>
        <model>
            <entity name="Note">
                <attribute name="title" attributeType="String"/>
            </entty>
        </model>
        """.utf8)
        let error = amberError { _ = try XcodeModelImport(xml: mismatched, file: "Notes/contents") }
        guard case .invalidXcodeModel(let file, let line, let element, let message) = error else {
            Issue.record("expected invalidXcodeModel, got \(String(describing: error))")
            return
        }
        #expect(file == "Notes/contents" && line == 5 && element == "entity name=\"Note\"")
        #expect(message.contains("end tag does not match"))
        #expect(errorText { _ = try XcodeModelImport(xml: mismatched, file: "Notes/contents") }.hasPrefix("Notes/contents:5: <entity name=\"Note\">: malformed XML"))
    }

    @Test("bytes that are not UTF-8 are an error naming the line (FoundationXML's parser traps on them in a name)")
    func invalidUTF8IsRefusedBeforeParsing() throws {
        for (bad, line) in [([UInt8(0xC8)], 3), ([0xE2, 0x82], 3), ([0xFF], 3), ([0xED, 0xA0, 0x80], 3)] {
            var bytes = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<model>\n    <entity name=\"N\" opt".utf8)
            bytes += bad + Array("ional=\"YES\"/>\n</model>\n".utf8)
            let error = amberError { _ = try XcodeModelImport(xml: Data(bytes), file: "bad.xml") }
            #expect(error == .invalidXcodeModel(file: "bad.xml", line: line, element: "model",
                                                message: "the file is not UTF-8: byte 71 begins no UTF-8 character"), "\(bad)")
        }
        // Valid UTF-8 beyond ASCII still parses.
        let accented = Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<model><entity name=\"N\"><attribute name=\"t\" attributeType=\"String\" defaultValueString=\"é€😀\"/></entity></model>".utf8)
        #expect(try XcodeModelImport(xml: accented).model.entities.count == 1)
    }

    @Test func truncatedXMLNamesLineAndElement() throws {
        let text = try String(contentsOf: RealModel.cloudKitDemo.url, encoding: .utf8)
        // Cut inside the attribute on line 5 (Attachment.uuid).
        let cut = try #require(text.range(of: "attributeType=\"UUID\""))
        let error = amberError { _ = try XcodeModelImport(xml: Data(text[..<cut.lowerBound].utf8), file: "cut.xml") }
        guard case .invalidXcodeModel(_, let line, let element, let message) = error else {
            Issue.record("expected invalidXcodeModel, got \(String(describing: error))")
            return
        }
        #expect(line == 5 && element == "attribute name=\"uuid\"")
        #expect(message == "malformed XML: the file ends before the document does (truncated?)")
        // An empty file and a file that is not a model are refused too.
        #expect(errorText { _ = try XcodeModelImport(xml: Data(), file: "empty") } == "empty: <model>: the file holds no XML element")
        #expect(errorText { _ = try XcodeModelImport(xml: Data("<plist><dict/></plist>".utf8), file: "p") }
            == "p:1: <plist>: expected <model> as the document's element, found <plist>: not an Xcode data model")
    }

    @Test func deeplyNestedXMLIsRefused() {
        let depth = 100
        let xml = "<model>" + String(repeating: "<entity name=\"E\">", count: depth) + String(repeating: "</entity>", count: depth) + "</model>"
        #expect(errorText { _ = try XcodeModelImport(xml: Data(xml.utf8), file: "deep") }
            == "deep:1: <entity name=\"E\">: elements nest deeper than 64 levels")
    }

    @Test func unknownElementsAndAttributesAreNotes() throws {
        let imported = try importXML("""
            <entity name="Widget" futureFlag="YES">
                <attribute name="label" optional="YES" attributeType="String" someNewKey="42"/>
                <futureElement name="something"/>
            </entity>
            <futureModelThing/>
            """)
        #expect(try imported.model.entity("Widget").attributes.map(\.name) == ["label"])
        #expect(imported.notes.map(\.kind) == [.unknownAttribute, .unknownAttribute, .unknownElement, .unknownElement])
        #expect(imported.notes.map(\.place) == ["Widget", "Widget.label", "Widget", "model"])
        #expect(imported.notes[1].message == "unknown XML attribute someNewKey=\"42\" on <attribute> ignored (from a newer Xcode?)")
        #expect(imported.notes[2].message.hasPrefix("unknown element <futureElement name=\"something\"> (line 5)"))
    }

    /// Reviewers' finds: bounds out of their type's range are errors with the line (a default that does
    /// not fit, which Xcode saves, is a note and the import goes on), a class Amber checks
    /// more loosely is noted, an empty fetch index is noted and left out, generic arguments are not part
    /// of a registered class's name, and composites nesting composites many times give a short note.
    @Test func edgesOfValuesClassesIndexesAndComposites() throws {
        // As a shipped model has it: "NO" on an integer, and a number too wide for its attribute.
        let unfit = try importXML("""
            <entity name="A"><attribute name="n" optional="YES" attributeType="Integer 16" defaultValueString="70000"/>
            <attribute name="flag" optional="YES" attributeType="Integer 32" defaultValueString="NO"/>
            <attribute name="f" optional="YES" attributeType="Float" defaultValueString="1e39"/></entity>
            """)
        #expect(try unfit.model.entity("A").attributes.allSatisfy { $0.defaultValue == nil })
        #expect(unfit.notes(at: "A.n") == ["defaultValueString \"70000\" (line 3) is not a value of type integer16: not kept, so the attribute has no default"])
        #expect(unfit.notes(at: "A.flag").first?.hasPrefix("defaultValueString \"NO\" (line 4) is not a value of type integer32") == true)
        #expect(unfit.notes(at: "A.f").count == 1)
        #expect(errorText { _ = try importXML("<entity name=\"A\"><attribute name=\"n\" attributeType=\"Integer 64\" maxValueString=\"99999999999999999999\"/></entity>") }
            .contains("test.xml:3: <attribute name=\"n\">"))
        let registry = Registry()
        try registry.declare(.opaque(name: "Box", size: nil))
        let imported = try importXML("""
            <entity name="A">
                <attribute name="count" optional="YES" attributeType="Transformable" customClassName="NSNumber"/>
                <attribute name="box" optional="YES" attributeType="Transformable" valueTransformerName="BoxToData" customClassName="Box&lt;Int&gt;"/>
                <attribute name="deep" optional="YES" attributeType="Composite" composite="C0"/>
                <fetchIndex name="nothing"/>
            </entity>
            \((0..<9).map { i in "<composite name=\"C\(i)\">" + (0..<10).map { "<attribute name=\"f\($0)\" attributeType=\"Composite\" composite=\"C\(i + 1)\"/>" }.joined() + "</composite>" }.joined())
            """, registry: registry)
        #expect(imported.notes(at: "A.count").contains { $0.hasPrefix("class NSNumber has no Amber class of its own") })
        #expect(try imported.model.entity("A").attributes.first { $0.name == "box" }?.valueClassName == "Box")
        #expect(imported.notes(at: "A").contains { $0.contains("names no property and is not imported") })
        #expect(try imported.model.entity("A").indexes.isEmpty)
        let composite = try #require(imported.notes(at: "A.deep").first)
        #expect(composite.count < 2_000 && composite.contains("as above"))
    }

    @Test func unknownAttributeTypeIsAnErrorNamingThePlace() {
        let error = amberError { _ = try importXML("<entity name=\"A\"><attribute name=\"big\" attributeType=\"Integer 128\"/></entity>") }
        guard case .invalidXcodeModel(let file, let line, let element, let message) = error else {
            Issue.record("expected invalidXcodeModel, got \(String(describing: error))")
            return
        }
        #expect(file == "test.xml" && line == 3 && element == "attribute name=\"big\"")
        #expect(message == "unknown attributeType \"Integer 128\"; did you mean Integer 16?")
        #expect(errorText { _ = try importXML("<entity name=\"A\"><relationship name=\"b\" destinationEntity=\"A\" deletionRule=\"Cascde\"/></entity>") }.hasSuffix("<relationship name=\"b\">: unknown deletionRule \"Cascde\"; did you mean Cascade?"))
        #expect(errorText { _ = try importXML("<entity><attribute name=\"a\" attributeType=\"String\"/></entity>") }.hasSuffix("<entity>: missing name=\"…\""))
    }

    @Test func objectIDAttributesAreLeftOutWithANote() throws {
        let imported = try importXML("<entity name=\"A\"><attribute name=\"ref\" attributeType=\"ObjectID\"/><attribute name=\"x\" attributeType=\"String\"/></entity>")
        #expect(try imported.model.entity("A").attributes.map(\.name) == ["x"])
        #expect(imported.notes.map(\.kind) == [.notHonoured])
        #expect(imported.notes.first?.place == "A.ref")
    }

    // MARK: Transformers and classes

    @Test func secureUnarchiversBecomeTheDefaultArchive() throws {
        let imported = try importXML("""
            <entity name="A">
                <attribute name="secure" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="[String]"/>
                <attribute name="swiftName" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromDataTransformerName" customClassName="NSDictionary"/>
                <attribute name="subclass" optional="YES" attributeType="Transformable" valueTransformerName="MyApp.TagListTransformer" customClassName="[String: Any]"/>
                <attribute name="keyed" optional="YES" attributeType="Transformable" valueTransformerName="NSKeyedUnarchiveFromData" customClassName="NSString"/>
            </entity>
            """, secure: ["TagListTransformer"])
        let entity = try imported.model.entity("A")
        #expect(entity.attributes.allSatisfy { $0.transformerNames.isEmpty && $0.type == .transformable })
        #expect(entity.attributes.map(\.valueClassName) == ["Array", "Dictionary", "Dictionary", "String"])
        #expect(imported.notes(at: "A.secure").isEmpty && imported.notes(at: "A.swiftName").isEmpty)
        #expect(imported.notes(at: "A.subclass") == ["transformer MyApp.TagListTransformer (a secure unarchiver subclass, as told) is replaced by Amber's archive, which keeps plist-like values only"])
        #expect(imported.notes(at: "A.keyed").first?.contains("decodes plist-like values only, never arbitrary classes") == true)
        // The default archive is AmberArchive: the bound chain says so, and values go through it.
        let model = try Model(imported.model, registry: Registry())
        #expect(try model.entity(named: "A").attribute(named: "secure").transformerNames == [Registry.archiveTransformerName])
        let context = Context(store: try Store.inMemory(model: model))
        let object = try context.insert("A")
        try object.setValue(["a", "b"], forKey: "secure")
        #expect(amberError { try object.setValue(.uri(URL(fileURLWithPath: "/")), forKey: "swiftName") } != nil)
        try context.save()
    }

    @Test func foundationClassNamesBecomeAmberClasses() throws {
        let imported = try importXML("""
            <entity name="A">
                <attribute name="text" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="NSString"/>
                <attribute name="bytes" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="Foundation.Data"/>
                <attribute name="when" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="NSDate"/>
                <attribute name="key" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="UUID"/>
                <attribute name="link" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="NSURL"/>
                <attribute name="amount" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="NSDecimalNumber"/>
                <attribute name="number" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="NSNumber"/>
                <attribute name="list" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="Array&lt;Int&gt;"/>
                <attribute name="set" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="NSSet"/>
                <attribute name="color" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromData" customClassName="UIColor"/>
            </entity>
            """)
        let entity = try imported.model.entity("A")
        #expect(entity.attributes.map(\.valueClassName) == ["String", "Binary", "Date", "UUID", nil, nil, nil, "Array", "Array", nil])
        #expect(entity.attributes.map(\.type) == [.transformable, .transformable, .transformable, .transformable, .uri, .decimal,
                                                  .transformable, .transformable, .transformable, .transformable])
        #expect(imported.notes(at: "A.link") == ["a Transformable of class NSURL is imported as a uri attribute (Amber's archive keeps plist-like values only)"])
        #expect(imported.notes(at: "A.set") == ["class NSSet: Amber has no set values; values are arrays"])
        #expect(imported.notes(at: "A.color").first?.hasPrefix("values are not checked against class UIColor, which Amber does not know") == true)
        #expect(imported.notes(at: "A.number").first?.hasPrefix("class NSNumber has no Amber class of its own") == true)
        #expect(imported.notes.count == 5)
        _ = try Model(imported.model, registry: Registry())
    }

    @Test func undefinedAttributesTakeTheClassTheyName() throws {
        let imported = try importXML("""
            <entity name="A">
                <attribute name="x" optional="YES" attributeType="String"/>
                <attribute name="scratch" optional="YES" transient="YES" attributeType="Undefined" customClassName="NSArray"/>
                <attribute name="flag" optional="YES" transient="YES" attributeType="Undefined" customClassName="Boolean"/>
                <attribute name="view" optional="YES" transient="YES" attributeType="Undefined" customClassName="UIView"/>
                <attribute name="any" optional="YES" transient="YES"/>
            </entity>
            """)
        let entity = try imported.model.entity("A")
        #expect(entity.attributes.map(\.type) == [.string, .undefined, .undefined, .undefined, .undefined])
        #expect(entity.attributes.map(\.valueClassName) == [nil, "Array", "Boolean", nil, nil])
        #expect(imported.notes.map(\.description) == ["A.view: class UIView is not a value class Amber knows, so the attribute holds any value"])
        let model = try Model(imported.model, registry: Registry())
        let context = Context(store: try Store.inMemory(model: model))
        let object = try context.insert("A")
        try object.setValue([1, 2], forKey: "scratch")
        #expect(amberError { try object.setValue("no", forKey: "scratch") } != nil)
    }

    @Test func moduleQualifiedNamesAreReadAsRegisteredShortNames() throws {
        let registry = try colorRegistry()
        let imported = try importXML("""
            <entity name="Tag">
                <attribute name="tint" optional="YES" attributeType="Transformable" valueTransformerName="MyApp.ColorToData" customClassName="MyApp.Color"/>
                <attribute name="shade" optional="YES" attributeType="Transformable" valueTransformerName="ColorToData" customClassName="UIColor"/>
            </entity>
            """, registry: registry)
        let tint = try imported.model.entity("Tag").attribute("tint")
        #expect(tint.transformerNames == ["ColorToData"] && tint.valueClassName == "Color")
        #expect(imported.notes(at: "Tag.tint") == ["class MyApp.Color read as Color, module MyApp",
                                                   "transformer MyApp.ColorToData read as ColorToData, module MyApp"])
        #expect(imported.notes.filter { $0.place == "Tag.tint" }.allSatisfy { $0.kind == .renamed })
        let shade = try imported.model.entity("Tag").attribute("shade")
        #expect(shade.transformerNames == ["ColorToData"] && shade.valueClassName == "Color")
        #expect(imported.notes(at: "Tag.shade") == ["class UIColor is not a value class Amber knows; values are of the class transformer ColorToData takes, Color"])

        // It binds, and colours go through the registered transformer.
        let model = try Model(imported.model, registry: registry)
        let context = Context(store: try Store.inMemory(model: model))
        let tag = try context.insert("Tag")
        let red = try color(1, 0, 0, 1, in: registry)
        try tag.setValue(red, forKey: "tint")
        try context.save()
        #expect(try Context(store: context.store).fetch("Tag").first?.value(forKey: "tint") == red)
    }

    @Test func unknownTransformerIsABindErrorWithTheNearestName() throws {
        let registry = try colorRegistry()
        let imported = try importXML("""
            <entity name="Tag"><attribute name="tint" optional="YES" attributeType="Transformable" valueTransformerName="ColorToDta"/></entity>
            """, registry: registry)
        #expect(try imported.model.entity("Tag").attribute("tint").transformerNames == ["ColorToDta"])
        #expect(imported.notes.isEmpty)
        let error = amberError { _ = try Model(imported.model, registry: registry) }
        guard case .invalidModel(let problems) = error else {
            Issue.record("expected invalidModel, got \(String(describing: error))")
            return
        }
        #expect(problems.map(\.description) == ["Tag.tint: ColorToDta: no such transformer; did you mean ColorToData?"])
    }

    // MARK: Attributes, relationships, entities, model

    @Test func defaultsAndValidationRulesAreMapped() throws {
        let imported = try importXML("""
            <entity name="A">
                <attribute name="name" attributeType="String" minValueString="2" maxValueString="40" regularExpressionString="[a-z]+" defaultValueString="abc"/>
                <attribute name="blob" optional="YES" attributeType="Binary" maxValueString="16"/>
                <attribute name="rank" optional="YES" attributeType="Integer 32" minValueString="-5" maxValueString="10" defaultValueString="3" indexed="YES"/>
                <attribute name="price" optional="YES" attributeType="Decimal" minValueString="0" defaultValueString="19.99"/>
                <attribute name="ratio" optional="YES" attributeType="Float" maxValueString="1.5" defaultValueString="0.25"/>
                <attribute name="done" optional="YES" attributeType="Boolean" defaultValueString="YES"/>
                <attribute name="when" optional="YES" attributeType="Date" defaultDateTimeInterval="-725882400" minDateTimeInterval="-978307200" maxDateTimeInterval="946684800"/>
                <attribute name="renamed" optional="YES" attributeType="String" elementID="oldName" versionHashModifier="v2"/>
            </entity>
            """)
        let entity = try imported.model.entity("A")
        let name = try entity.attribute("name")
        #expect(!name.isOptional && name.validation.minLength == 2 && name.validation.maxLength == 40 && name.validation.pattern == "[a-z]+")
        #expect(name.defaultValue == "abc" && name.validation.minValue == nil)
        #expect(try entity.attribute("blob").validation.maxLength == 16)
        let rank = try entity.attribute("rank")
        #expect(rank.validation.minValue == .int(-5) && rank.validation.maxValue == .int(10) && rank.defaultValue == .int(3) && rank.isIndexed)
        #expect(try entity.attribute("price").defaultValue == .decimal(try #require(ScaledDecimal("19.99"))))
        #expect(try entity.attribute("ratio").validation.maxValue == .float(1.5))
        #expect(try entity.attribute("done").defaultValue == .bool(true))
        let when = try entity.attribute("when")
        #expect(when.defaultValue == .date(Date(timeIntervalSinceReferenceDate: -725_882_400)))
        #expect(when.validation.minValue == .date(Date(timeIntervalSince1970: 0)))
        #expect(when.validation.maxValue == .date(Date(timeIntervalSinceReferenceDate: 946_684_800)))
        let renamed = try entity.attribute("renamed")
        #expect(renamed.renamingIdentifier == "oldName" && renamed.versionHashModifier == "v2")
        #expect(imported.notes.isEmpty)

        // The rules hold in a store.
        let model = try Model(imported.model, registry: Registry())
        let context = Context(store: try Store.inMemory(model: model))
        let object = try context.insert("A")
        #expect(try object.value(forKey: "rank") == 3)
        try object.setValue("x", forKey: "name")
        try object.setValue(.int(11), forKey: "rank")
        guard case .saveFailed(let problems) = amberError({ try context.save() }) else {
            Issue.record("the save should fail")
            return
        }
        #expect(problems.map { "\($0.place) \($0.rule)" }.sorted() == ["A.name minLength", "A.rank maxValue"])
        // A bound that does not fit is an error with its line; a default that does not fit is noted and left out.
        #expect(errorText { _ = try importXML("<entity name=\"A\"><attribute name=\"n\" attributeType=\"Integer 16\" maxValueString=\"many\"/></entity>") }
            == "test.xml:3: <attribute name=\"n\">: maxValueString=\"many\" is not a valid integer16 value")
        #expect(try importXML("<entity name=\"A\"><attribute name=\"n\" attributeType=\"Integer 16\" defaultValueString=\"many\"/></entity>")
            .notes(at: "A.n") == ["defaultValueString \"many\" (line 3) is not a value of type integer16: not kept, so the attribute has no default"])
    }

    @Test func relationshipsMapCountsRulesAndOneWayLinks() throws {
        let imported = try importXML("""
            <entity name="Owner">
                <relationship name="pets" optional="YES" toMany="YES" minCount="1" maxCount="5" deletionRule="Deny" destinationEntity="Pet" inverseName="owner" inverseEntity="Pet"/>
                <relationship name="favourite" maxCount="1" deletionRule="No Action" destinationEntity="Pet" elementID="best"/>
                <relationship name="vet" optional="YES" minCount="1" maxCount="1" deletionRule="Nullify" destinationEntity="Pet" transient="YES" ordered="YES"/>
            </entity>
            <entity name="Pet">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Owner" inverseName="pets" inverseEntity="Owner"/>
            </entity>
            """)
        let owner = try imported.model.entity("Owner")
        let pets = try owner.relationship("pets")
        #expect(pets.isToMany && pets.minCount == 1 && pets.maxCount == 5 && pets.deleteRule == .deny && pets.inverse == "owner" && pets.isOptional)
        let favourite = try owner.relationship("favourite")
        #expect(!favourite.isToMany && !favourite.isOptional && favourite.isOneWay && favourite.deleteRule == .noAction)
        #expect(favourite.renamingIdentifier == "best")
        #expect(imported.notes(at: "Owner.favourite").count == 1)
        let vet = imported.notes(at: "Owner.vet")
        #expect(vet.count == 4)
        #expect(vet.contains("ordered applies to to-many relationships; ignored on a to-one"))
        #expect(vet.contains("transient relationships are not honoured: Amber stores every relationship"))
        _ = try Model(imported.model, registry: Registry())
    }

    @Test func indexesConstraintsAndFetchedPropertiesAreMapped() throws {
        let imported = try importXML("""
            <entity name="Base">
                <attribute name="code" optional="YES" attributeType="String"/>
            </entity>
            <entity name="Item" parentEntity="Base">
                <attribute name="rank" optional="YES" attributeType="Integer 16"/>
                <attribute name="when" optional="YES" attributeType="Date"/>
                <relationship name="box" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Box" inverseName="items" inverseEntity="Box"/>
                <fetchedProperty name="recent" optional="YES">
                    <fetchRequest name="fetchedPropertyFetchRequest" entity="Item" predicateString="rank &gt; 5"/>
                </fetchedProperty>
                <fetchIndex name="byRank">
                    <fetchIndexElement property="rank" type="Binary" order="ascending"/>
                    <fetchIndexElement property="when" type="Binary" order="descending"/>
                </fetchIndex>
                <fetchIndex name="byCode"><fetchIndexElement property="code" type="Binary" order="ascending"/></fetchIndex>
                <fetchIndex name="byBox"><fetchIndexElement property="box" type="Binary" order="ascending"/></fetchIndex>
                <fetchIndex name="byBoxAndRank">
                    <fetchIndexElement property="box" type="Binary" order="ascending"/>
                    <fetchIndexElement property="rank" type="Binary" order="ascending"/>
                </fetchIndex>
                <uniquenessConstraints>
                    <uniquenessConstraint><constraint value="code"/><constraint value="rank"/></uniquenessConstraint>
                    <uniquenessConstraint><constraint value="box"/></uniquenessConstraint>
                </uniquenessConstraints>
                <compoundIndexes><compoundIndex><index value="when"/><index value="code"/></compoundIndex></compoundIndexes>
            </entity>
            <entity name="Box">
                <relationship name="items" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Item" inverseName="box" inverseEntity="Item"/>
            </entity>
            """)
        let item = try imported.model.entity("Item")
        #expect(item.indexes == [["rank", "when"], ["code"], ["when", "code"]])
        #expect(item.uniquenessConstraints == [["code", "rank"]])
        #expect(imported.notes(at: "Item.recent").isEmpty)
        #expect(item.fetchedProperties == [FetchedPropertyDescription("recent", entity: "Item", where: "rank > 5")])
        let notes = imported.notes(at: "Item")
        #expect(notes.contains("fetch index byRank: descending order of when is not kept (SQLite reads an index either way)"))
        #expect(notes.contains("fetch index byBox on to-one box is not needed: Amber indexes every to-one's column"))
        #expect(notes.contains("fetch index byBoxAndRank is not imported: it names relationship box, and Amber's indexes name attributes only"))
        #expect(notes.contains("uniqueness constraint (box) is not imported: it names relationship box, and Amber's uniqueness constraints name attributes only"))
        #expect(notes.count == 4)
        // Box has no attributes: an entity of relationships only binds as before.
        let model = try Model(imported.model, registry: Registry())
        #expect(try model.entity(named: "Item").indexes.map { $0.map(\.name) } == [["rank", "when"], ["code"], ["when", "code"]])
    }

    @Test func templatesKeepLimitsAndNoteOtherOptions() throws {
        let imported = try importXML("""
            <entity name="A"><attribute name="n" optional="YES" attributeType="Integer 16"/></entity>
            <fetchRequest name="big" entity="A" predicateString="n &gt; $MIN" fetchLimit="5" fetchBatchSize="20" includeSubentities="YES" returnDistinctResults="NO"/>
            <fetchRequest name="all" entity="A" fetchLimit="0"/>
            <userInfo><entry key="owner" value="app"/></userInfo>
            <configuration name="Cloud" usedWithCloudKit="YES"><memberEntity name="A"/></configuration>
            """)
        #expect(imported.model.templates == [FetchTemplateDescription("big", entity: "A", where: "n > $MIN", limit: 5),
                                             FetchTemplateDescription("all", entity: "A")])
        #expect(imported.notes(at: "templates.big") == ["fetchBatchSize=\"20\" is not kept: an Amber template holds an entity, a predicate, sort keys and a limit; set it on the request made from the template where Amber has it"])
        #expect(imported.notes(at: "model") == ["model-level userInfo is not kept (Amber models have none; entities, attributes and relationships keep theirs): owner=app"])
        #expect(imported.notes(at: "configuration Cloud") == ["configurations are not honoured: Amber keeps every entity in one store (this one lists A, used with CloudKit)"])
        let model = try Model(imported.model, registry: Registry())
        #expect(try model.fetchRequest(fromTemplate: "big", substituting: ["MIN": 1]).limit == 5)
    }

    @Test func nestedAndSelfReferringCompositesEnd() throws {
        let imported = try importXML("""
            <entity name="A"><attribute name="c" optional="YES" attributeType="Composite" composite="Loop"/>
            <attribute name="t" optional="YES" transient="YES" attributeType="Composite" composite="Missing"/></entity>
            <composite name="Loop">
                <attribute name="x" optional="YES" attributeType="Integer 16"/>
                <attribute name="again" optional="YES" attributeType="Composite" composite="Loop"/>
            </composite>
            """)
        #expect(imported.notes(at: "A.c").first?.hasPrefix("composite Loop (fields x, again: Loop (as above)) is imported") == true)
        #expect(try imported.model.entity("A").attribute("t").type == .undefined)
        #expect(imported.notes(at: "A.t").first?.hasPrefix("composite Missing, which the model does not define, is imported as a transient undefined attribute") == true)
        _ = try Model(imported.model, registry: Registry())
    }

    @Test func derivedAttributesKeepTheirExpressionOnly() throws {
        let imported = try importXML("""
            <entity name="A">
                <attribute name="title" optional="YES" attributeType="String"/>
                <attribute name="folded" attributeType="String" derived="YES" derivationExpression="canonical:(title)" defaultValueString="x"/>
            </entity>
            """)
        let folded = try imported.model.entity("A").attribute("folded")
        #expect(folded.derivation == "canonical:(title)" && folded.isOptional && folded.defaultValue == nil)
        #expect(imported.notes(at: "A.folded").count == 1)
        let model = try Model(imported.model, registry: Registry())
        let context = Context(store: try Store.inMemory(model: model))
        let object = try context.insert("A")
        try object.setValue("Crème Brûlée", forKey: "title")
        try context.save()
        #expect(try object.value(forKey: "folded") == "creme brulee")
    }

    // MARK: Entities with no properties (Core Data allows them)

    @Test func anEntityWithNoPropertiesBindsStoresAndFetches() throws {
        let model = try Model(ModelDescription {
            EntityDescription("Marker")
            EntityDescription("Note") { Attribute.string("text") }
        })
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("empty.amber").path
        let context = Context(store: try Store(path: path, model: model))
        let marker = try context.insert("Marker")
        _ = try context.insert("Marker")
        try context.save()
        let fetched = try Context(store: try Store(openingExisting: path)).fetch("Marker")
        #expect(fetched.count == 2)
        #expect(fetched.map(\.objectID).contains(marker.objectID))
    }
}
