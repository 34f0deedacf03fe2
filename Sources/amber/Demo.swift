import Amber
import ArgumentParser
import Foundation

/// `amber demo`: the Books sample, in the spirit of Apple's data-types sample.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create (or open) a Books store, list the books by publish month, and search titles.")

    @Option(name: .long, help: "The store file; created with sample books if missing.")
    var store = "books.amber"

    @Option(name: .long, help: "Text to find in titles, ignoring case and diacritics.")
    var search = "etranger"

    @OptionGroup var plugins: PluginOptions

    func run() throws {
        try reportingErrors {
            // coverColor goes through the color plugin; notes through deflate and aesgcm.
            try plugins.load()
            let model = try Model(BooksSample.model)
            let existed = FileManager.default.fileExists(atPath: store)
            let opened = try Store(path: store, model: model)
            let context = Context(store: opened)
            let count = try context.count(FetchRequest("Book"))
            print("\(existed ? "Opened" : "Created") \(store) (\(count) book\(count == 1 ? "" : "s"))")
            if count == 0 {
                try BooksSample.insertSampleBooks(into: context)
                try context.save()
                print("Inserted \(BooksSample.books.count) sample books")
            }

            // A live query: the listing below, kept up to date as other contexts save (see TwoContexts).
            let byMonth = try LiveQuery(FetchRequest("Book", sortedBy: [.ascending("published"), .ascending("title")]),
                                        in: context, sectionKey: "published", by: .month)
            print("\nBooks by publish month:")
            for section in byMonth.sections {
                print("  \(BooksSample.monthTitle(section.value))")
                for book in byMonth.objects[section.range] { print("    \(try BooksSample.line(for: book))") }
            }

            let found = try context.fetch("Book", where: "canonicalTitle CONTAINS[cd] %@", .string(search), sortedBy: [.ascending("title")])
            print("\nTitles containing \"\(search)\" (ignoring case and diacritics, searched in canonicalTitle, "
                  + "derived as canonical:(title)): \(found.count)")
            for book in found {
                print("    \(try BooksSample.line(for: book))")
                if case .string(let notes) = try book.value(forKey: "notes") {
                    print("      notes (stored compressed, then sealed with AES-256-GCM): \(notes)")
                }
            }
            let author = "Albert Camus"
            let byAuthor = try context.fetch(model.fetchRequest(fromTemplate: "booksByAuthor", substituting: ["AUTHOR": .string(author)]))
            print("\nBooks by \(author) (the model's template booksByAuthor, $AUTHOR = \"\(author)\"): \(byAuthor.count)")
            for book in byAuthor {
                print("    \(try BooksSample.line(for: book)) — published \(display(try book.value(forKey: "publishMonth"))) "
                      + "(publishMonth, computed from published)")
            }
            let shelf = "M"
            let shelved = try context.fetch("Book", where: "shelf == %@", .string(shelf), sortedBy: [.ascending("title")])
            print("\nBooks on shelf \(shelf) (shelf is an extended attribute: a key the model does not name, set at run time "
                  + "and searched like any other): \(shelved.count)")
            for book in shelved { print("    \(try BooksSample.line(for: book))") }
            try TwoContexts(store: opened, reader: context, byMonth: byMonth).run()
        }
    }
}

/// The demo's second part: an import context on another thread saves while
/// the reading context holds a book with a change of its own; the reader's
/// save reports the conflict, and a merge brings the import in while keeping
/// the reader's change, and updates the reader's live query by publish month.
/// Each run toggles the values, so it can be run again.
struct TwoContexts {
    let store: Store
    let reader: Context
    let byMonth: LiveQuery

    func run() throws {
        print("\nTwo contexts: an import on another thread, and this reading one")
        followChanges()
        guard let book = try reader.fetch("Book", where: "title == %@", "L'Étranger").first else { return }
        guard case .float(let rating) = try book.value(forKey: "rating") else { return }
        let mine: Value = .float(rating == 4.5 ? 4.2 : 4.5)
        print("  reader: holds \(try describe(book)); sets its rating to \(mine), not saved yet")
        try book.setValue(mine, forKey: "rating")

        let (price, extra) = try importOnAnotherThread()
        print("  import (its own context and thread) saved: L'Étranger's price \(price), and \(extra)")

        do {
            try reader.save()
        } catch .saveFailed(let problems) {
            print("  reader: its save is refused, nothing lost:")
            for problem in problems { print("    \(problem.place): \(problem.message)") }
        }
        try reader.mergeSavedChanges()
        print("  reader: after merging: \(try describe(book)) (the price is the import's, the rating still its own)")
        try reader.save()
        let titles = try reader.fetch("Book", where: "title == 'Ficciones'").count
        print("  reader: saved without conflict; a fetch \(titles == 1 ? "finds" : "no longer finds") Ficciones")
    }

    /// Prints what each merge or save changes in the live query by publish month.
    private func followChanges() {
        var sections = byMonth.sections
        let query = byMonth
        query.onChange = { changes in
            print("  live query by publish month, as the reader merges or saves:")
            for index in changes.deletedSections { print("    section \(BooksSample.monthTitle(sections[index].value)) removed") }
            for index in changes.insertedSections { print("    section \(BooksSample.monthTitle(query.sections[index].value)) added") }
            for position in changes.deleted {
                print("    a book left \(BooksSample.monthTitle(sections[position.section].value)), row \(position.row + 1)")
            }
            for (label, positions) in [("joined", changes.inserted), ("changed in", changes.updated), ("moved to", changes.moved.map(\.to))] {
                for position in positions {
                    guard let book = query.object(at: position), case .string(let title)? = try? book.value(forKey: "title") else { continue }
                    print("    \(title) \(label) \(BooksSample.monthTitle(query.sections[position.section].value)), row \(position.row + 1)")
                }
            }
            sections = query.sections
        }
    }

    /// "L'Étranger — price 9.90, rating 4.2".
    private func describe(_ book: ManagedObject) throws -> String {
        return "L'Étranger — price \(try book.value(forKey: "price")), rating \(try book.value(forKey: "rating"))"
    }

    /// Runs the import on a thread of its own and waits: the price of
    /// L'Étranger toggles between 9.90 and 10.50, and Ficciones is added or removed.
    /// - Returns: the new price and what happened to Ficciones.
    private func importOnAnotherThread() throws -> (String, String) {
        let done = DispatchSemaphore(value: 0)
        let result = ImportResult()
        let store = self.store
        Thread {
            defer { done.signal() }
            result.outcome = Result { () throws(AmberError) in
                let importer = Context(store: store)
                guard let book = try importer.fetch("Book", where: "title == %@", "L'Étranger").first else { return ("?", "nothing else") }
                let price = try book.value(forKey: "price").description == "10.50" ? "9.90" : "10.50"
                try book.setValue(.decimal(try Value.decimal(parsing: price)), forKey: "price")
                var extra = "removed Ficciones"
                if let added = try importer.fetch("Book", where: "title == 'Ficciones'").first {
                    try importer.delete(added)
                } else {
                    var borges = try importer.fetch("Author", where: "name == 'Jorge Luis Borges'").first
                    if borges == nil {
                        borges = try importer.insert("Author")
                        try borges?.setValue("Jorge Luis Borges", forKey: "name")
                    }
                    let added = try importer.insert("Book")
                    try added.setValue("Ficciones", forKey: "title")
                    try added.setValue(.date(Date(timeIntervalSince1970: -807_364_800)), forKey: "published")  // 1 June 1944
                    try added.setObject(borges, forKey: "author")
                    extra = "added Ficciones"
                }
                try importer.save()
                return (price, extra)
            }
        }.start()
        done.wait()
        return try result.outcome?.get() ?? ("?", "nothing else")
    }
}

/// What the import thread hands back (written before the semaphore is signalled, read after).
private final class ImportResult: @unchecked Sendable {
    var outcome: Result<(String, String), AmberError>?
}

/// The Books sample: its model and sample data.
enum BooksSample {
    static let model = ModelDescription {
        EntityDescription("Author") {
            Attribute.string("name").required().length(atLeast: 1)
            Relationship.toMany("books", "Book", inverse: "author").deleteRule(.cascade)
        }
        .unique("name")
        EntityDescription("Book") {
            Attribute.string("title").required().length(atLeast: 1).indexed()
            // Computed at save: the title folded for case and diacritics, so searching it folds only the searched-for text.
            Attribute.string("canonicalTitle").derived("canonical:(title)").indexed()
            Relationship.toOne("author", "Author", inverse: "books").required()
            Attribute.date("published").required().indexed()
            // Computed on first read by the function registered as publishMonth, and again after published changes.
            Attribute.string("publishMonth").computed(by: "publishMonth", from: "published")
            Attribute.decimal("price").min(0)
            Attribute.integer16("pages").min(1)
            Attribute.string("language").length(2...2)
            Attribute.float("rating").range(0, 5)
            Attribute.uuid("id")
            Attribute.transformable("coverColor", valueClass: "Color", transformers: ["ColorToData"])
            Attribute.transformable("notes", valueClass: "String", transformers: ["UTF8", "Deflate", "AESGCM"])
        }
        .unique("title")
        // Books take keys the model does not name (the sample sets "shelf"), stored with no migration.
        .extensible()
    }
    // A request kept in the model; `amber query STORE --template booksByAuthor --var AUTHOR=…` runs it too.
    .template("booksByAuthor", entity: "Book", where: "author.name == $AUTHOR", sortedBy: [.ascending("published")])

    /// The demo's plugin settings: a fixed, public AES key. Real programs pass their own key
    /// (`--plugin-config key=...` or AMBER_PLUGIN_CONFIG); never reuse this one.
    static let demoConfiguration = "key=" + String(repeating: "a3", count: 32) + ",level=9"

    /// "#RRGGBB" for a Color value.
    static func hex(_ value: Value) -> String {
        guard let color = Registry.shared.structClass(named: "Color"), let fields = try? color.fieldValues(of: value) else { return "" }
        let parts = ["r", "g", "b"].map { key -> String in
            guard case .float(let f)? = fields[key] else { return "00" }
            let byte = Int((max(0, min(1, f)) * 255).rounded())
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }
        return "#" + parts.joined()
    }

    /// Title, author, date (yyyy-MM-dd), price, pages, language, rating, cover colour (r, g, b).
    static let books: [(String, String, String, String, Int64, String, Double, (Float, Float, Float))] = [
        ("Cien años de soledad", "Gabriel García Márquez", "1967-05-30", "14.50", 417, "es", 4.6, (0.85, 0.65, 0.13)),
        ("L'Étranger", "Albert Camus", "1942-05-19", "9.90", 159, "fr", 4.2, (0.93, 0.91, 0.84)),
        ("Le Petit Prince", "Antoine de Saint-Exupéry", "1943-04-06", "7.95", 96, "fr", 4.7, (0.20, 0.40, 0.80)),
        ("Der Zauberberg", "Thomas Mann", "1924-11-20", "18.00", 1008, "de", 4.1, (0.30, 0.50, 0.30)),
        ("Les Misérables", "Victor Hugo", "1862-04-03", "12.99", 1463, "fr", 4.4, (0.10, 0.10, 0.10)),
        ("Klara and the Sun", "Kazuo Ishiguro", "2021-03-02", "16.99", 303, "en", 3.9, (1.00, 0.80, 0.20)),
        ("Harlem Shuffle", "Colson Whitehead", "2021-09-14", "15.00", 318, "en", 4.0, (0.80, 0.20, 0.20)),
        ("Bewilderment", "Richard Powers", "2021-09-21", "17.50", 278, "en", 3.8, (0.10, 0.20, 0.45)),
        ("The Lincoln Highway", "Amor Towles", "2021-10-05", "19.99", 576, "en", 4.3, (0.75, 0.30, 0.15)),
        ("Crossroads", "Jonathan Franzen", "2021-10-05", "20.00", 580, "en", 4.0, (0.55, 0.60, 0.65)),
        ("Niebla", "Miguel de Unamuno", "1914-04-01", "6.50", 240, "es", 4.0, (0.70, 0.70, 0.72)),
        ("Die Verwandlung", "Franz Kafka", "1915-10-01", "5.99", 96, "de", 4.3, (0.40, 0.30, 0.20)),
    ]

    static func insertSampleBooks(into context: Context) throws {
        // Resolve each attribute once; the loop then sets values by handle.
        let entity = try context.model.entity(named: "Book"), authorEntity = try context.model.entity(named: "Author")
        let names = ["title", "published", "price", "pages", "language", "rating", "id", "coverColor", "notes"]
        let attributes = try names.map { try entity.attribute(named: $0) }
        let writtenBy = try entity.relationship(named: "author")
        var authors: [String: ManagedObject] = [:]
        guard let colorClass = Registry.shared.structClass(named: "Color") else {
            throw AmberError.unknownEntity(name: "value class Color (load the color plugin)", suggestion: nil)
        }
        for (title, author, date, price, pages, language, rating, rgb) in books {
            let book = try context.insert(entity)
            let writer = try authors[author] ?? {
                let made = try context.insert(authorEntity)
                try made.setValue(.string(author), forKey: "name")
                authors[author] = made
                return made
            }()
            try book.setObject(writer, for: writtenBy)
            let values: [Value] = [
                .string(title), .date(try Date("\(date)T12:00:00Z", strategy: .iso8601)),
                ScaledDecimal(price).map(Value.decimal) ?? .null, .int(pages), .string(language), .double(rating),
                .uuid(UUID()),
                try colorClass.value(["r": .float(rgb.0), "g": .float(rgb.1), "b": .float(rgb.2), "a": .float(1)]),
                .string("Read in \(language == "en" ? "English" : "translation"); \(pages) pages. My copy is a gift from a friend."),
            ]
            for (attribute, value) in zip(attributes, values) { try book.setValue(value, for: attribute) }
            // An extended attribute: shelved by the author's last name.
            try book.setValue(.string(String(author.split(separator: " ").last?.prefix(1) ?? "?")), forExtendedKey: "shelf")
        }
    }

    /// Registers the functions the sample's computed attributes name, once.
    static func registerFunctions() throws(AmberError) {
        guard !Registry.shared.functionNames.contains("publishMonth") else { return }
        try Registry.shared.register(ComputeFunction("publishMonth") { sources in
            sources[0].isNull ? .null : .string(monthTitle(sources[0]))
        })
    }

    /// "May 1967" for a date value; "?" for anything else.
    static func monthTitle(_ value: Value) -> String {
        guard case .date(let date) = value else { return "?" }
        return monthTitle(date)
    }

    /// "May 1967": the group a date falls in (UTC, Gregorian calendar).
    static func monthTitle(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let parts = calendar.dateComponents([.year, .month], from: date)
        // Fixed English names: the month symbols of Foundation's locale data vary by platform.
        let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                      "October", "November", "December"]
        guard let year = parts.year, let month = parts.month, months.indices.contains(month - 1) else { return "?" }
        return "\(months[month - 1]) \(year)"
    }

    static func line(for book: ManagedObject) throws -> String {
        let title = display(try book.value(forKey: "title"))
        let author = display(try book.object(forKey: "author")?.value(forKey: "name") ?? .null)
        let price = display(try book.value(forKey: "price"))
        let cover = hex(try book.value(forKey: "coverColor"))
        return "\(title) — \(author)\(price.isEmpty ? "" : " — \(price)")\(cover.isEmpty ? "" : " — cover \(cover)")"
    }
}
