import CSQLite
import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQL
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Lightweight migration: opening a store with another model infers the
/// mapping and migrates in one transaction, or refuses and changes nothing.
@Suite struct MigrationTests {
    /// Version 1: authors and their books (one-to-many), a shelf entity.
    static func version1() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.string("title").required()
                Attribute.integer16("pages")
                Attribute.string("isbn")
                Attribute.string("blurb")
                Relationship.toOne("author", "Author", inverse: "books")
            }
            EntityDescription("Shelf") { Attribute.string("label") }
        })
    }

    /// Version 2: every inferable kind of change from version 1.
    static func version2() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Writer") {  // renamed from Author
                Attribute.string("name").required()
                Attribute.string("country").defaultValue("unknown")  // added, with a default
                Relationship.toMany("works", "Book", inverse: "writers").renamed(from: "books")  // to-many of a many-to-many now
            }
            .renamed(from: "Author")
            EntityDescription("Book") {
                Attribute.string("title").required().indexed()  // index added
                Attribute.integer64("pages")  // widened
                Attribute.string("code").renamed(from: "isbn")  // renamed
                Attribute.string("blurb").required().defaultValue("")  // optional → required, with a default
                Attribute.integer64("writerCount").derived("writers.@count")  // derived, added
                Relationship.toMany("writers", "Writer", inverse: "works").renamed(from: "author")  // to-one → to-many
                Relationship.toOne("series", "Series", inverse: "books")  // relationship added
            }
            .unique("code")
            EntityDescription("Series") {  // entity added; Shelf removed
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "series")
            }
        })
    }

    static func fillVersion1(_ path: String) throws { try fillVersion1(try Store(path: path, model: try version1())) }

    /// Two authors, three books and a shelf, saved in `store` (opened with ``version1()``).
    static func fillVersion1(_ store: Store) throws {
        let context = Context(store: store)
        let borges = try context.insert("Author"), cortazar = try context.insert("Author")
        try borges.setValue("Borges", forKey: "name")
        try cortazar.setValue("Cortázar", forKey: "name")
        for (title, pages, isbn, author) in [("Ficciones", 174, "9780802130303", borges), ("El Aleph", 174, nil, borges),
                                            ("Rayuela", 600, "9788437604572", cortazar)] as [(String, Int64, String?, ManagedObject)]
        {
            let book = try context.insert("Book")
            try book.setValue(.string(title), forKey: "title")
            try book.setValue(.int(pages), forKey: "pages")
            try book.setValue(isbn.map(Value.string) ?? .null, forKey: "isbn")
            if title == "Rayuela" { try book.setValue("A novel", forKey: "blurb") }
            try book.setObject(author, forKey: "author")
        }
        try context.insert("Shelf").setValue("A", forKey: "label")
        try context.save()
    }

    static func path(in directory: URL) -> String { directory.appendingPathComponent("books.amber").path }

    @Test func everyInferableChangeMigrates() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        try Self.fillVersion1(path)
        let oldHash = try Self.version1().versionHash

        let plan = try Store.migrationPlan(forStoreAt: path, to: try Self.version2())
        #expect(plan.contains("rename entity Author to Writer"))
        #expect(plan.contains("Book.pages: widen integer16 to integer64"))
        #expect(plan.contains("rename Book.isbn to Book.code"))
        #expect(plan.contains("Book.writers: to-one to to-many (each object keeps its destination as its only member)"))
        #expect(plan.contains("remove entity Shelf and its objects"))
        #expect(plan.contains("add Book.writerCount, computed from writers.@count"))

        var steps: [String] = []
        let collected = Collected()
        var options = Store.Options.removingData
        options.migrationProgress = { collected.append($0.step) }
        let store = try Store(path: path, model: try Self.version2(), options: options)
        steps = collected.items
        #expect(steps.contains("copy Writer") && steps.contains("copy Book") && steps.contains("compute Book.writerCount"))
        #expect(FileManager.default.fileExists(atPath: Store.backupPath(for: path, version: oldHash)))

        let context = Context(store: store)
        let writers = try context.fetch("Writer", sortedBy: [SortKey("name")])
        #expect(try writers.map { try $0.value(forKey: "name") } == ["Borges", "Cortázar"])
        #expect(try writers.map { try $0.value(forKey: "country") } == ["unknown", "unknown"])
        let books = try context.fetch("Book", sortedBy: [SortKey("title")])
        #expect(try books.map { try $0.value(forKey: "title") } == ["El Aleph", "Ficciones", "Rayuela"])
        #expect(try books.map { try $0.value(forKey: "pages") } == [.int(174), .int(174), .int(600)])
        #expect(try books.map { try $0.value(forKey: "code") } == [.null, "9780802130303", "9788437604572"])
        #expect(try books.map { try $0.value(forKey: "blurb") } == ["", "", "A novel"])
        #expect(try books.map { try $0.value(forKey: "writerCount") } == [.int(1), .int(1), .int(1)])
        #expect(try books.map { try $0.objects(forKey: "writers").map { try $0.value(forKey: "name") } }
            == [["Borges"], ["Borges"], ["Cortázar"]])
        #expect(try writers[0].objects(forKey: "works").count == 2)
        // The graph keeps working: a second writer for a book, counted by the store.
        try books[2].add(writers[0], to: try store.model.entity(named: "Book").relationship(named: "writers"))
        try context.save()
        #expect(try books[2].value(forKey: "writerCount") == .int(2))
        // The store records what it was.
        let history = try metadata(path, "model_history")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(history.utf8)) as? [[String: String]])
        #expect(entries.count == 1 && entries[0]["hash"] == oldHash && entries[0]["by"] == store.model.versionHash)
        #expect(try ModelDescription(json: Data((entries[0]["model"] ?? "").utf8)) == Self.version1().description)
        #expect(try metadata(path, "model_hash") == store.model.versionHash)
        #expect(try sqlite(path, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '_amber_old_%' OR name = 'Shelf' OR name = 'Author'") == "0")
        #expect(try sqlite(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'Book_title_index'") == "1")
    }

    @Test func aMigrationThatRemovesDataNeedsConsent() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        try Self.fillVersion1(path)
        // Version 2 drops the Shelf entity, which holds one object: the plan says how much goes.
        let plan = try Store.migrationPlan(forStoreAt: path, to: try Self.version2())
        #expect(plan.contains("removes stored data: entity Shelf: 1 object (needs consent: data removal allowed)"), "\(plan)")
        let backup = Store.backupPath(for: path, version: try Self.version1().versionHash)
        guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(path: path, model: try Self.version2()) }) else {
            Issue.record("a migration removing an object ran without consent")
            return
        }
        #expect(problems == ["entity Shelf: 1 object would be removed", TableMigration.consent])
        #expect(try metadata(path, "model_hash") == Self.version1().versionHash)
        #expect(!FileManager.default.fileExists(atPath: backup))  // refused before anything was copied
        // Without the shelf's object, nothing stored goes: no consent needed.
        do {
            let context = Context(store: try Store(path: path, model: try Self.version1()))
            for shelf in try context.fetch("Shelf") { try context.delete(shelf) }
            try context.save()
        }
        #expect(!(try Store.migrationPlan(forStoreAt: path, to: try Self.version2())).contains { $0.hasPrefix("removes stored data") })
        _ = try Store(path: path, model: try Self.version2())
        #expect(try metadata(path, "model_hash") == Self.version2().versionHash)
        // Deriving an attribute that holds values replaces them: consent too.
        var derived = try Self.version2().description
        let code = try #require(derived.entities[1].attributes.firstIndex { $0.name == "code" })
        derived.entities[1].attributes[code] = Attribute.string("code").derived("lowercase:(title)")
        guard case .migrationFailed(_, let replaced) = amberError({ _ = try Store(path: path, model: try Model(derived)) }) else {
            Issue.record("deriving a stored attribute ran without consent")
            return
        }
        #expect(replaced.first == "Book.code: 2 values (computed instead) would be removed", "\(replaced)")
    }

    @Test func stepByStepAndOneJumpAgree() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stepwise = directory.appendingPathComponent("a.amber").path, jump = directory.appendingPathComponent("b.amber").path
        try Self.fillVersion1(stepwise)
        try Self.fillVersion1(jump)
        // Version 3: from version 2, the derived count goes and a rating is added.
        var description = try Self.version2().description
        description.entities[1].attributes.removeAll { $0.name == "writerCount" }
        description.entities[1].attributes.append(Attribute.double("rating").defaultValue(.double(3.5)))
        let version3 = try Model(description)
        _ = try Store(path: stepwise, model: try Self.version2(), options: .removingData)
        _ = try Store(path: stepwise, model: version3, options: .removingData)
        _ = try Store(path: jump, model: version3, options: .removingData)
        let dump = { (path: String) throws -> [[Value]] in
            let context = Context(store: try Store(path: path, model: version3))
            return try context.fetch("Book", sortedBy: [SortKey("title")]).map { book in
                try ["title", "pages", "code", "blurb", "rating"].map { try book.value(forKey: $0) }
                    + [.int(Int64(try book.objects(forKey: "writers").count))]
            }
        }
        #expect(try dump(stepwise) == dump(jump))
        #expect(try dump(jump).map { $0[4] } == [.double(3.5), .double(3.5), .double(3.5)])
        #expect(try JSONSerialization.jsonObject(with: Data(metadata(stepwise, "model_history").utf8)) as? [Any] != nil)
        #expect(try metadata(stepwise, "model_history").components(separatedBy: "\"hash\"").count - 1 == 2)
    }

    @Test func refusedChangesLeaveTheStoreUnchanged() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        try Self.fillVersion1(path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        func refused(_ change: (inout ModelDescription) -> Void) throws -> [String] {
            var description = try Self.version1().description
            change(&description)
            let model = try Model(description)
            var options = Store.Options()
            options.backsUpBeforeMigrating = false
            // The dry run rehearses the migration on the objects: it refuses what the migration refuses, in the same words.
            guard case .migrationFailed(_, let planned) = amberError({ _ = try Store.migrationPlan(forStoreAt: path, to: model) }) else {
                Issue.record("expected the plan to be refused")
                return []
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(path: path, model: model, options: options) }) else {
                Issue.record("expected the migration to be refused")
                return []
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            #expect(planned == problems)
            return problems
        }
        // Changes that cannot be inferred, found before anything is read.
        #expect(try refused { $0.entities[1].attributes[1].type = .string } == ["Book.pages: type integer16 to string: cannot be inferred"])
        #expect(try refused { $0.entities[0].relationships[0].isToMany = false; $0.entities[1].relationships[0].isToMany = true }
            == ["Author.books: to-many to to-one: cannot be inferred (which member would stay?)"])
        // Changes the data does not allow.
        #expect(try refused { $0.entities[1].attributes[2].isOptional = false }.first?.hasPrefix("Book.isbn: required, but object amber://") == true)
        #expect(try refused { $0.entities[1].uniquenessConstraints = [["pages"]] }.first?.contains("UNIQUE constraint failed") == true)
        #expect(try refused { $0.entities[2].isAbstract = true }.first?.hasPrefix("Shelf: now abstract, but object") == true)
        // Every problem at once, in the plan as in the migration.
        let both = try refused { $0.entities[1].attributes[2].isOptional = false; $0.entities[2].isAbstract = true }
        #expect(both.count == 2 && both.contains { $0.hasPrefix("Book.isbn: required") } && both.contains { $0.hasPrefix("Shelf: now abstract") })
        // The old model still opens it, with every object.
        let context = Context(store: try Store(path: path, model: try Self.version1()))
        #expect(try context.fetch("Book").count == 3)
    }

    /// A new attribute of an extensible entity whose objects already use
    /// its name as an extended key takes those values, each checked as a set
    /// checks it, and the key goes (other keys stay); a value it cannot hold
    /// is named, by the plan as by the migration, and nothing changes.
    /// `open` opens the store with a model; `plan` plans a migration to one.
    static func extendedValuesBecomeTheAttributes(_ open: (Model) throws -> Store, plan: (Model) throws -> [String]) throws {
        let v1 = try Model(ModelDescription { EntityDescription("Book") { Attribute.string("title") }.extensible() })
        do {
            let context = Context(store: try open(v1))
            for (title, shelf) in [("A", Value.string("S1")), ("B", .int(3)), ("C", .null)] {
                let book = try context.insert("Book")
                try book.setValue(.string(title), forKey: "title")
                try book.setValue(shelf, forExtendedKey: "shelf")
                try book.setValue(.int(Int64(title.count)), forExtendedKey: "floor")
                if title == "A" { try book.setValue("L-A", forExtendedKey: "label") }
            }
            try context.save()
        }
        func model(unique: Bool) throws -> Model {
            var book = EntityDescription("Book") {
                Attribute.string("title")
                Attribute.string("shelf")
                Attribute.string("label").required().defaultValue("none")  // a default for the objects without one
            }.extensible()
            if unique { book = book.unique("shelf") }
            return try Model(ModelDescription(entities: [book]))
        }
        let v2 = try model(unique: false)
        guard case .migrationFailed(_, let planned) = amberError({ _ = try plan(v2) }),
              case .migrationFailed(_, let problems) = amberError({ _ = try open(v2) })
        else {
            Issue.record("expected the plan and the migration to refuse B's shelf")
            return
        }
        #expect(planned == problems && problems.count == 1, "\(problems)")
        #expect(problems.first.map { $0.hasPrefix("Book.shelf of amber://") && $0.contains("/Book/p2: its extended value 3 cannot become") } == true,
                "\(problems)")
        do {
            let context = Context(store: try open(v1))
            try context.fetch("Book", where: "title == 'B'")[0].setValue(.string("S1"), forExtendedKey: "shelf")  // as A's
            try context.save()
        }
        #expect(try plan(v2).contains("Book.shelf: takes the extended attribute shelf of 2 objects (each value checked)"))
        // Moved values that break a constraint of the new model are named too.
        guard case .migrationFailed(_, let broken) = amberError({ _ = try open(try model(unique: true)) }) else {
            Issue.record("expected the unique shelf to be refused")
            return
        }
        #expect(broken.count == 1 && broken[0].contains("breaks a constraint of the new model"), "\(broken)")
        do {
            let context = Context(store: try open(v1))
            try context.fetch("Book", where: "title == 'A'")[0].setValue("S0", forExtendedKey: "shelf")
            try context.save()
        }
        let context = Context(store: try open(try model(unique: true)))
        let books = try context.fetch(FetchRequest("Book", sortedBy: [.ascending("title")]))
        #expect(try books.map { try $0.value(forKey: "shelf") } == ["S0", "S1", .null])
        #expect(try books.map { try $0.value(forKey: "label") } == ["L-A", "none", "none"])
        #expect(try books.map { try $0.extendedKeys() } == [["floor"], ["floor"], ["floor"]])
        #expect(try context.count(FetchRequest("Book", where: "shelf == 'S1'")) == 1)
    }

    @Test func extendedValuesBecomeTheAttributesOnAFile() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        try Self.extendedValuesBecomeTheAttributes({ try Store(path: path, model: $0) }, plan: { try Store.migrationPlan(forStoreAt: path, to: $0) })
    }

    @Test func aBackupThatCannotBeWrittenStopsTheMigration() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        try Self.fillVersion1(path)
        // A directory where the backup would go.
        try FileManager.default.createDirectory(atPath: Store.backupPath(for: path, version: try Self.version1().versionHash),
                                                withIntermediateDirectories: false)
        guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(path: path, model: try Self.version2(), options: .removingData) }) else {
            Issue.record("expected the migration to stop")
            return
        }
        #expect(problems.first?.contains("cannot be written") == true)
        #expect(try metadata(path, "model_hash") == Self.version1().versionHash)
        // Opting out of the backup lets it run.
        var options = Store.Options.removingData
        options.backsUpBeforeMigrating = false
        _ = try Store(path: path, model: try Self.version2(), options: options)
        #expect(try metadata(path, "model_hash") == Self.version2().versionHash)
    }

    @Test func migrationCanBeTurnedOff() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        try Self.fillVersion1(path)
        var options = Store.Options()
        options.migratesStore = false
        guard case .modelMismatch = amberError({ _ = try Store(path: path, model: try Self.version2(), options: options) }) else {
            Issue.record("expected a model mismatch")
            return
        }
        #expect(try metadata(path, "model_hash") == Self.version1().versionHash)
    }

    // MARK: Renaming everything

    /// A model with a hierarchy, an ordered one-to-many, an ordered many-to-many,
    /// a one-way to-one, a self-relationship and an extensible entity; `renamed`
    /// renames every entity, attribute and relationship (through renaming
    /// identifiers) and lists the entities in another order.
    static func graphModel(renamed: Bool) throws -> Model {
        func n(_ name: String) -> String { renamed ? name + "2" : name }
        func attribute(_ a: AttributeDescription) -> AttributeDescription {
            renamed ? { var c = a; c.name = a.name + "2"; return c.renamed(from: a.name) }() : a
        }
        func relationship(_ r: RelationshipDescription) -> RelationshipDescription {
            guard renamed else { return r }
            var c = r
            c.name = r.name + "2"
            c.destination = r.destination + "2"
            c.inverse = r.inverse.map { $0 + "2" }
            return c.renamed(from: r.name)
        }
        func entity(_ e: EntityDescription) -> EntityDescription {
            guard renamed else { return e }
            var c = e
            c.name = e.name + "2"
            c.parent = e.parent.map { $0 + "2" }
            return c.renamed(from: e.name)
        }
        var entities = [
            EntityDescription("Person", attributes: [attribute(Attribute.string("name"))],
                              relationships: [relationship(Relationship.toOne("mentor", "Person"))]).abstract(),
            EntityDescription("Writer", attributes: [attribute(Attribute.integer32("born"))],
                              relationships: [relationship(Relationship.toMany("books", "Book", inverse: "writer").ordered())])
                .inheriting(from: "Person"),
            EntityDescription("Editor", attributes: [attribute(Attribute.double("rate"))]).inheriting(from: "Person"),
            EntityDescription("Book", attributes: [attribute(Attribute.string("title")), attribute(Attribute.date("published"))],
                              relationships: [relationship(Relationship.toOne("writer", "Writer", inverse: "books")),
                                              relationship(Relationship.toMany("tags", "Tag", inverse: "books").ordered())])
                .extensible(),
            EntityDescription("Tag", attributes: [attribute(Attribute.string("label"))],
                              relationships: [relationship(Relationship.toMany("books", "Book", inverse: "tags"))]),
        ].map(entity)
        if renamed { entities.reverse() }
        return try Model(ModelDescription(entities: entities))
    }

    /// Every object of `model`'s store as text, names without the "2" suffix, sorted: values, links in order, extended keys.
    static func dump(_ store: Store) throws -> [String] {
        let context = Context(store: store)
        func plain(_ name: String) -> String { name.hasSuffix("2") ? String(name.dropLast()) : name }
        func key(_ object: ManagedObject) -> String { "\(plain(object.objectID.entityName))#\(object.objectID.primaryKey ?? -1)" }
        var lines: [String] = []
        let entities = store.model.entities.filter { !$0.isAbstract }
        for entity in entities {
            for object in try context.fetch({ var r = FetchRequest(entity.name); r.includesSubentities = false; return r }()) {
                var parts = [key(object)]
                for attribute in entity.attributes { parts.append("\(plain(attribute.name))=\(try object.value(for: attribute))") }
                for relationship in entity.relationships {
                    let targets = relationship.isToMany ? try object.objects(for: relationship) : [try object.object(for: relationship)].compactMap { $0 }
                    let names = targets.map(key)
                    parts.append("\(plain(relationship.name))->" + (relationship.isOrdered ? names : names.sorted()).joined(separator: ","))
                }
                if entity.isExtensible { parts.append("extra=\(try object.extendedValues().sorted { $0.key < $1.key })") }
                lines.append(parts.joined(separator: " "))
            }
        }
        return lines.sorted()
    }

    @Test func renamingEverythingKeepsEveryValueAndLink() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        let before: [String]
        do {
            let store = try Store(path: path, model: try Self.graphModel(renamed: false))
            let context = Context(store: store)
            var random = SplitMix64(seed: 16)
            let tags = try (0..<6).map { i in
                let tag = try context.insert("Tag")
                try tag.setValue(.string("t\(i)"), forKey: "label")
                return tag
            }
            var people: [ManagedObject] = []
            for i in 0..<30 {
                let writer = i % 3 != 0
                let person = try context.insert(writer ? "Writer" : "Editor")
                try person.setValue(.string("p\(i)"), forKey: "name")
                try person.setValue(writer ? .int(Int64(1900 + i)) : .double(Double(i) / 4), forKey: writer ? "born" : "rate")
                if let mentor = people.randomElement(using: &random), Bool.random(using: &random) { try person.setObject(mentor, forKey: "mentor") }
                people.append(person)
                guard writer else { continue }
                for j in 0..<Int.random(in: 0...4, using: &random) {
                    let book = try context.insert("Book")
                    try book.setValue(.string("b\(i).\(j)"), forKey: "title")
                    try book.setValue(.date(Date(timeIntervalSinceReferenceDate: Double(i * 1000 + j) + 0.25)), forKey: "published")
                    try book.setObject(person, forKey: "writer")
                    try book.setObjects(Array(tags.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random))), forKey: "tags")
                    if j % 2 == 0 { try book.setValue(.string("s\(j)"), forExtendedKey: "shelf") }
                }
                // Reverse a writer's order so positions are not key order.
                try person.setObjects(try person.objects(forKey: "books").reversed(), forKey: "books")
            }
            try context.save()
            before = try Self.dump(store)
        }
        let after = try Self.dump(Store(path: path, model: try Self.graphModel(renamed: true)))
        #expect(before.count > 40)
        #expect(after == before)
    }

    // MARK: The graph and hierarchies

    static func peopleModel(_ version: Int) throws -> Model {
        var person = EntityDescription("Person", attributes: [Attribute.string("name")],
                                       relationships: [Relationship.toOne("passport", "Passport", inverse: "owner")])
        var passport = EntityDescription("Passport", attributes: [Attribute.string("number")],
                                         relationships: [Relationship.toOne("owner", "Person", inverse: "passport")])
        let employee = EntityDescription("Employee", attributes: [Attribute.double("salary")]).inheriting(from: "Person")
        var pet = EntityDescription("Pet", attributes: [Attribute.string("name")])
        if version == 1 {
            person = person.extensible()
            person.relationships.append(Relationship.toMany("pets", "Pet", inverse: "owner"))
            pet.relationships.append(Relationship.toOne("owner", "Person", inverse: "pets"))
            return try Model(ModelDescription(entities: [person, passport, employee, pet]))
        }
        // Version 2: a passport may have several owners (to-one to to-many), pets lose their owners,
        // Person is no longer extensible, and employees are gone.
        passport.relationships[0] = Relationship.toMany("owner", "Person", inverse: "passport")
        return try Model(ModelDescription(entities: [person, passport, pet]))
    }

    @Test func graphAndHierarchyChanges() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        do {
            let context = Context(store: try Store(path: path, model: try Self.peopleModel(1)))
            for i in 0..<4 {
                let person = try context.insert(i == 3 ? "Employee" : "Person")
                try person.setValue(.string("p\(i)"), forKey: "name")
                let passport = try context.insert("Passport")
                try passport.setValue(.string("n\(i)"), forKey: "number")
                if i != 2 { try person.setObject(passport, forKey: "passport") }
                let pet = try context.insert("Pet")
                try pet.setValue(.string("pet\(i)"), forKey: "name")
                if i < 3 { try pet.setObject(person, forKey: "owner") }
                if i == 0 { try person.setValue("x", forExtendedKey: "nickname") }
            }
            try context.save()
        }
        // An object with extended attributes stops Person from losing them: the plan (a rehearsal) says so as the migration does.
        let refusal = amberError({ _ = try Store(path: path, model: try Self.peopleModel(2), options: .removingData) })
        guard case .migrationFailed(_, let problems) = refusal,
              case .migrationFailed(_, let planned) = amberError({ _ = try Store.migrationPlan(forStoreAt: path, to: try Self.peopleModel(2)) })
        else {
            Issue.record("expected the migration and its plan to be refused, got \(String(describing: refusal))")
            return
        }
        #expect(problems.count == 1 && problems[0].hasPrefix("Person: no longer extensible, but object amber://") && planned == problems)
        do {
            let context = Context(store: try Store(path: path, model: try Self.peopleModel(1)))
            let first = try context.fetch("Person", where: "name == 'p0'")
            try first[0].setValue(.null, forExtendedKey: "nickname")
            try context.save()
        }
        let plan = try Store.migrationPlan(forStoreAt: path, to: try Self.peopleModel(2))
        #expect(plan.contains("remove entity Employee and its objects"))
        #expect(plan.contains("remove Person.pets and its links") && plan.contains("remove Pet.owner and its links"))
        #expect(plan.contains("Passport.owner: to-one to to-many (each object keeps its destination as its only member)"))
        let store = try Store(path: path, model: try Self.peopleModel(2), options: .removingData)
        let context = Context(store: store)
        let people = try context.fetch("Person", sortedBy: [SortKey("name")])
        #expect(try people.map { try $0.value(forKey: "name") } == ["p0", "p1", "p2"])
        #expect(try people.map { try $0.object(forKey: "passport")?.value(forKey: "number") } == ["n0", "n1", nil])
        let passports = try context.fetch("Passport", sortedBy: [SortKey("number")])
        // Employee p3 went with its entity, so passport n3 has no owner left.
        #expect(try passports.map { try $0.objects(forKey: "owner").map { try $0.value(forKey: "name") } } == [["p0"], ["p1"], [], []])
        #expect(try context.fetch("Pet").count == 4)
        #expect(try sqlite(path, "SELECT count(*) FROM Person WHERE _entity NOT IN (1)") == "0")
    }

    // MARK: Reviewers' finds

    /// Opens `path` with `model`, expecting a refusal; its problems.
    static func refusal(_ path: String, _ model: Model) -> [String] {
        guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(path: path, model: model) }) else { return [] }
        return problems
    }

    @Test func movesWithinAHierarchyAndShadowedKeysAreRefused() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        let v1 = ModelDescription {
            EntityDescription("Item") { Attribute.string("code") }.extensible()
            EntityDescription("Book") { Attribute.string("title") }.inheriting(from: "Item")
            EntityDescription("Shelf") { Attribute.string("label") }
        }
        do {
            let context = Context(store: try Store(path: path, model: try Model(v1)))
            let book = try context.insert("Book")
            try book.setValue("Dune", forKey: "title")
            try book.setValue("red", forExtendedKey: "color")
            try context.save()
        }
        // title moves up to Item: Book's rows would keep it, Item's would not.
        var up = v1
        up.entities[0].attributes.append(Attribute.string("title"))
        up.entities[1].attributes = []
        #expect(Self.refusal(path, try Model(up)) == ["Book.title: moves between Book and the entities above or below it: cannot be inferred"])
        var reparented = v1
        reparented.entities[1].parent = nil
        #expect(Self.refusal(path, try Model(reparented)).contains("Book: parent Item to none: cannot be inferred"))
        // A relationship's name would hide an extended key (a stored attribute takes its values instead).
        var shadowing = v1
        shadowing.entities[1].relationships.append(Relationship.toOne("color", "Shelf"))
        #expect(Self.refusal(path, try Model(shadowing)).first?.hasPrefix("Book.color: object amber://") == true)
        // A version hash modifier alone is a migration with a plan.
        var modified = v1
        modified.entities[2].versionHashModifier = "2"
        #expect(try Store.migrationPlan(forStoreAt: path, to: try Model(modified)).count == 1)
        _ = try Store(path: path, model: try Model(modified))
        #expect(try metadata(path, "model_hash") == Model(modified).versionHash)
    }

    @Test func orderTablesNamedLikePatternsAndDeletedKeysSurvive() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        // Names a LIKE pattern would have matched, a program's own table, and an ordered one-to-many.
        let v1 = ModelDescription {
            EntityDescription("OldCar") { Attribute.string("plate"); Relationship.toMany("tags", "SQLiteCache", inverse: "cars") }
            EntityDescription("SQLiteCache") { Attribute.string("label"); Relationship.toMany("cars", "OldCar", inverse: "tags") }
            EntityDescription("Author") { Attribute.string("name"); Relationship.toMany("books", "Book", inverse: "author").ordered() }
            EntityDescription("Book") { Attribute.string("title"); Relationship.toOne("author", "Author", inverse: "books") }
        }
        do {
            let context = Context(store: try Store(path: path, model: try Model(v1)))
            let car = try context.insert("OldCar"), tag = try context.insert("SQLiteCache"), author = try context.insert("Author")
            try car.setValue("AB-12", forKey: "plate")
            try tag.setValue("vintage", forKey: "label")
            try car.setObjects([tag], forKey: "tags")
            try author.setValue("Le Guin", forKey: "name")
            var books: [ManagedObject] = []
            for title in ["c", "a", "d", "b"] {
                let book = try context.insert("Book")
                try book.setValue(.string(title), forKey: "title")
                books.append(book)
            }
            try author.setObjects(books, forKey: "books")
            let gone = try context.insert("Book")
            try gone.setValue("gone", forKey: "title")
            try context.save()
            try context.delete(gone)  // key 5 must never be given again
            try context.save()
        }
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "CREATE TABLE mine (x); INSERT INTO mine VALUES (42)", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        // Book.author becomes to-many (Author.books an ordered many-to-many), Book is renamed, cars gain a field.
        var v2 = v1
        v2.entities[0].attributes.append(Attribute.integer16("year"))
        v2.entities[2].relationships[0] = Relationship.toMany("books", "Volume", inverse: "authors").ordered()
        v2.entities[3].name = "Volume"
        v2.entities[3].renamingIdentifier = "Book"
        v2.entities[3].relationships[0] = Relationship.toMany("authors", "Author", inverse: "books").renamed(from: "author")
        let store = try Store(path: path, model: try Model(v2))
        let context = Context(store: store)
        let author = try #require(try context.fetch("Author").first)
        #expect(try author.objects(forKey: "books").map { try $0.value(forKey: "title") } == ["c", "a", "d", "b"])
        let car = try #require(try context.fetch("OldCar").first)
        #expect(try car.objects(forKey: "tags").map { try $0.value(forKey: "label") } == ["vintage"])
        #expect(try sqlite(path, "SELECT x FROM mine") == "42")
        let volume = try context.insert("Volume")
        try volume.setValue("new", forKey: "title")
        try context.save()
        #expect(volume.objectID.primaryKey == 6)
    }

    @Test func aSubEntitysNewColumnIsFilledOnlyInItsRows() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        var description = ModelDescription {
            EntityDescription("Item") { Attribute.string("name") }
            EntityDescription("Note") { Attribute.string("text") }.inheriting(from: "Item")
            EntityDescription("Tag") { Attribute.string("color") }.inheriting(from: "Item")
        }
        do {
            let context = Context(store: try Store(path: path, model: try Model(description)))
            for entity in ["Note", "Note", "Tag"] { try context.insert(entity).setValue(.string(entity), forKey: "name") }
            try context.save()
        }
        // Tag gains a unique code with a default: the notes' rows, which have no code, must not take it.
        description.entities[2].attributes.append(Attribute.string("code").defaultValue("t1"))
        description.entities[2] = description.entities[2].unique("code")
        _ = try Store(path: path, model: try Model(description))
        #expect(try sqlite(path, "SELECT group_concat(coalesce(code, '-'), ',') FROM (SELECT code FROM Item ORDER BY _pk)") == "-,-,t1")
    }

    @Test func aRequiredReencodedColumnIsMovedOnceAndNamesItsFailure() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        let registry = try Self.registryWithV2()
        var description = try coverModel(registry).description
        description.entities[0].attributes[1].isOptional = false
        let old = try Model(description, registry: registry)
        do {
            let context = Context(store: try Store(path: path, model: old))
            for i in 0..<3 {
                let book = try context.insert("Book")
                try book.setValue(.string("b\(i)"), forKey: "title")
                try book.setValue(try color(1, 1, Float(i), 1, in: registry), forKey: "cover")
            }
            try context.save()
        }
        description.entities[0].attributes[1].transformerNames = ["ColorToDataV2"]
        let new = try Model(description, registry: registry)
        #expect(try Store.migrationPlan(forStoreAt: path, to: new).contains("Book.cover: re-encode every stored value, from Color via ColorToData to Color via ColorToDataV2"))
        let collected = Collected()
        var options = Store.Options()
        options.migrationProgress = { collected.append("\($0)") }
        _ = try Store(path: path, model: new, options: options)
        #expect(collected.items.filter { $0.hasPrefix("re-encode") } == ["re-encode Book.cover: 3/3"])
    }

    // MARK: Transformer migration

    /// `ColorToDataV2`: Color ↔ the four channels as text, so the stored form visibly changes.
    static func registryWithV2() throws -> Registry {
        let registry = try colorRegistry()
        try registry.register(Transformer(
            name: "ColorToDataV2", from: "Color", to: "String", source: "test",
            forward: { value in
                guard case .custom(let color) = value else { return .null }
                let floats = color.bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
                if floats[2] < 0 { throw TestFailure() }
                return .string(floats.map { String($0.bitPattern) }.joined(separator: " "))
            },
            reverse: { value in
                guard case .string(let text) = value else { return .null }
                let floats = text.split(separator: " ").compactMap { UInt32($0) }.map(Float.init(bitPattern:))
                return .custom(CustomValue(className: "Color", bytes: floats.withUnsafeBytes { Data($0) }))
            }))
        return registry
    }

    @Test func changingATransformerReEncodesEveryValue() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = Self.path(in: directory)
        let registry = try Self.registryWithV2()
        let old = try coverModel(registry)
        let count = 100_000
        var colors: [Value] = []
        do {
            let context = Context(store: try Store(path: path, model: old))
            for i in 0..<count {
                let book = try context.insert("Book")
                try book.setValue(.string("b\(i)"), forKey: "title")
                let colour = try color(Float(i) / 7, 0.5, -Float(i), 1, in: registry)
                colors.append(i % 10 == 0 ? .null : colour)
                try book.setValue(colors[i], forKey: "cover")
            }
            try context.save()
        }
        var description = old.description
        description.entities[0].attributes[1].transformerNames = ["ColorToDataV2"]
        let new = try Model(description, registry: registry)
        // A value the new chain refuses fails the whole migration, naming its object, and its plan (a rehearsal) alike.
        guard case .migrationFailed(_, let problems) = amberError({ _ = try Store(path: path, model: new) }),
              case .migrationFailed(_, let planned) = amberError({ _ = try Store.migrationPlan(forStoreAt: path, to: new) })
        else {
            Issue.record("expected the migration and its plan to fail")
            return
        }
        #expect(problems.count == 1 && problems[0].hasPrefix("Book.cover of amber://") && problems[0].contains("/Book/p2 (encoding with the new chain)"))
        #expect(planned == problems)
        #expect(try metadata(path, "model_hash") == old.versionHash)
        // Without the refused values it moves every one.
        do {
            let context = Context(store: try Store(path: path, model: old))
            for book in try context.fetch("Book") {
                guard case .custom(let c) = try book.value(forKey: "cover") else { continue }
                let floats = c.bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
                if floats[2] < 0 { try book.setValue(try color(abs(floats[0]), floats[1], -floats[2], floats[3], in: registry), forKey: "cover") }
            }
            try context.save()
        }
        let collected = Collected()
        var options = Store.Options()
        options.migrationProgress = { collected.append("\($0)") }
        let store = try Store(path: path, model: new, options: options)
        #expect(collected.items.last { $0.hasPrefix("re-encode") } == "re-encode Book.cover: \(count - count / 10)/\(count - count / 10)")
        #expect(try sqlite(path, "SELECT count(*) FROM Book WHERE typeof(cover) = 'text'") == String(count - count / 10))
        let context = Context(store: store)
        for book in try context.fetch("Book") {
            guard case .string(let title) = try book.value(forKey: "title"), let i = Int(title.dropFirst()) else { throw TestFailure() }
            let expected = i % 10 == 0 ? Value.null : try color(Float(i) / 7, 0.5, Float(i), 1, in: registry)
            #expect(try book.value(forKey: "cover") == expected)
        }
    }

    // MARK: Helpers

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String] = []
        func append(_ item: String) { lock.lock(); stored.append(item); lock.unlock() }
        var items: [String] { lock.lock(); defer { lock.unlock() }; return stored }
    }
}

/// The first column of the first row of `sql` on the file at `path`, as text.
func sqlite(_ path: String, _ sql: String) throws -> String {
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw TestFailure() }
    defer { sqlite3_close_v2(db) }
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw TestFailure() }
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return "" }
    return String(cString: text)
}

/// A value of the store's metadata table.
func metadata(_ path: String, _ key: String) throws -> String {
    try sqlite(path, "SELECT value FROM _amber_metadata WHERE key = '\(key)'")
}
