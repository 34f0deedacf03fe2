import Amber
import ArgumentParser
import Foundation

/// `amber query STORE ENTITY`: objects matching a predicate.
struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects of an entity that match a predicate.",
        discussion: """
            Predicates use Core Data's format syntax, for example:
              amber query books.amber Book --where "title CONTAINS[cd] 'etranger'" --sort published:desc
            """)

    @Argument(help: "The store file.")
    var store: String

    @OptionGroup var plugins: PluginOptions

    @Argument(help: "The entity to query.")
    var entity: String

    @Option(name: .long, help: "A predicate, such as \"price < 10 AND author BEGINSWITH[c] 'a'\".")
    var `where`: String?

    @Option(name: .long, help: "Sort by an attribute; KEY or KEY:desc. Repeat for more keys.")
    var sort: [String] = []

    @Option(name: .long, help: "At most this many objects.")
    var limit: Int?

    @Option(name: .long, help: "Skip this many objects first.")
    var offset = 0

    @Flag(help: "Print a JSON array of objects.")
    var json = false

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if offset < 0 { throw ValidationError("--offset must be 0 or more") }
    }

    func run() throws {
        try reportingErrors {
            try plugins.load()
            let context = Context(store: try Store(openingExisting: store))
            let sortKeys = sort.map { text -> SortKey in
                let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
                return SortKey(parts.first ?? text, ascending: parts.count < 2 || parts[1].lowercased() != "desc")
            }
            let predicate = try self.where.map { (text) throws(AmberError) in try FetchPredicate(text) }
            let objects = try context.fetch(FetchRequest(entity, predicate: predicate, sortedBy: sortKeys,
                                                         limit: limit, offset: offset))
            let attributes = try context.model.entity(named: entity).attributes.filter { !$0.isTransient }
            if json {
                print(try Self.json(objects, attributes))
            } else {
                Self.printTable(objects, attributes)
            }
        }
    }

    static func json(_ objects: [ManagedObject], _ attributes: [Attribute]) throws -> String {
        let rows = try objects.map { object in
            var row: [String: Any] = ["_id": object.objectID.uriRepresentation.absoluteString]
            for attribute in attributes { row[attribute.name] = jsonValue(try object.value(for: attribute)) }
            return row
        }
        let data = try JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// JSON for one value: numbers and booleans as such, decimals as exact strings.
    static func jsonValue(_ value: Value) -> Any {
        switch value {
        case .null: NSNull()
        case .bool(let b): b
        case .int(let i): i
        case .double(let d) where d.isFinite: d
        // Through the float's shortest text, so 4.1 prints as 4.1, not 4.099999904632568.
        case .float(let f) where f.isFinite: Double(String(f)) ?? Double(f)
        case .string(let s): s
        case .binary(let d): d.base64EncodedString()
        case .custom(let custom):
            // Struct values as their fields; other custom values as base64.
            if let layout = Registry.shared.structClass(named: custom.className), let fields = try? layout.fieldValues(of: value) {
                fields.mapValues(jsonValue)
            } else {
                custom.bytes.base64EncodedString()
            }
        default: value.description
        }
    }

    static func printTable(_ objects: [ManagedObject], _ attributes: [Attribute]) {
        let header = ["id"] + attributes.map(\.name)
        let rows = objects.map { object in
            [object.objectID.primaryKey.map(String.init) ?? ""] + attributes.map { display((try? object.value(for: $0)) ?? .null) }
        }
        let widths = header.indices.map { column in
            min(40, ([header] + rows).map { $0[column].count }.max() ?? 0)
        }
        func render(_ cells: [String]) -> String {
            zip(cells, widths).map { cell, width in
                let clipped = cell.count > width ? String(cell.prefix(width - 1)) + "…" : cell
                return clipped.padding(toLength: width, withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        print(render(header))
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in rows { print(render(row)) }
        print("(\(objects.count) object\(objects.count == 1 ? "" : "s"))")
    }
}
