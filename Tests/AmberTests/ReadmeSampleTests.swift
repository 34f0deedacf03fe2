import Foundation
import Testing
@testable import Amber

/// The Swift samples of README.md and docs/*.md, run as written: each test
/// holds one or more samples verbatim (between the setup their prose
/// supplies and checks of what they did), in a fresh temporary folder as the
/// working directory, since the samples name files such as `books.amber`.
/// ``everySampleIsRun`` fails when a Swift sample in those files or the
/// DocC articles, or a C sample in docs/*.md, is not in its test file
/// (here, DocumentationSampleTests or Tests/CAPITests/docs_test.c) as written.
@Suite(.serialized) struct ReadmeSampleTests {
    /// Runs `body` with a new empty folder as the working directory. The
    /// process's directory is changed, so other suites running meanwhile
    /// must not use relative paths (none does: they use temporaryDirectory()).
    private func inScratchFolder(_ body: (URL) throws -> Void) throws {
        let folder = temporaryDirectory()
        let previous = FileManager.default.currentDirectoryPath
        defer { try? FileManager.default.removeItem(at: folder) }  // runs last: the directory is never a removed one
        #expect(FileManager.default.changeCurrentDirectoryPath(folder.path))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        try body(folder)
    }

    /// Stands for a list view: records what a live query told it.
    private final class TableView {
        var applied: [(deleted: Int, inserted: Int, moved: Int, updated: Int)] = []

        func apply(deleting: [LiveQuery.Position], inserting: [LiveQuery.Position],
                   moving: [(from: LiveQuery.Position, to: LiveQuery.Position)], reloading: [LiveQuery.Position],
                   sections: ([Int], [Int]))
        {
            applied.append((deleting.count, inserting.count, moving.count, reloading.count))
        }
    }

    /// "Swift in a minute", then the samples that go on with its store,
    /// context and book: handles, merging, undo, observers and live
    /// queries, maintenance; and docs/durability.md.
    @Test func minuteAndTheSamplesThatFollowIt() throws {
        try inScratchFolder { folder in
            let tableView = TableView()
            var heard: [[String]] = []

            let model = try Model(ModelDescription {
                EntityDescription("Book") {
                    Attribute.string("title").required().length(atLeast: 1)
                    Attribute.string("author").required()
                    Attribute.decimal("price").min(0)
                    Attribute.date("published").indexed()
                }
                .unique("title", "author")
            })

            let store = try Store(path: "books.amber", model: model)
            let context = Context(store: store)

            let book = try context.insert("Book")
            try book.setValue("L'Étranger", forKey: "title")
            try book.setValue("Albert Camus", forKey: "author")
            try book.setValue(.decimal(try Value.decimal(parsing: "9.90")), forKey: "price")
            try context.save()   // one transaction; on failure nothing is written and nothing is lost

            let found = try context.fetch("Book", where: "title CONTAINS[cd] %@", "etranger",
                                          sortedBy: [.descending("published")], limit: 10)
            #expect(found.count == 1 && found[0] === book)

            let title = try model.entity(named: "Book").attribute(named: "title")
            try book.setValue("Dune", for: title)
            let value = try book.value(for: title)
            #expect(value == "Dune")

            let draft = try context.insert("Book")                  // not saved yet
            try draft.setValue("Draft", forKey: "title")
            try draft.setValue("Me", forKey: "author")
            let drafts = try context.fetch("Book", where: "title == %@", "Draft")     // [draft]
            var saved = try FetchRequest("Book", where: "title == %@", "Draft")
            saved.includesPendingChanges = false
            let none = try context.fetch(saved)                     // []: the store alone
            let dees = try context.filter([book, draft], matching: try FetchPredicate("title BEGINSWITH 'D'"))
            try context.delete(draft)                               // a new object is simply dropped
            #expect(drafts.count == 1 && drafts[0] === draft && none.isEmpty && dees.count == 2)
            #expect(try context.fetch("Book").count == 1)

            let reader = Context(store: store)
            reader.automaticallyMergesChanges = true      // or call reader.mergeSavedChanges()
            let held = try reader.fetch("Book")[0]
            try held.setValue("L'Étranger (2nd ed.)", forKey: "title")
            try book.setValue(.decimal(try Value.decimal(parsing: "10.50")), forKey: "price")
            try context.save()                            // another context saves a new price for the same book
            _ = try reader.fetch("Book")                  // merged: the new price, and still our title
            try reader.refresh(held, mergeChanges: false) // or drop our change and read it as saved
            #expect(try held.value(forKey: "title") == "Dune" && !reader.hasChanges)
            #expect(try held.value(forKey: "price") == .decimal(try Value.decimal(parsing: "10.50")))

            context.undoStack = UndoStack(levelsLimit: 50)   // 0: no limit
            try context.undoStack?.group(named: "Rename") {   // several calls, one undo step
                try book.setValue("Dune Messiah", forKey: "title")
                try book.setValue("Frank Herbert", forKey: "author")
            }
            try context.undo()          // false when there is nothing to undo
            try context.redo()          // until the next new change
            context.undoStack?.undoActionName                 // "Rename", for a menu
            #expect(context.undoStack?.undoActionName == "Rename")
            #expect(try book.value(forKey: "author") == "Frank Herbert")
            #expect(try context.undo())
            #expect(try book.value(forKey: "title") == "Dune" && book.value(forKey: "author") == "Albert Camus")
            #expect(try context.redo())
            #expect(try book.value(forKey: "title") == "Dune Messiah")
            try context.save()

            let listener = context.addObserver { report in heard += report.updated.map(\.keys) }
            let token = context.addObserver { report in       // .saved, .merged, .refreshed
                for update in report.updated { print(update.object.objectID, update.keys) }   // amber://…/Book/p1 ["price"]
                _ = (report.inserted, report.deleted, report.refreshed)
            }
            try book.setValue(.decimal(try Value.decimal(parsing: "11")), forKey: "price")
            context.pendingChanges                             // the same report, for unsaved changes
            try context.save()                                 // the observer hears the new price
            context.removeObserver(token)

            let byMonth = try LiveQuery(FetchRequest("Book", sortedBy: [.ascending("published"), .ascending("title")]),
                                        in: context, sectionKey: "published", by: .month)
            byMonth.onChange = { changes in                    // after each event, or processPendingChanges(), that moved it
                tableView.apply(deleting: changes.deleted, inserting: changes.inserted, moving: changes.moved,   // your list view
                                reloading: changes.updated, sections: (changes.deletedSections, changes.insertedSections))
            }
            byMonth.sections                                   // value (the month) and range of each section
            try context.processPendingChanges()                // unsaved edits show now, not only at the next save
            #expect(byMonth.sections.map(\.range) == [0..<1])
            context.removeObserver(listener)
            #expect(heard == [["price"]])
            let second = try context.insert("Book")
            try second.setValue("Dune", forKey: "title")
            try second.setValue("Frank Herbert", forKey: "author")
            try second.setValue(.date(Date(timeIntervalSince1970: 1_000_000_000)), forKey: "published")
            try context.processPendingChanges()
            #expect(tableView.applied.count == 1 && tableView.applied[0].inserted == 1)
            try context.save()                                 // already shown: nothing more to apply
            #expect(tableView.applied.count == 1 && byMonth.sections.count == 2)

            let problems = try store.checkIntegrity()        // [] for a sound store
            try store.backup(to: "books-2026-11-24.amber")   // online; never over an existing file
            try store.vacuum()                                // give back the space of deleted objects
            #expect(problems.isEmpty)
            let copy = Context(store: try Store(path: folder.appendingPathComponent("books-2026-11-24.amber").path, model: model))
            #expect(try copy.count(FetchRequest("Book")) == 2)

            // docs/durability.md
            do {
                var options = Store.Options()
                options.durability = .full
                let store = try Store(path: "ledger.amber", model: model, options: options)
                let clerk = Context(store: store)
                let entry = try clerk.insert("Book")
                try entry.setValue("Ledger", forKey: "title")
                try entry.setValue("Clerk", forKey: "author")
                try clerk.save()
                #expect(try Context(store: store).count(FetchRequest("Book")) == 1)
            }
        }
    }

    @Test func changesByPredicate() throws {
        let context = Context(store: try Store.inMemory(model: booksModel()))
        try insertBook(context, "Dune", "Herbert", price: .decimal(try Value.decimal(parsing: "4.50")))
        try insertBook(context, "Draft 1", "Nobody", price: .decimal(try Value.decimal(parsing: "20")))
        try insertBook(context, "Kindred", "Butler", price: .decimal(try Value.decimal(parsing: "9.90")))
        try context.save()

        let cheap = try FetchRequest("Book", where: "price < %@", .decimal(try Value.decimal(parsing: "5")))
        let repriced = try context.batchUpdate(cheap, set: ["price": .attribute("price") * .value(.decimal(try Value.decimal(parsing: "1.10"))),
                                                           "isRead": false])
        let removed = try context.batchDelete(FetchRequest("Book", where: "title BEGINSWITH %@", "Draft"))
        print(repriced.objectIDs.count, removed.objectIDs.count)
        #expect(repriced.objectIDs.count == 1 && removed.objectIDs.count == 1)
        // 4.50 * 1.10, with the scale decimal arithmetic gives a product.
        #expect(try context.fetch("Book", where: "title == 'Dune'").first?.value(forKey: "price") == .decimal(try Value.decimal(parsing: "4.9500")))
    }

    @Test func storesByURLAndTheHistory() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("shared.amber").path
        let model = try booksModel()
        let shared = try Store(url: "file://" + path, model: model)   // or "memory:", or a path
        let since = try shared.lastHistoryToken()
        let importer = Context(store: shared)
        importer.name = "importer"
        importer.transactionAuthor = "nightly import"
        let imported = try importer.insert("Book")
        try imported.setValue("Dune", forKey: "title")
        try imported.setValue("Herbert", forKey: "author")
        try importer.save()
        for transaction in try shared.history(after: since) {
            for change in transaction.changes {
                print(transaction.author ?? "-", change.kind, change.objectID, change.changedKeys)
            }
        }
        try shared.purgeHistory(through: try shared.lastHistoryToken())
        #expect(try shared.history().isEmpty && shared.lastHistoryToken().sequence == 1)
        #expect(try Context(store: shared).fetch("Book").count == 1)
    }

    @Test func objectGraph() throws {
        let graph = try Model(ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name").required()
                Relationship.toMany("books", "Book", inverse: "author").deleteRule(.cascade)
            }
            EntityDescription("Book") {
                Attribute.string("title").required()
                Relationship.toOne("author", "Author", inverse: "books").required()
                Relationship.toMany("tags", "Tag", inverse: "books").ordered()
            }
            EntityDescription("Tag") {
                Attribute.string("label")
                Relationship.toMany("books", "Book", inverse: "tags")
            }
        })
        let books = try graph.entity(named: "Author").relationship(named: "books")
        let library = Context(store: try Store.inMemory(model: graph))

        let tolkien = try library.insert("Author")
        try tolkien.setValue("Tolkien", forKey: "name")
        let hobbit = try library.insert("Book")
        try hobbit.setValue("The Hobbit", forKey: "title")
        try hobbit.setObject(tolkien, forKey: "author")        // tolkien's books now hold it
        try tolkien.objects(for: books)                         // [hobbit]
        try library.save()                                      // new objects linked in one pass

        // Key paths, quantifiers, collection operators and subqueries in predicates; prefetching:
        let prolific = try library.fetch("Author", where: "books.@count > 3 AND ANY books.title BEGINSWITH %@", "The")
        let cheap = try library.fetch("Author", where: "SUBQUERY(books, $b, $b.title BEGINSWITH 'The').@count >= 2")
        let loaded = try library.fetch(FetchRequest("Book", predicate: try FetchPredicate("author.name == %@", "Tolkien"),
                                                    sortedBy: [.ascending("author.name")], prefetching: ["author", "tags"]))
        #expect(prolific.isEmpty && cheap.isEmpty && loaded.map(\.objectID) == [hobbit.objectID])
        #expect(try tolkien.objects(for: books).map(\.objectID) == [hobbit.objectID])
    }

    @Test func derivedAttributes() throws {
        let shelf = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.string("canonicalTitle").derived("canonical:(title)").indexed()
                Attribute.string("authorName").derived("author.name")
                Relationship.toOne("author", "Author", inverse: "books")
            }
            EntityDescription("Author") {
                Attribute.string("name")
                Attribute.integer64("bookCount").derived("books.@count")
                Attribute.date("touched").derived("now()")
                Relationship.toMany("books", "Book", inverse: "author")
            }
        })
        let context = Context(store: try Store.inMemory(model: shelf))
        let book = try context.insert("Book")
        try book.setValue("Crème Brûlée", forKey: "title")
        try context.save()
        try book.value(forKey: "canonicalTitle")      // "creme brulee"
        try context.fetch("Book", where: "canonicalTitle CONTAINS[cd] %@", .string("BRÛL"))
        #expect(try book.value(forKey: "canonicalTitle") == "creme brulee")
        #expect(try context.fetch("Book", where: "canonicalTitle CONTAINS[cd] %@", .string("BRÛL")).count == 1)
    }

    @Test func computedAttributes() throws {
        try Registry.shared.register(ComputeFunction("publishMonth") { sources in
            guard case .date(let date) = sources[0] else { return .null }
            return .string(String(date.formatted(.iso8601).prefix(7)))   // "2026-11"; checked against the attribute on every call
        })
        let diary = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.date("published")
                Attribute.string("publishMonth").computed(by: "publishMonth", from: "published")
            }
        })
        let context = Context(store: try Store.inMemory(model: diary))
        let book = try context.insert("Book")
        try book.setValue(.date(Date(timeIntervalSince1970: 1_795_000_000)), forKey: "published")
        #expect(try book.value(forKey: "publishMonth") == "2026-11")
    }

    @Test func extendedAttributes() throws {
        let library = try Model(ModelDescription {
            EntityDescription("Book") { Attribute.string("title") }.extensible()   // JSON: "extensible": true
        })
        let context = Context(store: try Store.inMemory(model: library))
        let book = try context.insert("Book")
        try book.setValue("B2", forKey: "shelf")                  // or setValue(_:forExtendedKey:)
        try book.setValue(.date(.now), forExtendedKey: "lentOn")
        try book.extendedKeys()                                    // ["lentOn", "shelf"]
        try context.save()
        let cutoff = Date.now.addingTimeInterval(86_400)
        let shelved = try context.fetch("Book", where: "shelf == %@ AND lentOn < %@", "B2", .date(cutoff),
                                        sortedBy: [.ascending("shelf")])
        try book.setValue(nil, forKey: "lentOn")                  // null removes a key
        #expect(shelved.count == 1 && shelved[0] === book)
        #expect(try book.extendedKeys() == ["shelf"])
    }

    @Test func fetchRequestTemplates() throws {
        let description = ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            EntityDescription("Book") {
                Attribute.decimal("price")
                Attribute.date("published")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        }
            .template("booksByAuthor", entity: "Book", where: "author.name == $AUTHOR AND price < $MAX",
                      sortedBy: [.ascending("published")])
        let model = try Model(description)
        let context = Context(store: try Store.inMemory(model: model))
        let request = try model.fetchRequest(fromTemplate: "booksByAuthor",
                                             substituting: ["AUTHOR": "Albert Camus", "MAX": 20])
        let books = try context.fetch(request)   // change its order, limit or prefetching first if you like
        #expect(books.isEmpty)

        let camus = try context.insert("Author")
        try camus.setValue("Albert Camus", forKey: "name")
        for price in ["9.90", "25"] {
            let book = try context.insert("Book")
            try book.setValue(.decimal(try Value.decimal(parsing: price)), forKey: "price")
            try book.setObject(camus, forKey: "author")
        }
        try context.save()
        #expect(try context.fetch(request).map { try $0.value(forKey: "price") } == [.decimal(try Value.decimal(parsing: "9.90"))])
    }

    @Test func fetchedProperties() throws {
        let library = ModelDescription {
            EntityDescription("Author") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "author")
            }
            .fetching("recentBooks", entity: "Book", where: "author == $FETCH_SOURCE AND year >= 2000",
                      sortedBy: [SortKey("year", ascending: false)])
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer32("year")
                Relationship.toOne("author", "Author", inverse: "books")
            }
        }
        let shelf = Context(store: try Store.inMemory(model: Model(library)))
        let author = try shelf.insert("Author")
        let recent = try author.fetchedObjects(forKey: "recentBooks")   // fetched now, kept until refreshed
        try shelf.refresh(author, mergeChanges: true)                     // read again next time
        #expect(recent.isEmpty)
    }

    /// README's migration sample, then docs/migration.md's.
    @Test func migratingStores() throws {
        try inScratchFolder { _ in
            let version1 = try Model(ModelDescription {
                EntityDescription("Book") { Attribute.string("title") }
            })
            let version3 = try Model(ModelDescription {
                EntityDescription("Book") {
                    Attribute.string("title")
                    Attribute.string("subtitle").defaultValue("")
                    Attribute.integer32("pages").defaultValue(0)
                }
            })
            do {
                let context = Context(store: try Store(path: "books.amber", model: version1))
                try context.insert("Book").setValue("Dune", forKey: "title")
                try context.save()
            }

            do {
                var description = version1.description         // the model the store was made with; version3 is a later one
                description.entities[0].attributes.append(Attribute.string("subtitle").defaultValue(""))
                let store = try Store(path: "books.amber", model: try Model(description))   // migrated here
                try Store.migrationPlan(forStoreAt: "books.amber", to: version3)            // what a migration would do
                #expect(try Context(store: store).fetch("Book")[0].value(forKey: "subtitle") == "")
                #expect(try Store.migrationPlan(forStoreAt: "books.amber", to: version3) == ["add Book.pages (default 0)"])
            }

            // docs/migration.md
            let version2 = version3
            let plan = try Store.migrationPlan(forStoreAt: "books.amber", to: version2)  // what it would do; changes nothing
            let store = try Store(path: "books.amber", model: version2)            // migrates if needed
            #expect(plan == ["add Book.pages (default 0)"])
            #expect(try Store.migrationPlan(forStoreAt: "books.amber", to: version2).isEmpty)
            #expect(try Context(store: store).fetch("Book")[0].value(forKey: "pages") == 0)
        }
    }

    @Test func valueClassesAndTransformers() throws {
        let registry = Registry()
        try registry.declare(.structure(name: "Color", fields: ["r", "g", "b", "a"].map { FieldDescription($0, .float) }))
        try registry.register(Transformer(name: "ColorToData", from: "Color", to: "Binary",
            forward: { value in
                guard case .custom(let color) = value else { return .null }
                return .binary(color.bytes)             // the struct's 16 bytes
            },
            reverse: { value in
                guard case .binary(let bytes) = value else { return .null }
                return .custom(CustomValue(className: "Color", bytes: bytes))
            }))

        let covers = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.transformable("coverColor", valueClass: "Color", transformers: ["ColorToData"])
            }
        }, registry: registry)
        let context = Context(store: try Store.inMemory(model: covers))
        let book = try context.insert("Book")
        let color = try registry.structClass(named: "Color")?.value(["r": 0.9, "g": 0.7, "b": 0.4, "a": 1])
        try book.setValue(color ?? .null, forKey: "coverColor")
        try context.save()
        let read = try Context(store: context.store).fetch("Book")[0].value(forKey: "coverColor")
        #expect(color != nil && read == color)
    }

    @Test func plugins() throws {
        try inScratchFolder { folder in
            // The README's shell step builds libcolor.so; AES-GCM as install.sh names it.
            #expect(try samplePlugin("Color", "color.c", in: folder) == folder.appendingPathComponent("libcolor.so").path)
            try FileManager.default.moveItem(atPath: try samplePlugin("AESGCM", "aesgcm.c", in: folder, libraries: ["crypto"]),
                                             toPath: folder.appendingPathComponent("libAmberAESGCMPlugin.so").path)

            let hexKey = testKey
            try Registry.shared.loadPlugin(at: "libcolor.so")
            try Registry.shared.loadPlugin(at: "libAmberAESGCMPlugin.so", configuration: "key=\(hexKey)")   // your key: 64 hex digits
            #expect(Registry.shared.structClass(named: "Color") != nil && (try? Registry.shared.transformer(named: "AESGCM")) != nil)
        }
    }

    /// docs/xcode-models.md, on a bundle with transformable attributes that
    /// name no transformer and a secure unarchiver subclass.
    @Test func xcodeModels() throws {
        try inScratchFolder { folder in
            let version = folder.appendingPathComponent("Notes.xcdatamodeld/Notes.xcdatamodel")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            try xcodeXML("""
                <entity name="Tag"><attribute name="label" optional="YES" attributeType="String"/>\
                <attribute name="color" optional="YES" attributeType="Transformable"/>\
                <attribute name="related" optional="YES" attributeType="Transformable" valueTransformerName="TagListTransformer"/></entity>
                """).write(to: version.appendingPathComponent("contents"))

            let options = XcodeImportOptions(registry: .shared, secureUnarchiverSubclasses: ["TagListTransformer"])
            let imported = try XcodeModelImport(contentsOf: URL(fileURLWithPath: "Notes.xcdatamodeld"), options: options)
            for note in imported.notes { print("note: \(note)") }      // "Tag.color: no value transformer named: …"
            let model = try Model(imported.model, registry: .shared)    // binding reports every problem at once
            try imported.model.jsonText(pretty: true).write(toFile: "notes.json", atomically: true, encoding: .utf8)

            let notes = imported.notes.map { "\($0)" }
            #expect(notes.count == 2 && notes[0].hasPrefix("Tag.color: no value transformer named: values are stored through"))
            #expect(notes.count == 2 && notes[1].hasPrefix("Tag.related: transformer TagListTransformer (a secure unarchiver subclass"))
            #expect(model.entities.map(\.name) == ["Tag"])
            let written = try ModelDescription(json: Data(contentsOf: folder.appendingPathComponent("notes.json")))
            #expect(try Model(written, registry: .shared).versionHash == model.versionHash)
        }
    }

    // MARK: Every sample is here

    /// The code blocks of `file` fenced as `language`, each as its lines
    /// with leading white space removed, `import` lines dropped (the tests
    /// import) and blank lines at either end trimmed.
    private static func samples(in file: String, language: String) throws -> [[Substring]] {
        try String(contentsOf: repositoryRoot.appendingPathComponent(file), encoding: .utf8)
            .components(separatedBy: "```\(language)\n").dropFirst().map { block in
                let lines = trimmedLines(block.components(separatedBy: "\n```")[0]).filter { !$0.hasPrefix("import ") }
                let first = lines.firstIndex { !$0.isEmpty } ?? lines.endIndex
                let last = lines.lastIndex { !$0.isEmpty } ?? first
                return first < lines.endIndex ? Array(lines[first...last]) : []
            }
    }

    private static func trimmedLines(_ text: String) -> [Substring] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.drop { $0 == " " } }
    }

    /// Fails for each sample of `files` that is not a run of lines of one of
    /// `tests`; returns how many samples there were.
    private static func expectRun(_ language: String, of files: [String], in tests: [String]) throws -> Int {
        let sources = try tests.map { try trimmedLines(String(contentsOf: repositoryRoot.appendingPathComponent($0), encoding: .utf8)) }
        var count = 0
        for file in files {
            for (index, sample) in try samples(in: file, language: language).enumerated() {
                count += 1
                let found = sources.contains { lines in
                    sample.count <= lines.count && (0...(lines.count - sample.count)).contains { start in
                        lines[start..<start + sample.count].elementsEqual(sample)
                    }
                }
                #expect(found, "\(language) sample \(index + 1) of \(file) is not run by \(tests.joined(separator: " or ")) (or differs from its copy there)")
            }
        }
        return count
    }

    @Test func everySampleIsRun() throws {
        func markdown(in folder: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent(folder).path)
                .filter { $0.hasSuffix(".md") }.sorted().map { "\(folder)/\($0)" }
        }
        let docs = try markdown(in: "docs")
        let swift = try Self.expectRun("swift", of: ["README.md"] + docs + markdown(in: "Sources/Amber/Amber.docc"),
                                       in: ["Tests/AmberTests/ReadmeSampleTests.swift", "Tests/AmberTests/DocumentationSampleTests.swift",
                                           "Tests/AmberTypedTests/TypedSampleTests.swift"])
        // README.md's C example and docs/c-guide.md's program are built whole by the test command.
        let c = try Self.expectRun("c", of: docs.filter { $0 != "docs/c-guide.md" }, in: ["Tests/CAPITests/docs_test.c"])
        #expect(swift >= 21 && c >= 2, "found only \(swift) Swift and \(c) C samples: has the fence syntax changed?")
    }
}
