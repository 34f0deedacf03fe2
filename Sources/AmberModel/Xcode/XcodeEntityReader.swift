import AmberValues

/// A list of property names an entity declares as an index or a uniqueness
/// constraint; resolved once every entity is read, since a name may be
/// inherited.
struct XcodePropertyList {
    enum Kind { case index, constraint }
    let kind: Kind
    /// `fetch index byDate`, `uniqueness constraint (a, b)`: how notes name it.
    let label: String
    let names: [String]
}

/// Reads one `<entity>` element: its flags, attributes, relationships,
/// user info, and the index and constraint lists (resolved later by
/// ``XcodePropertyLists``).
struct XcodeEntityReader {
    let context: XcodeReadContext
    let composites: [String: XMLNode]

    static let handled: Set<String> = ["parentEntity", "isAbstract", "elementID", "versionHashModifier"]

    /// The entity `node` declares and its index and constraint lists.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a missing name or a property that cannot be read.
    func read(_ node: XMLNode) throws(AmberError) -> (EntityDescription, [XcodePropertyList]) {
        let name = try context.required("name", of: node)
        context.screenAttributes(of: node, place: name, handled: Self.handled, ignored: XcodeIgnored.entity)
        var entity = EntityDescription(name)
        entity.parent = node["parentEntity"].flatMap { $0.isEmpty ? nil : $0 }
        entity.isAbstract = try context.flag("isAbstract", of: node)
        entity.renamingIdentifier = node["elementID"]
        entity.versionHashModifier = node["versionHashModifier"]
        entity.userInfo = try context.userInfo(of: node, place: name)

        let attributes = XcodeAttributeReader(context: context, composites: composites)
        let relationships = XcodeRelationshipReader(context: context)
        var lists: [XcodePropertyList] = []
        for child in node.children {
            switch child.name {
            case "attribute":
                if let attribute = try attributes.read(child, entity: name) { entity.attributes.append(attribute) }
            case "relationship":
                entity.relationships.append(try relationships.read(child, entity: name))
            case "fetchedProperty":
                if let property = try fetchedProperty(child, entity: name) { entity.fetchedProperties.append(property) }
            case "fetchIndex":
                if let list = try fetchIndex(child, entity: name) { lists.append(list) }
            case "compoundIndexes":
                lists += try compoundIndexes(child, entity: name)
            case "uniquenessConstraints":
                lists += try uniquenessConstraints(child, entity: name)
            case "userInfo":
                break
            default:
                context.unknownElement(child, in: name)
            }
        }
        return (entity, lists)
    }

    /// `<fetchedProperty name><fetchRequest entity predicateString/></fetchedProperty>`: the property, or nil
    /// (with a note) when it names no request.
    private func fetchedProperty(_ node: XMLNode, entity: String) throws(AmberError) -> FetchedPropertyDescription? {
        guard let name = node["name"] else {
            context.note(entity, "a fetched property without a name (line \(node.line)) is left out", .notHonoured)
            return nil
        }
        let place = "\(entity).\(name)"
        context.screenAttributes(of: node, place: place, handled: ["optional", "syncable"])
        guard let request = node.children(named: "fetchRequest").first, request["entity"] != nil, request["name"] != nil else {
            context.note(place, "a fetched property without a fetch request (with a name and an entity) is left out", .notHonoured)
            return nil
        }
        for child in node.children where child.name != "fetchRequest" && child.name != "userInfo" { context.unknownElement(child, in: place) }
        let template = try XcodeTemplateReader(context: context).read(request, place: place)
        return FetchedPropertyDescription(name, entity: template.entityName, where: template.predicate, limit: template.limit,
                                          userInfo: try context.userInfo(of: node, place: place))
    }

    /// `<fetchIndex name><fetchIndexElement property type order/>…`: an index, or nil (with a note) when Amber cannot keep it.
    private func fetchIndex(_ node: XMLNode, entity: String) throws(AmberError) -> XcodePropertyList? {
        let label = "fetch index \(node["name"] ?? "(unnamed)")"
        let place = entity
        context.screenAttributes(of: node, place: place, handled: [])
        var names: [String] = []
        for element in node.children {
            guard element.name == "fetchIndexElement" else {
                context.unknownElement(element, in: place)
                continue
            }
            context.screenAttributes(of: element, place: place, handled: ["property", "type", "order", "expression", "expressionType"])
            guard let property = element["property"], !property.isEmpty else {
                let what = element["expression"].map { "an expression (\($0))" } ?? "no property"
                context.note(place, "\(label) is not imported: an element names \(what); Amber indexes attributes only", .notHonoured)
                return nil
            }
            if element["type"] == "RTree" {
                context.note(place, "\(label): R-tree element \(property) is imported as part of an ordinary index", .mapped)
            }
            if element["order"] == "descending" {
                context.note(place, "\(label): descending order of \(property) is not kept (SQLite reads an index either way)", .notHonoured)
            }
            names.append(property)
        }
        return XcodePropertyList(kind: .index, label: label, names: names)
    }

    /// The older form: `<compoundIndexes><compoundIndex><index value/>…`.
    private func compoundIndexes(_ node: XMLNode, entity: String) throws(AmberError) -> [XcodePropertyList] {
        try lists(node, item: "compoundIndex", member: "index", kind: .index, entity: entity)
    }

    /// `<uniquenessConstraints><uniquenessConstraint><constraint value/>…`.
    private func uniquenessConstraints(_ node: XMLNode, entity: String) throws(AmberError) -> [XcodePropertyList] {
        try lists(node, item: "uniquenessConstraint", member: "constraint", kind: .constraint, entity: entity)
    }

    private func lists(_ node: XMLNode, item: String, member: String, kind: XcodePropertyList.Kind,
                       entity: String) throws(AmberError) -> [XcodePropertyList]
    {
        var result: [XcodePropertyList] = []
        for list in node.children {
            guard list.name == item else {
                context.unknownElement(list, in: entity)
                continue
            }
            var names: [String] = []
            for element in list.children {
                guard element.name == member else {
                    context.unknownElement(element, in: entity)
                    continue
                }
                names.append(try context.required("value", of: element))
            }
            let what = kind == .index ? "compound index" : "uniqueness constraint"
            result.append(XcodePropertyList(kind: kind, label: "\(what) (\(names.joined(separator: ", ")))", names: names))
        }
        return result
    }
}

/// Puts index and constraint lists on their entities once every entity is
/// known: a list naming a relationship is left out with a note (Amber's
/// indexes and constraints name attributes; every to-one's column is
/// indexed on its own), a name that names nothing is kept for binding to report.
struct XcodePropertyLists {
    let context: XcodeReadContext

    private enum Kind { case attribute, toOne, toMany, unknown }

    /// `entities` with `lists[i]` added to entity i.
    func apply(_ lists: [[XcodePropertyList]], to entities: [EntityDescription]) -> [EntityDescription] {
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var result = entities
        for (index, entityLists) in lists.enumerated() where index < result.count {
            let entity = result[index]
            for list in entityLists {
                guard !list.names.isEmpty else {
                    context.note(entity.name, "\(list.label) names no property and is not imported", .notHonoured)
                    continue
                }
                let kinds = list.names.map { kind(of: $0, in: entity, byName: byName) }
                let relationships = zip(list.names, kinds).filter { $0.1 == .toOne || $0.1 == .toMany }.map(\.0)
                if relationships.isEmpty {
                    switch list.kind {
                    case .index: result[index].indexes.append(list.names)
                    case .constraint: result[index].uniquenessConstraints.append(list.names)
                    }
                } else if list.kind == .index && kinds == [.toOne] {
                    context.note(entity.name, "\(list.label) on to-one \(list.names[0]) is not needed: Amber indexes every to-one's column", .notHonoured)
                } else {
                    let what = list.kind == .index ? "indexes" : "uniqueness constraints"
                    context.note(entity.name, "\(list.label) is not imported: it names relationship \(relationships.joined(separator: ", ")), "
                        + "and Amber's \(what) name attributes only", .notHonoured)
                }
            }
        }
        return result
    }

    /// What `name` is on `entity` or an entity it inherits from (the walk up is bounded by the number of entities, so a cycle ends it).
    private func kind(of name: String, in entity: EntityDescription, byName: [String: EntityDescription]) -> Kind {
        var current: EntityDescription? = entity
        var steps = 0
        while let here = current, steps <= byName.count {
            if here.attributes.contains(where: { $0.name == name }) { return .attribute }
            if let relationship = here.relationships.first(where: { $0.name == name }) { return relationship.isToMany ? .toMany : .toOne }
            current = here.parent.flatMap { byName[$0] }
            steps += 1
        }
        return .unknown
    }
}
