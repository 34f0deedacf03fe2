import Foundation
import Synchronization
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Computed transient attributes: a registered function over declared
/// sources, computed on first read, cached, computed again after a source
/// changes (by a set, an undo, a rollback, a refresh or a merge), and
/// reported to observers with its sources.
@Suite("Computed attributes") struct ComputedAttributeTests {
    /// Counts calls of the functions it registers.
    final class Calls: Sendable {
        let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func bump() { count.withLock { $0 += 1 } }
    }

    /// "1942-05" for a date (UTC), the seed's publish month.
    static func month(_ value: Value) -> Value {
        guard case .date(let date) = value else { return .null }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let parts = calendar.dateComponents([.year, .month], from: date)
        guard let year = parts.year, let month = parts.month else { return .null }
        return .int(Int64(year * 100 + month))
    }

    /// A registry with `publishMonth` (date → yyyymm), `label` (title and pages) and the `Shout` transformer.
    static func registry(_ calls: Calls) throws -> Registry {
        let registry = Registry()
        try registry.register(ComputeFunction("publishMonth") { sources in
            calls.bump()
            return month(sources[0])
        })
        try registry.register(ComputeFunction("label") { sources in
            calls.bump()
            guard case .string(let title) = sources[0] else { return .null }
            if case .int(let pages) = sources[1] { return .string("\(title) (\(pages) pages)") }
            return .string(title)
        })
        try registry.register(Transformer(name: "Shout", from: "String", to: "String", forward: { value in
            guard case .string(let text) = value else { return value }
            return .string(text.uppercased())
        }))
        return registry
    }

    static func description() -> ModelDescription {
        ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("pages")
                Attribute.date("published")
                Attribute.string("note")
                Attribute.integer32("publishMonth").computed(by: "publishMonth", from: "published")
                Attribute.string("label").computed(by: "label", from: "title", "pages")
                Attribute.string("loudTitle").computed(by: "Shout", from: "title")
            }
        }
    }

    static func date(_ text: String) -> Value {
        .date((try? Date("\(text)T12:00:00Z", strategy: .iso8601)) ?? .distantPast)
    }

    @Test("computed on first read, cached, and computed again only after a source changes")
    func recomputationCounts() throws {
        let calls = Calls()
        let model = try Model(Self.description(), registry: try Self.registry(calls))
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(path: directory.appendingPathComponent("c.amber").path, model: model)
        let context = Context(store: store)
        let book = try context.insert("Book")
        try book.setValue(Self.date("1942-05-19"), forKey: "published")
        #expect(calls.value == 0)  // nothing computed before a read
        #expect(try book.value(forKey: "publishMonth") == .int(194205))
        #expect(try book.value(forKey: "publishMonth") == .int(194205))
        #expect(calls.value == 1)
        try book.setValue(.string("unrelated"), forKey: "note")
        try book.setValue(.string("L'Étranger"), forKey: "title")
        #expect(try book.value(forKey: "publishMonth") == .int(194205))
        #expect(calls.value == 1)
        try book.setValue(Self.date("1943-04-06"), forKey: "published")
        #expect(try book.value(forKey: "publishMonth") == .int(194304))
        #expect(calls.value == 2)
        #expect(try book.value(forKey: "label") == .string("L'Étranger"))
        try book.setValue(.int(159), forKey: "pages")
        #expect(try book.value(forKey: "label") == .string("L'Étranger (159 pages)"))
        #expect(calls.value == 4)
        // A transformer's forward direction serves as the function.
        #expect(try book.value(forKey: "loudTitle") == .string("L'ÉTRANGER"))
        // Computed values are not changes and are never stored.
        #expect(book.changedValues()["publishMonth"] == nil)
        try context.save()
        #expect(try book.value(forKey: "publishMonth") == .int(194304))
        #expect(calls.value == 4)
        // Another context computes from what it fetched.
        let other = Context(store: store)
        let fetched = try #require(try other.fetch(FetchRequest("Book")).first)
        #expect(try fetched.value(forKey: "publishMonth") == .int(194304))
        #expect(calls.value == 5)
        // Its merge of a source change makes the value compute again.
        try book.setValue(Self.date("1967-05-30"), forKey: "published")
        try context.save()
        try other.mergeSavedChanges()
        #expect(try fetched.value(forKey: "publishMonth") == .int(196705))
        // Undo and rollback bring a source back, and the value with it.
        context.undoStack = UndoStack()
        try book.setValue(Self.date("2021-10-05"), forKey: "published")
        #expect(try book.value(forKey: "publishMonth") == .int(202110))
        #expect(try context.undo())
        #expect(try book.value(forKey: "publishMonth") == .int(196705))
        try book.setValue(Self.date("1862-04-03"), forKey: "published")
        #expect(try book.value(forKey: "publishMonth") == .int(186204))
        context.rollback()
        #expect(try book.value(forKey: "publishMonth") == .int(196705))
        try context.refresh(book, mergeChanges: false)
        #expect(try book.value(forKey: "publishMonth") == .int(196705))
    }

    @Test("observers are told a computed attribute changed when a source did: pending, saved and merged")
    func observersToldWithSources() throws {
        let model = try Model(Self.description(), registry: try Self.registry(Calls()))
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(path: directory.appendingPathComponent("o.amber").path, model: model)
        let context = Context(store: store), other = Context(store: store)
        let book = try context.insert("Book")
        try book.setValue(.string("Niebla"), forKey: "title")
        try context.save()
        let theirs = try #require(try other.fetch(FetchRequest("Book")).first)
        _ = try theirs.value(forKey: "label")
        var reports: [ChangeReport] = []
        context.addObserver { reports.append($0) }
        other.addObserver { reports.append($0) }
        try book.setValue(Self.date("1914-04-01"), forKey: "published")
        #expect(context.pendingChanges.updated.first?.keys == ["published", "publishMonth"])
        try book.setValue(.string("note"), forKey: "note")
        #expect(context.pendingChanges.updated.first?.keys == ["published", "note", "publishMonth"])
        try context.save()
        #expect(reports.last?.updated.first?.keys == ["published", "note", "publishMonth"])
        try book.setValue(.int(240), forKey: "pages")
        try context.save()
        try other.mergeSavedChanges()
        #expect(reports.last?.event == .merged)
        // Both saves since it last merged, each computed attribute with its sources.
        #expect(reports.last?.refreshed.first?.keys == ["pages", "published", "note", "publishMonth", "label"])
        #expect(try theirs.value(forKey: "label") == .string("Niebla (240 pages)"))
    }

    @Test("sources and functions are checked at bind; sets, failing functions and wrong results are errors naming the attribute")
    func errors() throws {
        let registry = try Self.registry(Calls())
        try registry.register(ComputeFunction("broken") { _ in throw AmberError.invalidValue(place: "inside", expected: "x", given: "y") })
        try registry.register(ComputeFunction("wrongType") { _ in .string("not a number") })
        #expect(amberError { try registry.register(ComputeFunction("Shout") { _ in .null }) }
            == .duplicateName(kind: "function", name: "Shout", existing: "transformer from Swift", refused: "Swift"))
        let model = try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("broken").computed(by: "broken", from: "title")
                Attribute.integer64("wrong").computed(by: "wrongType", from: "title")
            }
        }, registry: registry)
        let context = Context(store: try Store.inMemory(model: model))
        let book = try context.insert("Book")
        #expect("\(amberError { try book.setValue(.int(1), forKey: "broken") }.map(String.init(describing:)) ?? "")"
            == "Book.broken: expected no value: it is computed by broken from title, given Integer 1")
        #expect(amberError { _ = try book.value(forKey: "broken") }
            == .computationFailed(place: "Book.broken", function: "broken", source: "Swift", message: "failed: inside: expected x, given y"))
        guard case .computationFailed(let place, "wrongType", _, let message)? = amberError({ _ = try book.value(forKey: "wrong") }) else {
            Issue.record("expected a computation error")
            return
        }
        #expect(place == "Book.wrong" && message == "returned String \"not a number\", but the attribute holds Integer 64", "\(message)")

        let broken = ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.date("published")
                Attribute.integer32("month").computed(by: "publishMnth", from: "publishd")
                Attribute.integer32("again").computed(by: "publishMonth", from: "month")
                Attribute.string("loud").computed(by: "Shout", from: "title", "published")
                Attribute.integer32("fromDate").computed(by: "Shout", from: "published")
                Attribute.transformable("archived").computed(by: "label", from: "title")
                Attribute.string("defaulted").computed(by: "label", from: "title").defaultValue(.string("x"))
            }
        }
        guard case .invalidModel(let problems)? = amberError({ _ = try Model(broken, registry: registry) }) else {
            Issue.record("expected the model to be refused")
            return
        }
        let lines = problems.map(\.description)
        for expected in [
            "Book.month: source Book.publishd: no such attribute; did you mean published?",
            "Book.month: function \"publishMnth\": no such function or transformer is registered; did you mean publishMonth?",
            "Book.again: source Book.month is computed itself; name its sources instead",
            "Book.loud: transformer \"Shout\" computes from one source, not 2",
            "Book.fromDate: transformer \"Shout\" takes String but Book.published holds Date",
            "Book.archived: a computed attribute is never stored; make it undefined (with a valueClass) to hold values of a custom class",
            "Book.defaulted: a computed attribute takes no default, validation rules or required flag: its function gives its value",
        ] {
            #expect(lines.contains(expected), "missing: \(expected)\nin: \(lines)")
        }
        // JSON: round trip, and a computed attribute the file calls stored is refused.
        let description = Self.description()
        #expect(try ModelDescription(json: Data(description.jsonText().utf8)) == description)
        let stored = #"{"entities": [{"name": "Book", "attributes": [{"name": "title", "type": "string"},"#
            + #"{"name": "loud", "type": "string", "transient": false, "computed": {"function": "Shout", "from": ["title"]}}]}]}"#
        guard case .invalidModel(let refused)? = amberError({ _ = try Model(ModelDescription(json: Data(stored.utf8)), registry: registry) }) else {
            Issue.record("expected the model to be refused")
            return
        }
        #expect(refused.map(\.description) == ["Book.loud: a computed attribute is transient: its value is never stored"])
    }

    @Test("a storage pair's halves move together: computed from either, the value follows a set of the other; NaN sources are cached")
    func storagePairsAndNaN() throws {
        let registry = try colorRegistry()
        let calls = Calls()
        try registry.register(ComputeFunction("size") { sources in
            calls.bump()
            guard case .binary(let data) = sources[0] else { return .null }
            return .int(Int64(data.count))
        })
        try registry.register(ComputeFunction("red") { sources in
            calls.bump()
            return try registry.structClass(named: "Color")?.fieldValues(of: sources[0])["r"] ?? .null
        })
        try registry.register(ComputeFunction("same") { sources in
            calls.bump()
            return sources[0]
        })
        let model = try Model(ModelDescription {
            EntityDescription("Swatch") {
                Attribute.undefined("color", valueClass: "Color", transformers: ["ColorToData"]).stored(in: "colorData")
                Attribute.binary("colorData")
                Attribute.integer64("dataSize").computed(by: "size", from: "colorData")
                Attribute.float("red").computed(by: "red", from: "color")
                Attribute.double("ratio").transient()  // a stored attribute refuses NaN; a transient one keeps it
                Attribute.double("sameRatio").computed(by: "same", from: "ratio")
            }
        }, registry: registry)
        let context = Context(store: try Store.inMemory(model: model))
        let swatch = try context.insert("Swatch")
        #expect(try swatch.value(forKey: "dataSize") == .null)
        try swatch.setValue(try color(1, 0, 0, 1, in: registry), forKey: "color")
        try context.save()  // encodes color into colorData
        #expect(try swatch.value(forKey: "dataSize") == .int(16))
        #expect(try swatch.value(forKey: "red") == .float(1))
        try swatch.setValue(try registry.transformer(named: "ColorToData").forward(try color(0.5, 0, 0, 1, in: registry)),
                            forKey: "colorData")
        #expect(try swatch.value(forKey: "red") == .float(0.5))
        try swatch.setValue(.double(.nan), forKey: "ratio")
        #expect(try swatch.value(forKey: "ratio").isNaN)
        let before = calls.value
        _ = try swatch.value(forKey: "sameRatio")
        _ = try swatch.value(forKey: "sameRatio")
        #expect(calls.value == before + 1)
    }

    @Test("after every step of random sets, saves, undos, rollbacks and merges, each computed value is its function of the current sources")
    func randomStepsAgreeWithTheFunction() throws {
        let model = try Model(Self.description(), registry: try Self.registry(Calls()))
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(path: directory.appendingPathComponent("r.amber").path, model: model)
        let context = Context(store: store), other = Context(store: store)
        context.undoStack = UndoStack()
        var generator = SplitMix64(seed: 15)
        var books: [ManagedObject] = []
        let dates = ["1942-05-19", "1943-04-06", "1967-05-30", "2021-10-05", "1914-04-01"].map(Self.date) + [.null]
        let titles: [Value] = [.string("Niebla"), .string("Ficciones"), .string(""), .null]
        for step in 0..<400 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0...1 where books.count < 12:
                books.append(try context.insert("Book"))
            case 2...3 where !books.isEmpty:
                try books.randomElement(using: &generator)?.setValue(dates.randomElement(using: &generator) ?? .null, forKey: "published")
            case 4 where !books.isEmpty:
                try books.randomElement(using: &generator)?.setValue(titles.randomElement(using: &generator) ?? .null, forKey: "title")
            case 5 where !books.isEmpty:
                try books.randomElement(using: &generator)?.setValue(.int(Int64.random(in: 1...500, using: &generator)), forKey: "pages")
            case 6:
                _ = try context.undo()
            case 7:
                try context.save()
            case 8:
                // Another context changes a saved book's sources; this one merges.
                if let theirs = try other.fetch(FetchRequest("Book")).randomElement(using: &generator) {
                    try theirs.setValue(dates.randomElement(using: &generator) ?? .null, forKey: "published")
                    try theirs.setValue(.int(Int64(step)), forKey: "pages")
                    try other.save()
                    context.mergePolicy = .objectWins
                    try context.mergeSavedChanges()
                }
            default:
                context.rollback()
            }
            books.removeAll { $0.context == nil }
            for book in books {
                #expect(try book.value(forKey: "publishMonth") == Self.month(try book.value(forKey: "published")))
                let title = try book.value(forKey: "title"), pages = try book.value(forKey: "pages")
                let label: Value = if case .string(let text) = title {
                    if case .int(let count) = pages { .string("\(text) (\(count) pages)") } else { .string(text) }
                } else { .null }
                #expect(try book.value(forKey: "label") == label, "step \(step)")
                let loud: Value = if case .string(let text) = title { .string(text.uppercased()) } else { .null }
                #expect(try book.value(forKey: "loudTitle") == loud)
            }
        }
    }
}
