import Foundation
import Testing
@testable import Amber
@testable import AmberModel
@testable import AmberValues

/// Fetches that see the context's own changes, and the in-memory predicate
/// evaluator behind them, checked two ways on random graphs (fixed seeds):
/// the evaluator against the store's SQL on saved objects, and a fetch with
/// pending changes against the store's answer once those changes are saved.
@Suite struct PendingFetchTests {
    static let description = ModelDescription {
        EntityDescription("Item") {
            Attribute.integer64("serial")
            Attribute.string("name")
            Attribute.integer16("small")
            Attribute.integer32("mid")
            Attribute.double("ratio")
            Attribute.float("share")
            Attribute.boolean("flag")
            Attribute.date("when")
            Attribute.decimal("price")
            Attribute.uuid("uid")
            Attribute.uri("link")
            Attribute.binary("blob")
            Attribute.transformable("meta")
            Attribute.string("folded").derived("canonical:(name)")
            Relationship.toOne("owner", "Owner", inverse: "items")
            Relationship.toMany("tags", "Tag", inverse: "items")
        }.extensible()
        EntityDescription("Owner") {
            Attribute.integer64("serial")
            Attribute.string("name")
            Relationship.toMany("items", "Item", inverse: "owner")
        }
        EntityDescription("Tag") {
            Attribute.integer64("serial")
            Attribute.string("label")
            Relationship.toMany("items", "Item", inverse: "tags")
        }
    }

    /// Small pools per attribute, so equal values, prefixes and ties are common.
    static let pools: [String: [Value]] = [
        "name": [.null, "", "a", "ab", "Abc", "abc", "é", "Étoile", "etoile", "x*y", "zeta", "b?c"],
        "small": [.null, -3, 0, 1, 2, 7],
        "mid": [.null, -30_000, 0, 5, 70_000],
        "ratio": [.null, -1.5, 0.0, 0.5, 2.0, 1e10],
        "share": [.null, .float(-1.5), .float(0), .float(0.25), .float(3)],
        "flag": [.null, true, false],
        "when": [.null, .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: 86_400.5)),
                 .date(Date(timeIntervalSinceReferenceDate: -1_000))],
        "price": [.null, .decimal(ScaledDecimal("1.5")!), .decimal(ScaledDecimal("1.50")!), .decimal(ScaledDecimal("2")!),
                  .decimal(ScaledDecimal("-0.25")!), .decimal(ScaledDecimal("100")!)],
        "uid": [.null, .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!),
                .uuid(UUID(uuidString: "F0000000-0000-0000-0000-000000000000")!), .uuid(UUID(uuidString: "7E57AB1E-0000-4000-8000-000000000002")!)],
        "link": [.null, .uri(URL(string: "https://a.example/x")!), .uri(URL(string: "https://b.example/")!), .uri(URL(string: "file:///tmp/z")!)],
        "blob": [.null, .binary(Data()), .binary(Data([0])), .binary(Data([0, 1])), .binary(Data([255]))],
        "meta": [.null, .array([.string("a")]), .array([]), .array([.int(1), .string("b")])],
    ]
    /// Values of the extended key `shelf`, of several kinds (a predicate compares them as the store does).
    static let shelves: [Value] = [.null, "A1", "b2", "a1", 3, 2.5, true, 0, "30"]
    /// Stored values only: an array reads as its JSON text in a predicate, and no constant compares with one.
    static let storedShelves = shelves + [.array(["a", 1]), .dictionary(["k": "v"])]
    static let scalars = ["name", "small", "mid", "ratio", "share", "flag", "when", "price", "uid", "link", "blob"]
    static let labels = ["red", "Green", "blue", "grün"]
    static let ownerNames: [Value] = [.null, "Ada", "ada", "Bea", "Émile"]

    // MARK: Building graphs

    struct Graph {
        var items: [ManagedObject] = [], owners: [ManagedObject] = [], tags: [ManagedObject] = []
        var serial: Int64 = 0
    }

    static func pick<T>(_ values: [T], _ random: inout SplitMix64) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    static func setRandomValues(of item: ManagedObject, _ random: inout SplitMix64) throws {
        for (key, pool) in pools.sorted(by: { $0.key < $1.key }) { try item.setValue(pick(pool, &random), forKey: key) }
        try item.setValue(pick(storedShelves, &random), forExtendedKey: "shelf")
    }

    static func insertItem(_ graph: inout Graph, in context: Context, _ random: inout SplitMix64) throws {
        let item = try context.insert("Item")
        graph.serial += 1
        try item.setValue(.int(graph.serial), forKey: "serial")
        try setRandomValues(of: item, &random)
        if !graph.owners.isEmpty, Int.random(in: 0..<4, using: &random) > 0 { try item.setObject(pick(graph.owners, &random), forKey: "owner") }
        let tags = try context.model.entity(named: "Item").relationship(named: "tags")
        for _ in 0..<Int.random(in: 0...3, using: &random) where !graph.tags.isEmpty {
            let tag = pick(graph.tags, &random)
            if try !item.objects(for: tags).contains(where: { $0 === tag }) { try item.add(tag, to: tags) }
        }
        graph.items.append(item)
    }

    static func insertOwner(_ graph: inout Graph, in context: Context, _ random: inout SplitMix64) throws {
        let owner = try context.insert("Owner")
        graph.serial += 1
        try owner.setValue(.int(graph.serial), forKey: "serial")
        try owner.setValue(pick(ownerNames, &random), forKey: "name")
        graph.owners.append(owner)
    }

    static func saved(in context: Context, _ random: inout SplitMix64) throws -> Graph {
        var graph = Graph()
        for _ in 0..<5 { try insertOwner(&graph, in: context, &random) }
        for label in labels {
            let tag = try context.insert("Tag")
            graph.serial += 1
            try tag.setValue(.int(graph.serial), forKey: "serial")
            try tag.setValue(.string(label), forKey: "label")
            graph.tags.append(tag)
        }
        for _ in 0..<60 { try insertItem(&graph, in: context, &random) }
        try context.save()
        return graph
    }

    // MARK: Random requests

    /// A random comparison an Item can be tested with, and its arguments.
    /// With `derived`, also the derived `folded` (a derived value is what was last saved until the next save,
    /// so only the evaluator differential, on saved objects, tests it).
    static func comparison(_ graph: Graph, _ random: inout SplitMix64, _ arguments: inout [Value], derived: Bool = false) -> String {
        func argument(_ value: Value) -> String {
            arguments.append(value)
            return "%@"
        }
        let options = pick(["", "[c]", "[d]", "[cd]"], &random)
        switch Int.random(in: 0..<(derived ? 17 : 16), using: &random) {
        case 0...3:
            let key = pick(scalars, &random), pool = pools[key] ?? []
            let op = pick(["==", "!=", "<", "<=", ">", ">="], &random)
            return "\(key) \(op)\(key == "name" ? options : "") \(argument(pick(pool, &random)))"
        case 4:
            let op = pick(["BEGINSWITH", "ENDSWITH", "CONTAINS"], &random)
            return "name \(op)\(options) \(argument(pick(["", "a", "É", "e", "b", "Ab", "toile"].map(Value.string), &random)))"
        case 5:
            return "name LIKE\(options) \(argument(pick(["a*", "?b*", "*e*", "É*", "x\\*y", "*", "b?c", "??"].map(Value.string), &random)))"
        case 6:
            return "name MATCHES\(options) \(argument(pick(["a.*", "[a-z]+", ".*e", "É.*", "(ab|zeta)"].map(Value.string), &random)))"
        case 7:
            let key = pick(scalars, &random), pool = (pools[key] ?? []).filter { !$0.isNull }
            return "\(key) IN\(key == "name" ? options : "") \(argument(.array((0..<Int.random(in: 0...3, using: &random)).map { _ in pick(pool, &random) })))"
        case 8:
            let key = pick(["small", "mid", "ratio", "share", "when", "price", "name"], &random)
            let pool = (pools[key] ?? []).filter { !$0.isNull }
            return "\(key) BETWEEN {\(argument(pick(pool, &random))), \(argument(pick(pool, &random)))}"
        case 9:
            return "meta \(pick(["==", "!="], &random)) \(argument(pick(pools["meta"] ?? [], &random)))"
        case 10:
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return "owner.name ==\(options) \(argument(pick(ownerNames, &random)))"
            case 1: return "owner \(pick(["==", "!="], &random)) nil"
            case 2: return "owner == \(argument(.objectID(pick(saved(graph.owners), &random).objectID)))"
            default: return "owner.name BEGINSWITH\(options) \(argument(.string(pick(["a", "A", "É", "e"], &random))))"
            }
        case 11:
            let quantifier = pick(["ANY", "ALL", "NONE"], &random)
            return "\(quantifier) tags.label \(pick(["==", "BEGINSWITH", "!="], &random))\(options) \(argument(.string(pick(["red", "green", "gr", "b", "grun"], &random))))"
        case 12:
            switch Int.random(in: 0..<3, using: &random) {
            case 0: return "tags.@count \(pick(["==", ">", "<="], &random)) \(argument(.int(Int64.random(in: 0...3, using: &random))))"
            case 1: return "tags.@max.serial > \(argument(.int(Int64.random(in: 5...10, using: &random))))"
            default: return "tags.@sum.serial < \(argument(.int(Int64.random(in: 0...30, using: &random))))"
            }
        case 13:
            return "SELF IN \(argument(.array((0..<3).map { _ in .objectID(pick(saved(graph.items), &random).objectID) })))"
        case 15:
            let op = pick(["==", "!=", "<", ">=", "BEGINSWITH", "IN"], &random)
            let constant: Value = op == "BEGINSWITH" ? .string(pick(["a", "A", "b", "3", "[", "{"], &random))
                : op == "IN" ? .array([pick(shelves, &random), pick(shelves, &random)]) : pick(shelves, &random)
            return "shelf \(op)\(op == "BEGINSWITH" || op == "==" ? options : "") \(argument(constant))"
        case 16:
            return "folded \(pick(["==", "BEGINSWITH", "CONTAINS[cd]", "<"], &random)) \(argument(.string(pick(["e", "etoile", "ab", "É"], &random))))"
        default:
            let label = argument(.string(pick(["r", "G", "b"], &random))), serial = argument(.int(Int64.random(in: 5...9, using: &random)))
            return "SUBQUERY(tags, $t, $t.label BEGINSWITH[c] \(label) OR $t.serial > \(serial)).@count >= \(argument(.int(Int64.random(in: 0...2, using: &random))))"
        }
    }

    /// The objects of `objects` with permanent IDs: a temporary ID in a
    /// predicate matches its new object until the save, and nothing after it.
    static func saved(_ objects: [ManagedObject]) -> [ManagedObject] { objects.filter { !$0.objectID.isTemporary } }

    /// A random predicate of up to three comparisons under AND, OR and NOT.
    static func predicate(_ graph: Graph, _ random: inout SplitMix64, derived: Bool = false) throws -> FetchPredicate {
        var arguments: [Value] = []
        var text = comparison(graph, &random, &arguments, derived: derived)
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            let next = comparison(graph, &random, &arguments, derived: derived)
            text = Bool.random(using: &random) ? "(\(text)) AND (\(next))" : "(\(text)) OR (\(next))"
        }
        if Int.random(in: 0..<4, using: &random) == 0 { text = "NOT (\(text))" }
        return try FetchPredicate(text, arguments: arguments)
    }

    static func sortKeys(_ random: inout SplitMix64, derived: Bool = false) -> [SortKey] {
        (0..<Int.random(in: 0...2, using: &random)).map { _ in
            SortKey(pick(scalars + ["owner.name", "meta", "shelf"] + (derived ? ["folded"] : []), &random), ascending: Bool.random(using: &random),
                    caseInsensitive: Bool.random(using: &random))
        }
    }

    static func serials(_ objects: [ManagedObject]) throws -> [Int64] {
        try objects.map { (object) throws -> Int64 in
            guard case .int(let serial) = try object.value(forKey: "serial") else { return -1 }
            return serial
        }
    }

    // MARK: Tests

    @Test(arguments: StoreKind.allCases)
    func theEvaluatorGivesTheStoresAnswers(kind: StoreKind) throws {
        let model = try Model(Self.description)
        var checked = 0
        for seed in 0..<3 {
            let (store, cleanup) = try kind.open(model)
            defer { cleanup() }
            var random = SplitMix64(seed: 4_400 + UInt64(seed))
            let context = Context(store: store)
            let graph = try Self.saved(in: context, &random)
            let stored = FetchRequest("Item")
            let every = try context.fetch(stored)
            #expect(every.count == graph.items.count)
            for _ in 0..<150 {
                var request = FetchRequest("Item", predicate: try Self.predicate(graph, &random, derived: true),
                                           sortedBy: Self.sortKeys(&random, derived: true))
                request.includesPendingChanges = false
                let fromStore = try Self.serials(try context.fetch(request))
                let inMemory = try Self.serials(try context.filter(every, matching: request.predicate, sortedBy: request.sortKeys))
                if request.sortKeys.isEmpty {
                    #expect(Set(fromStore) == Set(inMemory), "seed \(seed): \(request.predicate?.format ?? "")")
                } else {
                    #expect(fromStore == inMemory, "seed \(seed): \(request.predicate?.format ?? "") by \(request.sortKeys.map(\.key))")
                }
                checked += 1
            }
        }
        #expect(checked == 3 * 150)
    }

    @Test(arguments: StoreKind.allCases)
    func aFetchWithPendingChangesEqualsTheStoresAnswerOnceSaved(kind: StoreKind) throws {
        let model = try Model(Self.description)
        let item = try model.entity(named: "Item"), tags = try item.relationship(named: "tags")
        var compared = 0
        for seed in 0..<6 {
            let (store, cleanup) = try kind.open(model)
            defer { cleanup() }
            var random = SplitMix64(seed: 9_100 + UInt64(seed))
            let context = Context(store: store)
            var graph = try Self.saved(in: context, &random)
            // Seeds 0-3: unsaved changes of every kind (new objects, changed values and links, deletions).
            // Seeds 4 and 5 change values only, of Items and (seed 4) of Owners and Tags, with no
            // link changed: a key path through a relationship then judges every Item only when an
            // object it reaches changed.
            let valuesOnly = seed >= 4
            if !valuesOnly {
                for _ in 0..<2 { try Self.insertOwner(&graph, in: context, &random) }
                for _ in 0..<12 { try Self.insertItem(&graph, in: context, &random) }
            }
            if seed == 4 {
                try Self.pick(graph.owners, &random).setValue(Self.pick(Self.ownerNames, &random), forKey: "name")
                try Self.pick(graph.tags, &random).setValue(.string(Self.pick(Self.labels, &random)), forKey: "label")
            }
            for _ in 0..<15 {
                let changed = Self.pick(graph.items, &random)
                guard !changed.isDeleted else { continue }
                switch Int.random(in: 0..<(valuesOnly ? 2 : 4), using: &random) {
                case 0: try Self.setRandomValues(of: changed, &random)
                case 1: try changed.setValue(Self.pick(Self.pools["name"] ?? [], &random), forKey: "name")
                case 2: try changed.setObject(Bool.random(using: &random) ? nil : Self.pick(graph.owners, &random), forKey: "owner")
                default:
                    let tag = Self.pick(graph.tags, &random)
                    if try changed.objects(for: tags).contains(where: { $0 === tag }) { try changed.remove(tag, from: tags) } else { try changed.add(tag, to: tags) }
                }
            }
            for _ in 0..<(valuesOnly ? 0 : 6) { try context.delete(Self.pick(graph.items, &random)) }
            if seed == 3 { try context.delete(Self.pick(graph.owners, &random)) }
            graph.items.removeAll(where: \.isDeleted)

            var requests: [(FetchRequest, [Int64], Int)] = []
            for _ in 0..<60 {
                var request = FetchRequest("Item", predicate: Bool.random(using: &random) ? nil : try Self.predicate(graph, &random),
                                           sortedBy: Self.sortKeys(&random))
                if Bool.random(using: &random) {
                    request.limit = Int.random(in: 0...20, using: &random)
                    request.offset = Int.random(in: 0...5, using: &random)
                }
                requests.append((request, try Self.serials(try context.fetch(request)), try context.count(request)))
            }
            try context.save()
            let reader = Context(store: store)
            for (request, pendingAnswer, pendingCount) in requests {
                var storeOnly = request
                storeOnly.includesPendingChanges = false
                let saved = try Self.serials(try reader.fetch(storeOnly))
                let what = "seed \(seed): \(request.predicate?.format ?? "all") by \(request.sortKeys.map(\.key)) limit \(request.limit.map(String.init) ?? "-") offset \(request.offset)"
                #expect(pendingAnswer == saved, "\(what)")
                #expect(pendingCount == (try reader.count(storeOnly)), "\(what)")
                compared += 1
            }
        }
        #expect(compared == 6 * 60)
    }

    /// A predicate through a relationship judges every object in memory only
    /// when an object its key paths reach has a pending change: a change to
    /// another entity leaves the store to answer alone.
    @Test func onlyChangesAKeyPathReachesMakeEveryObjectJudged() throws {
        let model = try Model(Self.description)
        let (store, cleanup) = try StoreKind.memory.open(model)
        defer { cleanup() }
        var random = SplitMix64(seed: 9_200)
        let context = Context(store: store)
        let graph = try Self.saved(in: context, &random)
        let item = try model.entity(named: "Item")
        let byOwner = try FetchRequest("Item", where: "owner.name == 'Ada'")
        let byTag = try FetchRequest("Item", where: "ANY tags.label == 'red'")
        let bySubquery = try FetchRequest("Item", where: "SUBQUERY(tags, $t, $t.label == 'red').@count > 0")
        func everyObject(_ request: FetchRequest) -> Bool { context.pendingChanges(affecting: request, of: item)?.everyObject ?? false }
        let unchanged = try Self.serials(try context.fetch(byOwner))
        try graph.tags[0].setValue("renamed", forKey: "label")
        #expect(!everyObject(byOwner) && everyObject(byTag) && everyObject(bySubquery))
        #expect(try Self.serials(try context.fetch(byOwner)) == unchanged)
        var others: [(owner: ManagedObject, items: Int)] = []
        for owner in graph.owners where try owner.value(forKey: "name") != "Ada" {
            others.append((owner, try owner.objects(forKey: "items").count))
        }
        let other = try #require(others.max { $0.items < $1.items })
        try other.owner.setValue("Ada", forKey: "name")
        #expect(everyObject(byOwner))
        let found = try Self.serials(try context.fetch(byOwner))
        #expect(found.count == unchanged.count + other.items && other.items > 0)
        try context.save()
        #expect(try Self.serials(try context.fetch(byOwner)) == found)
    }

    @Test func theNewcomersProgramSeesItsOwnChanges() throws {
        let model = try Model(Self.description)
        let (store, cleanup) = try StoreKind.memory.open(model)
        defer { cleanup() }
        let context = Context(store: store)
        let a = try context.insert("Item"), b = try context.insert("Item")
        try a.setValue("a", forKey: "name")
        try b.setValue("b", forKey: "name")
        #expect(try context.fetch("Item").count == 2)
        #expect(try context.count(FetchRequest("Item")) == 2)
        #expect(try context.fetch("Item", where: "name == 'a'").map(\.objectID) == [a.objectID])
        try context.save()

        // Judged on the current value, not the saved one.
        try a.setValue("zzz", forKey: "name")
        #expect(try context.fetch("Item", where: "name == 'a'").isEmpty)
        #expect(try context.fetch("Item", where: "name == 'zzz'").map(\.objectID) == [a.objectID])
        var storeOnly = try FetchRequest("Item", where: "name == 'a'")
        storeOnly.includesPendingChanges = false
        #expect(try context.fetch(storeOnly).map(\.objectID) == [a.objectID])
        // Sorted by current values; deleted objects are left out; the limit applies to the whole.
        let c = try context.insert("Item")
        try c.setValue("c", forKey: "name")
        #expect(try context.fetch("Item", sortedBy: [.ascending("name")]).map(\.objectID) == [b.objectID, c.objectID, a.objectID])
        try context.delete(b)
        #expect(try context.fetch("Item", sortedBy: [.descending("name")], limit: 1).map(\.objectID) == [a.objectID])
        #expect(try context.count(FetchRequest("Item")) == 2)
        #expect(try context.count(storeOnly) == 1)
    }

    @Test func theEvaluatorRefusesWhatTheStoreRefusesInTheSameWords() throws {
        let model = try Model(Self.description)
        let (store, cleanup) = try StoreKind.memory.open(model)
        defer { cleanup() }
        let context = Context(store: store)
        let item = try context.insert("Item")
        try context.save()
        let bad: [(String, [Value])] = [
            ("owner.nmae == 'a'", []), ("tags == 'a'", []), ("name.length == 1", []), ("small BEGINSWITH 'a'", []),
            ("name LIKE 3", []), ("name MATCHES '('", []), ("small BETWEEN {1}", []), ("small IN 3", []),
            ("meta < %@", [.array([])]), ("owner < %@", [.objectID(item.objectID)]), ("SELF < %@", [.objectID(item.objectID)]),
            ("tags.@median.serial > 1", []), ("tags.@count.serial > 1", []), ("ANY name == 'a'", []), ("small == 'x'", []),
            ("name ==[c] 3", []), ("owner == 'not an id'", []), ("name == $NAME", []),
            ("SUBQUERY(name, $t, $t.label == 'x').@count > 0", []), ("SUBQUERY(tags, $t, $t.label > 1).@count > 0", []),
            ("SUBQUERY(tags, $t, $t.label == 'x').@count == 'many'", []),
            ("name MATCHES 'a)|(b'", []), ("small IN[c] {3}", []), ("small IN[d] %@", [.array([3])]),
        ]
        for (format, arguments) in bad {
            let predicate = try FetchPredicate(format, arguments: arguments)
            var request = FetchRequest("Item", predicate: predicate)
            request.includesPendingChanges = false
            let fromStore = amberError { _ = try context.fetch(request) }
            let inMemory = amberError { _ = try context.filter([item], matching: predicate) }
            #expect(fromStore != nil, "\(format)")
            #expect(fromStore.map(String.init(describing:)) == inMemory.map(String.init(describing:)), "\(format)")
        }
        // A window the store refuses is refused with pending changes too; a huge one is no limit.
        try item.setValue("changed", forKey: "name")
        for (limit, offset) in [(-1, 0), (1, -1)] {
            let pending = amberError { _ = try context.fetch(FetchRequest("Item", limit: limit, offset: offset)) }
            var request = FetchRequest("Item", limit: limit, offset: offset)
            request.includesPendingChanges = false
            #expect(pending != nil && pending.map(String.init(describing:)) == amberError { _ = try context.fetch(request) }.map(String.init(describing:)))
        }
        #expect(try context.fetch(FetchRequest("Item", limit: Int.max, offset: 0)).count == 1)
        #expect(try context.fetch(FetchRequest("Item", limit: Int.max, offset: Int.max)).isEmpty)
        #expect(try context.count(FetchRequest("Item", limit: Int.max, offset: 1)) == 0)
        // SUBQUERY is a word only before "(": an attribute of that name still parses.
        #expect(try FetchPredicate("subquery == 1 AND SUBQUERY(tags, $t, $t.serial > 1).@count > 0").keyPaths == ["subquery", "tags"])
        for key in ["owner", "tags", "owner.nmae", "tags.@count", "name.length"] {
            var request = FetchRequest("Item", sortedBy: [.ascending(key)])
            request.includesPendingChanges = false
            let fromStore = amberError { _ = try context.fetch(request) }
            let inMemory = amberError { _ = try context.filter([item], matching: nil, sortedBy: [.ascending(key)]) }
            #expect(fromStore != nil, "\(key)")
            #expect(fromStore.map(String.init(describing:)) == inMemory.map(String.init(describing:)), "\(key)")
        }
    }
}

