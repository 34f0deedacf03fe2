import AmberValues

/// Reads a `<model>` element: entities (through ``XcodeEntityReader``),
/// fetch request templates, and the model-level features Amber notes
/// rather than keeps (configurations, model user info, CloudKit use).
struct XcodeModelReader {
    let context: XcodeReadContext

    init(_ context: XcodeReadContext) {
        self.context = context
    }

    static let handled: Set<String> = ["usedWithCloudKit"]

    /// The model description `root` declares.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a root that is not `<model>` or any element that cannot be read.
    func read(_ root: XMLNode) throws(AmberError) -> ModelDescription {
        guard root.name == "model" else {
            throw context.failure(root, "expected <model> as the document's element, found <\(root.name)>: not an Xcode data model")
        }
        context.screenAttributes(of: root, place: "model", handled: Self.handled, ignored: XcodeIgnored.model)
        if try context.flag("usedWithCloudKit", of: root) {
            context.note("model", "usedWithCloudKit: Amber does not sync with CloudKit", .notHonoured)
        }
        var composites: [String: XMLNode] = [:]
        for composite in root.children(named: "composite") {
            composites[try context.required("name", of: composite)] = composite
        }
        let entityReader = XcodeEntityReader(context: context, composites: composites)
        let templateReader = XcodeTemplateReader(context: context)
        var entities: [EntityDescription] = []
        var lists: [[XcodePropertyList]] = []
        var templates: [FetchTemplateDescription] = []
        for child in root.children {
            switch child.name {
            case "entity":
                let (entity, entityLists) = try entityReader.read(child)
                entities.append(entity)
                lists.append(entityLists)
            case "fetchRequest":
                templates.append(try templateReader.read(child))
            case "configuration":
                try configuration(child)
            case "userInfo":
                let entries = try context.userInfo(of: root, place: "model")
                if !entries.isEmpty {
                    let text = entries.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
                    context.note("model", "model-level userInfo is not kept (Amber models have none; entities, attributes and relationships keep theirs): \(text)",
                                 .notHonoured)
                }
            case "composite", "elements":
                // Composites are read with the attributes that use them; elements are the editor's diagram layout.
                break
            default:
                context.unknownElement(child, in: "model")
            }
        }
        entities = XcodePropertyLists(context: context).apply(lists, to: entities)
        return ModelDescription(entities: entities, templates: templates)
    }

    private func configuration(_ node: XMLNode) throws(AmberError) {
        let name = try context.required("name", of: node)
        let members = node.children(named: "memberEntity").compactMap { $0["name"] }
        let cloud = try context.flag("usedWithCloudKit", of: node) ? ", used with CloudKit" : ""
        context.note("configuration \(name)", "configurations are not honoured: Amber keeps every entity in one store "
            + "(this one lists \(members.isEmpty ? "no entities" : members.joined(separator: ", "))\(cloud))", .notHonoured)
    }
}

/// Reads a model-level `<fetchRequest>` into a fetch request template.
struct XcodeTemplateReader {
    let context: XcodeReadContext

    static let handled: Set<String> = ["entity", "predicateString", "fetchLimit"]

    /// Options of a Core Data fetch request that an Amber template does not
    /// hold, with the value that matches what an Amber fetch does anyway
    /// (only other values are noted).
    static let options: [String: String] = [
        "fetchBatchSize": "0", "includeSubentities": "YES", "includePropertyValues": "YES", "includePendingChanges": "YES",
        "returnObjectsAsFaults": "YES", "returnDistinctResults": "NO", "resultType": "0",
    ]

    /// The template `node` declares.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a missing name or entity, or a limit that is not a number.
    func read(_ node: XMLNode, place given: String? = nil) throws(AmberError) -> FetchTemplateDescription {
        let name = try context.required("name", of: node)
        let place = given ?? "templates.\(name)"
        context.screenAttributes(of: node, place: place, handled: Self.handled.union(Self.options.keys))
        for child in node.children { context.unknownElement(child, in: place) }
        let limit = try context.integer("fetchLimit", of: node)
        for key in Self.options.keys.sorted() {
            guard let value = node[key], value != Self.options[key] else { continue }
            context.note(place, "\(key)=\"\(value)\" is not kept: an Amber template holds an entity, a predicate, sort keys and a limit; "
                + "set it on the request made from the template where Amber has it", .notHonoured)
        }
        let predicate = node["predicateString"].flatMap { $0.isEmpty ? nil : $0 }
        // Xcode writes 0 for "no limit".
        return FetchTemplateDescription(name, entity: try context.required("entity", of: node), where: predicate,
                                        limit: limit.flatMap { $0 > 0 ? $0 : nil })
    }
}
