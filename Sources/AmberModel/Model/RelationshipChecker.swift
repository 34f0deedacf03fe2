import AmberValues

/// Checks every relationship of a model against the whole model (names,
/// destinations, inverses that point back, counts) and works out where each
/// to-many's links live.
struct RelationshipChecker {
    /// The model with each entity's effective (inherited and own) properties.
    private let model: ModelDescription
    private let hierarchy: Hierarchy
    private let entityIndexes: [String: Int]

    init(_ model: ModelDescription, hierarchy: Hierarchy) {
        self.model = model
        self.hierarchy = hierarchy
        self.entityIndexes = Dictionary(model.entities.enumerated().map { ($0.element.name, $0.offset) },
                                        uniquingKeysWith: { first, _ in first })
    }

    /// A plan per relationship (`[entity][relationship]`); problems are added to `problems`.
    func plans(problems: inout [ModelProblem]) -> [[RelationshipPlan]] {
        model.entities.enumerated().map { index, entity in
            var seen = Set(entity.attributes.map { $0.name.lowercased() })
            return entity.relationships.enumerated().map { position, relationship in
                let place = "\(entity.name).\(relationship.name)"
                var local: [String] = []
                if let issue = Identifier.problem(relationship.name, kind: "relationship") { local.append(issue) }
                if !seen.insert(relationship.name.lowercased()).inserted {
                    local.append("duplicate name: the entity has an attribute or relationship of that name (names are case-insensitive)")
                }
                let plan = check(relationship, of: index, position: position, problems: &local)
                // An inherited relationship's problems are its declaring entity's to report.
                if position >= hierarchy.inheritedRelationships[index] {
                    problems += local.map { ModelProblem(place: place, message: $0) }
                }
                return plan
            }
        }
    }

    private func check(_ relationship: RelationshipDescription, of entityIndex: Int, position: Int,
                       problems: inout [String]) -> RelationshipPlan
    {
        let entity = model.entities[entityIndex]
        let declaring = hierarchy.declaring[entityIndex][position]
        var plan = RelationshipPlan()
        checkCounts(relationship, problems: &problems)
        guard let destinationIndex = entityIndexes[relationship.destination] else {
            problems.append("destination \"\(relationship.destination)\": no such entity"
                + AmberError.hint(nearestName(to: relationship.destination, in: model.entities.map(\.name))))
            return plan
        }
        plan.destinationIndex = destinationIndex
        let destination = model.entities[destinationIndex]
        guard !relationship.isOneWay else {
            if let inverse = relationship.inverse { problems.append("is one-way but names an inverse (\(inverse))") }
            plan.toManyStorage = relationship.isToMany ? joinTable(relationship, declaredBy: declaring, inverse: nil) : nil
            return plan
        }
        guard let inverseName = relationship.inverse else {
            problems.append("has no inverse: name the relationship of \(destination.name) that points back, or mark it one-way")
            return plan
        }
        guard let inverseIndex = destination.relationships.firstIndex(where: { $0.name == inverseName }) else {
            problems.append("inverse \(destination.name).\(inverseName): no such relationship"
                + AmberError.hint(nearestName(to: inverseName, in: destination.relationships.map(\.name))))
            return plan
        }
        let inverse = destination.relationships[inverseIndex]
        // The inverse may point at this entity or at an ancestor it inherits the relationship from.
        if !(entityIndexes[inverse.destination].map { hierarchy.isKind(entityIndex, of: $0) } ?? false) {
            problems.append("inverse \(destination.name).\(inverseName) points at \(inverse.destination), not at \(entity.name)")
        } else if inverse.isOneWay || inverse.inverse != relationship.name {
            let names = inverse.isOneWay || inverse.inverse == nil ? "no inverse" : "\(entity.name).\(inverse.inverse ?? "")"
            problems.append("inverse \(destination.name).\(inverseName) names \(names) as its inverse, not \(entity.name).\(relationship.name)")
        }
        plan.inverseIndex = inverseIndex
        if relationship.isToMany {
            plan.toManyStorage = inverse.isToMany
                ? joinTable(relationship, declaredBy: declaring, inverse: inverse,
                            inverseDeclaredBy: hierarchy.declaring[destinationIndex][inverseIndex])
                : .inverseForeignKey(orderColumn: relationship.isOrdered
                    ? "_order_\(hierarchy.columns[destinationIndex][inverse.name]?.name ?? inverse.name)" : nil)
        }
        return plan
    }

    /// Counts and ordering apply to to-many relationships, and must be satisfiable.
    private func checkCounts(_ relationship: RelationshipDescription, problems: inout [String]) {
        guard relationship.isToMany else {
            if relationship.minCount != nil || relationship.maxCount != nil {
                problems.append("minCount and maxCount apply to to-many relationships; a to-one is required or optional")
            }
            if relationship.isOrdered { problems.append("ordered applies to to-many relationships") }
            return
        }
        if let low = relationship.minCount, low < 0 { problems.append("minCount \(low) is negative") }
        if let high = relationship.maxCount, high < 1 { problems.append("maxCount \(high) leaves no room for any member") }
        if let low = relationship.minCount, let high = relationship.maxCount, low > high {
            problems.append("minCount \(low) is greater than maxCount \(high)")
        }
    }

    /// The join table of a many-to-many (one table for both sides, named
    /// after the side whose `Entity.name` sorts first) or of a one-way to-many.
    private func joinTable(_ relationship: RelationshipDescription, declaredBy entity: String,
                           inverse: RelationshipDescription?, inverseDeclaredBy inverseEntity: String = "") -> Relationship.Storage
    {
        // Named after the declaring entities, so sub-entities share their parent's table. A dot
        // cannot occur in a name, so no two relationships share a table by accident.
        let mine = "\(entity).\(relationship.name)"
        guard let inverse else {
            return .joinTable(table: "_amber_\(mine)", sourceColumn: "source", destinationColumn: "target",
                              orderColumn: relationship.isOrdered ? "source_order" : nil)
        }
        let theirs = "\(inverseEntity).\(inverse.name)"
        // The owner's key is `source`; a self-inverse relationship is its own owner and reads both ways.
        let owner = mine <= theirs
        return .joinTable(table: "_amber_\(owner ? mine : theirs)", sourceColumn: owner ? "source" : "target",
                          destinationColumn: owner ? "target" : "source",
                          orderColumn: relationship.isOrdered ? (owner ? "source_order" : "target_order") : nil)
    }
}
