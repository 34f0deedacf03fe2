import AmberValues

/// Reads one `<relationship>` element into a relationship description.
struct XcodeRelationshipReader {
    let context: XcodeReadContext

    static let handled: Set<String> = ["destinationEntity", "inverseName", "toMany", "ordered", "optional", "minCount", "maxCount",
                                       "deletionRule", "indexed", "elementID", "versionHashModifier", "transient",
                                       "spotlightIndexingEnabled", "storedInTruthFile"]

    /// Xcode's delete rules and Amber's.
    static let deleteRules: [String: RelationshipDescription.DeleteRule] = [
        "Nullify": .nullify, "Cascade": .cascade, "Deny": .deny, "No Action": .noAction,
    ]

    /// The relationship `node` declares in `entity`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a missing name or destination, an unknown delete rule or a count that is not a number.
    func read(_ node: XMLNode, entity: String) throws(AmberError) -> RelationshipDescription {
        let name = try context.required("name", of: node)
        let place = "\(entity).\(name)"
        context.screenAttributes(of: node, place: place, handled: Self.handled, ignored: XcodeIgnored.relationship)
        for child in node.children where child.name != "userInfo" { context.unknownElement(child, in: place) }

        let destination = try context.required("destinationEntity", of: node)
        let inverse = node["inverseName"].flatMap { $0.isEmpty ? nil : $0 }
        let toMany = try context.flag("toMany", of: node)
        var relationship = RelationshipDescription(name, destination: destination, inverse: inverse, toMany: toMany)
        relationship.isOptional = try context.flag("optional", of: node)
        relationship.userInfo = try context.userInfo(of: node, place: place)
        relationship.renamingIdentifier = node["elementID"]
        relationship.versionHashModifier = node["versionHashModifier"]

        if let text = node["deletionRule"] {
            guard let rule = Self.deleteRules[text] else {
                throw context.failure(node, "unknown deletionRule \"\(text)\"" + AmberError.hint(nearestName(to: text, in: Self.deleteRules.keys.sorted())))
            }
            relationship.deleteRule = rule
        }
        let minimum = try context.integer("minCount", of: node)
        let maximum = try context.integer("maxCount", of: node)
        if toMany {
            relationship.isOrdered = try context.flag("ordered", of: node)
            // Xcode writes 0 for "no bound".
            relationship.minCount = minimum.flatMap { $0 > 0 ? $0 : nil }
            relationship.maxCount = maximum.flatMap { $0 > 0 ? $0 : nil }
        } else {
            if try context.flag("ordered", of: node) {
                context.note(place, "ordered applies to to-many relationships; ignored on a to-one", .notHonoured)
            }
            // maxCount="1" is what marks a to-one; minCount 1 matters only when it contradicts optional.
            if let minimum, minimum > 1 || (minimum == 1 && relationship.isOptional) {
                context.note(place, "minCount \(minimum) on a to-one is not kept: Amber bounds counts of to-many relationships only; optional (\(relationship.isOptional ? "YES" : "NO")) decides whether it may be nil",
                             .notHonoured)
            }
            if let maximum, maximum > 1 {
                context.note(place, "maxCount \(maximum) without toMany=\"YES\": imported as a to-one", .notHonoured)
            }
        }
        if inverse == nil {
            relationship = relationship.oneWay()
            context.note(place, "no inverse: imported one-way, so Amber keeps only this side: deleting an object it points at does not take "
                + "that object out of \(name) (a save that would leave such a link fails), and \(destination) has no relationship back "
                + "to ask which objects point at it", .mapped)
        }
        if try context.flag("transient", of: node) {
            context.note(place, "transient relationships are not honoured: Amber stores every relationship", .notHonoured)
        }
        for (key, message) in XcodeAttributeReader.unhonouredFlags where Self.handled.contains(key) {
            if try context.flag(key, of: node) { context.note(place, message, .notHonoured) }
        }
        return relationship
    }
}
