import Amber
import Foundation

/// W20, relationship edits at scale: each row is the time at 4N over four
/// times the time at N (1.0 when the work grows in proportion to N; 4.0
/// when it grows with N squared). Target 1.5: every edit linear from either
/// side, derived counts kept in proportion to what changed.
struct LinkWorkload {
    static let names = [
        "W20 add N tags to one book one by one + save (4N/N)",
        "W20 set N items of one warehouse + save (4N/N)",
        "W20 warehouses with items.@count > N/2 (4N/N)",
    ]
    let n: Int
    let workspace: URL

    static func model() throws -> Model {
        try Model(ModelDescription {
            EntityDescription("Book") {
                Attribute.string("title")
                Attribute.integer64("tagCount").derived("tags.@count")
                Relationship.toMany("tags", "Tag", inverse: "books")
            }
            EntityDescription("Tag") {
                Attribute.string("name")
                Relationship.toMany("books", "Book", inverse: "tags")
            }
            EntityDescription("Warehouse") {
                Attribute.string("name")
                Attribute.integer64("itemCount").derived("items.@count")
                Relationship.toMany("items", "Item", inverse: "warehouse")
            }
            EntityDescription("Item") {
                Attribute.string("name")
                Relationship.toOne("warehouse", "Warehouse", inverse: "items")
            }
        })
    }

    /// The three rows' medians: each side's time is the 4N run and four times the N run.
    func run(repetitions: Int) throws -> [String: Result] {
        var times = [[Double]](repeating: [], count: 6)
        for repetition in 0..<max(repetitions, 3) {
            for (scale, size) in [(0, n), (1, 4 * n)] {
                let measured = try once(size, tag: "\(repetition)-\(scale)")
                for row in 0..<3 { times[row * 2 + scale].append(measured[row]) }
            }
        }
        var results: [String: Result] = [:]
        for row in 0..<3 {
            results[Self.names[row]] = Result(amber: median(times[row * 2 + 1]), raw: 4 * median(times[row * 2]))
        }
        return results
    }

    /// The three timings for `count` objects, in a new store.
    private func once(_ count: Int, tag: String) throws -> [Double] {
        let store = try Store(path: workspace.appendingPathComponent("links-\(tag).amber").path, model: try Self.model())
        let context = Context(store: store)
        let book = try context.insert("Book"), tags = try store.model.entity(named: "Book").relationship(named: "tags")
        let made = try (0..<count).map { index in
            let tag = try context.insert("Tag")
            try tag.setValue(.string("tag \(index)"), forKey: "name")
            return tag
        }
        try context.save()
        let adding = try Workloads.time {
            for tag in made { try book.add(tag, to: tags) }
            try context.save()
        }
        let warehouses = try (0..<2).map { _ in try context.insert("Warehouse") }
        let items = try (0..<count).map { index in
            let item = try context.insert("Item")
            try item.setValue(.string("item \(index)"), forKey: "name")
            return item
        }
        try context.save()
        let setting = try Workloads.time {
            try warehouses[0].setObjects(items, forKey: "items")
            try warehouses[1].setObjects(Array(items.prefix(count / 4)), forKey: "items")
            try context.save()
        }
        let request = try FetchRequest("Warehouse", where: "items.@count > %@", .int(Int64(count / 2)))
        var found = 0
        let counting = try Workloads.time { found = try Context(store: store).count(request) }
        guard found == 1, try book.value(forKey: "tagCount") == .int(Int64(count)), try warehouses[0].value(forKey: "itemCount") == .int(Int64(count - count / 4)) else {
            throw AmberError.invalidValue(place: "W20", expected: "one warehouse of \(count - count / 4) items", given: "\(found)")
        }
        return [adding, setting, counting]
    }
}
