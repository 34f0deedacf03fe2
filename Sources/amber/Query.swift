import Amber
import ArgumentParser
import Foundation

/// `amber query STORE ENTITY`: objects matching a predicate.
struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects of an entity that match a predicate.",
        discussion: """
            Predicates use Core Data's format syntax and follow relationships, for example:
              amber query books.amber Book --where "title CONTAINS[cd] 'etranger'" --sort published:desc
              amber query books.amber Book --where "author.name BEGINSWITH 'A'" --include author
              amber query books.amber Author --where "books.@count >= 1"
              amber query books.amber --template booksByAuthor --var AUTHOR="Albert Camus"
              amber query App.sqlite Car --model App.xcdatamodeld --where "maker == 'FIAT'"
            A to-one relationship prints as the related object's ID (its primary key in the table);
            --include inlines its attributes. A template is a request named in the model (amber schema
            lists them); --var gives each of its $VARIABLES a value: a number, true/yes, false/no or
            nil/null, or else text (quote it, --var "CODE='42'", to keep a number or a word as text).
            A store Core Data wrote is read with the model it was made with (--model, and --model-version
            for a bundle's older version); it opens for reading, and the model must match its tables.
            """)

    @Argument(help: "The store: a path, a file: URL or a postgresql:// URL.", transform: storeName)
    var store: String

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var storeModel: StoreModelOptions

    @OptionGroup var xcode: XcodeOptions

    @Argument(help: "The entity to query (with --template: the template's, or left out).")
    var entity: String?

    @Option(name: .long, help: "A predicate, such as \"price < 10 AND author BEGINSWITH[c] 'a'\".")
    var `where`: String?

    @Option(name: .long, help: "Run the model's fetch request template of this name.")
    var template: String?

    @Option(name: .customLong("var"), help: ArgumentHelp("A template variable's value; repeat for each variable.", valueName: "KEY=VALUE"))
    var variables: [String] = []

    @Option(name: .long, help: "Sort by an attribute; KEY or KEY:desc. Repeat for more keys.")
    var sort: [String] = []

    @Option(name: .long, help: "At most this many objects.")
    var limit: Int?

    @Option(name: .long, help: "Skip this many objects first.")
    var offset = 0

    @Option(name: .long, help: "A to-one relationship whose object's attributes to show inline. Repeat for more.")
    var include: [String] = []

    @Flag(help: "Print a JSON array of objects.")
    var json = false

    @OptionGroup var progress: ProgressOptions

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if offset < 0 { throw ValidationError("--offset must be 0 or more") }
        if template == nil && entity == nil { throw ValidationError("give an entity to query, or --template NAME") }
        if template != nil && self.where != nil { throw ValidationError("--where and --template cannot be combined: the template has its predicate") }
        if template == nil && !variables.isEmpty { throw ValidationError("--var gives a template's variables; add --template NAME") }
        var seen: Set<Substring> = []
        for variable in variables {
            guard let key = variable.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first, variable.contains("=") else {
                throw ValidationError("--var \(variable): expected KEY=VALUE")
            }
            guard seen.insert(key).inserted else { throw ValidationError("--var \(key) is given twice") }
        }
    }

    /// The request to run: the template's, with the variables and any order or window given here, or one built from the options.
    private func request(model: Model) throws -> FetchRequest {
        let sortKeys = sort.map { text -> SortKey in
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            return SortKey(parts.first ?? text, ascending: parts.count < 2 || parts[1].lowercased() != "desc")
        }
        guard let template else {
            let predicate = try self.where.map { (text) throws(AmberError) in try FetchPredicate(text) }
            return FetchRequest(entity ?? "", predicate: predicate, sortedBy: sortKeys, limit: limit, offset: offset, prefetching: include)
        }
        var values: [String: Value] = [:]
        for variable in variables {
            let parts = variable.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            values[parts[0]] = Self.literal(parts[1])
        }
        var request = try model.fetchRequest(fromTemplate: template, substituting: values)
        if let entity, entity != request.entityName {
            throw ValidationError("template \(template) fetches \(request.entityName), not \(entity)")
        }
        if !sortKeys.isEmpty { request.sortKeys = sortKeys }
        if let limit { request.limit = limit }
        request.offset = offset
        request.prefetchKeyPaths = include
        return request
    }

    /// A `--var` value: a number, true/yes, false/no, nil/null, text in quotes, or else the text itself.
    static func literal(_ text: String) -> Value {
        switch text.lowercased() {
        case "nil", "null": return .null
        case "true", "yes": return .bool(true)
        case "false", "no": return .bool(false)
        default: break
        }
        if let integer = Int64(text) { return .int(integer) }
        if text.contains(where: { ".eE".contains($0) }), let number = Double(text), number.isFinite { return .double(number) }
        if text.count >= 2, let first = text.first, first == text.last, first == "'" || first == "\"" {
            return .string(String(text.dropFirst().dropLast()))
        }
        return .string(text)
    }

    func run() throws {
        try reportingErrors {
            let bar = progress.bar()  // from the start: auto mode's half second counts the fetch too
            defer { bar.finish() }    // also when reading an object fails
            try plugins.load()
            let context = Context(store: try Store(existing: store, modelFile: storeModel.file, xcode: xcode))
            let request = try request(model: context.model)
            let described = try context.model.entity(named: request.entityName)
            let links = described.relationships.filter { !$0.isToMany }
            for name in include {
                let relationship = try described.relationship(named: name)
                guard !relationship.isToMany else {
                    throw AmberError.invalidValue(place: relationship.description, expected: "a to-one relationship to include",
                                                  given: "a to-many relationship")
                }
            }
            let objects = try context.fetch(request)
            let attributes = described.attributes.filter { !$0.isTransient }
            let columns = try Self.columns(attributes: attributes, links: links, include: include, model: context.model,
                                           extensible: described.subentityIndices.contains { context.model.entities[$0].isExtensible })
            if json {
                print(try Self.json(objects, attributes, links: links, include: include, progress: bar))
            } else {
                try Self.printTable(objects, columns, progress: bar)
            }
        }
    }

    /// A printed column: its header and how to read it from an object.
    struct Column {
        let header: String
        let read: (ManagedObject) throws -> String
    }

    /// The table's columns: the attributes, each to-one as the related
    /// object's primary key, the included ones' attributes (`author.name`),
    /// and for an extensible entity its objects' extended attributes.
    static func columns(attributes: [Attribute], links: [Relationship], include: [String], model: Model,
                        extensible: Bool = false) throws -> [Column] {
        var columns = attributes.map { attribute in Column(header: attribute.name) { display(try $0.value(for: attribute)) } }
        for link in links {
            columns.append(Column(header: link.name) { try $0.object(for: link)?.objectID.primaryKey.map(String.init) ?? "" })
            guard include.contains(link.name) else { continue }
            for attribute in model.destination(of: link).attributes where !attribute.isTransient {
                columns.append(Column(header: "\(link.name).\(attribute.name)") { object in
                    try object.object(for: link).map { display(try $0.value(for: attribute)) } ?? ""
                })
            }
        }
        // Every extended attribute an object has, as key=value, in one column.
        if extensible {
            columns.append(Column(header: "extended") { object in
                try object.extendedValues().sorted { $0.key < $1.key }.map { "\($0.key)=\(display($0.value))" }.joined(separator: " ")
            })
        }
        return columns
    }

    /// The objects as a JSON array, telling `progress` as each is read.
    static func json(_ objects: [ManagedObject], _ attributes: [Attribute], links: [Relationship] = [],
                     include: [String] = [], progress: ProgressBar) throws -> String
    {
        func fields(_ object: ManagedObject, _ attributes: [Attribute]) throws -> [String: Any] {
            var row: [String: Any] = ["_id": object.objectID.uriRepresentation.absoluteString]
            for attribute in attributes { row[attribute.name] = jsonValue(try object.value(for: attribute)) }
            // Extended attributes beside the modelled ones (their names never clash).
            for (key, value) in try object.extendedValues() { row[key] = jsonValue(value) }
            return row
        }
        let rows = try read(objects, progress: progress) { object in
            var row = try fields(object, attributes)
            for link in links {
                guard let destination = try object.object(for: link) else {
                    row[link.name] = NSNull()
                    continue
                }
                row[link.name] = include.contains(link.name)
                    ? try fields(destination, destination.entity.attributes.filter { !$0.isTransient })
                    : destination.objectID.uriRepresentation.absoluteString
            }
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

    /// `row` of each object, telling `progress` as each is read; the bar's
    /// line is ended before the caller prints.
    private static func read<Row>(_ objects: [ManagedObject], progress: ProgressBar,
                                  _ row: (ManagedObject) throws -> Row) throws -> [Row]
    {
        var rows: [Row] = []
        rows.reserveCapacity(objects.count)
        for object in objects {
            rows.append(try row(object))
            progress.show("read objects", rows.count, of: objects.count)
        }
        progress.finish()
        return rows
    }

    /// The objects as a table, telling `progress` as each is read.
    static func printTable(_ objects: [ManagedObject], _ columns: [Column], progress: ProgressBar) throws {
        let header = ["id"] + columns.map(\.header)
        let rows = try read(objects, progress: progress) { object in
            [object.objectID.primaryKey.map(String.init) ?? ""] + (try columns.map { try $0.read(object) })
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
