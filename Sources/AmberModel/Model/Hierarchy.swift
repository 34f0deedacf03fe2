import AmberValues

/// Entity inheritance resolved: each entity's parent, root (whose table the
/// whole hierarchy shares) and descendants, and its effective description:
/// the inherited attributes and relationships first (root's first), then its own.
struct Hierarchy {
    /// By entity index.
    private(set) var parents: [Int?]
    private(set) var roots: [Int]
    /// Each entity and every entity below it, in model order.
    private(set) var subtrees: [[Int]]
    private(set) var effective: [EntityDescription]
    /// By entity, by effective relationship: the name of the entity that declared it.
    private(set) var declaring: [[String]]
    /// By entity: how many ancestors it has.
    private(set) var depths: [Int]
    /// By entity: how many of its effective attributes and relationships it inherits.
    private(set) var inheritedAttributes: [Int]
    private(set) var inheritedRelationships: [Int]

    init(_ model: ModelDescription, problems: inout [ModelProblem]) {
        let entities = model.entities
        let indexes = Dictionary(entities.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
        var parents: [Int?] = entities.map { entity in
            guard let parent = entity.parent else { return nil }
            guard let index = indexes[parent] else {
                problems.append(ModelProblem(place: entity.name, message: "parent \"\(parent)\": no such entity"
                    + AmberError.hint(nearestName(to: parent, in: entities.map(\.name).filter { $0 != entity.name }))))
                return nil
            }
            return index
        }
        // Walking up from an entity in a cycle never reaches a root: count the steps.
        var roots = Array(entities.indices), depths = entities.map { _ in 0 }
        for index in entities.indices {
            var current = index, steps = 0
            while let parent = parents[current], steps <= entities.count {
                current = parent
                steps += 1
            }
            if steps > entities.count {
                problems.append(ModelProblem(place: entities[index].name, message: "inherits from itself through its parents"))
                parents[index] = nil
                (current, steps) = (index, 0)
            }
            (roots[index], depths[index]) = (current, steps)
        }
        var subtrees = entities.map { _ in [Int]() }
        for index in entities.indices {
            var current: Int? = index
            for _ in 0...depths[index] {
                guard let ancestor = current else { break }
                subtrees[ancestor].append(index)
                current = parents[ancestor]
            }
        }
        // Ancestors first, so each entity's parent is complete before it.
        var effective = entities
        var declaring = entities.map { entity in entity.relationships.map { _ in entity.name } }
        var inheritedAttributes = entities.map { _ in 0 }, inheritedRelationships = entities.map { _ in 0 }
        for index in entities.indices.sorted(by: { depths[$0] < depths[$1] }) {
            guard let parent = parents[index] else { continue }
            let inherited = effective[parent], own = entities[index]
            let names = Set((inherited.attributes.map(\.name) + inherited.relationships.map(\.name)).map { $0.lowercased() })
            for name in own.attributes.map(\.name) + own.relationships.map(\.name) where names.contains(name.lowercased()) {
                problems.append(ModelProblem(place: "\(own.name).\(name)",
                                             message: "\(inherited.name) already has a property of that name, which \(own.name) inherits"))
            }
            effective[index].attributes = inherited.attributes + own.attributes
            effective[index].relationships = inherited.relationships + own.relationships
            effective[index].isExtensible = inherited.isExtensible || own.isExtensible
            declaring[index] = declaring[parent] + own.relationships.map { _ in own.name }
            inheritedAttributes[index] = inherited.attributes.count
            inheritedRelationships[index] = inherited.relationships.count
        }
        // Siblings and cousins share their root's table: a name two of them declare would be one column for two meanings.
        var declaredBy: [String: (entity: Int, name: String)] = [:]
        for (index, entity) in entities.enumerated() {
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                let key = "\(roots[index]) \(name.lowercased())"
                if let other = declaredBy[key], !subtrees[other.entity].contains(index), !subtrees[index].contains(other.entity) {
                    problems.append(ModelProblem(place: "\(entity.name).\(name)",
                                                 message: "\(entities[other.entity].name) declares a property of that name too, and they share \(entities[roots[index]].name)'s table"))
                }
                declaredBy[key] = declaredBy[key] ?? (index, name)
            }
        }
        (self.parents, self.roots, self.subtrees, self.effective, self.depths) = (parents, roots, subtrees, effective, depths)
        (self.declaring, self.inheritedAttributes, self.inheritedRelationships) = (declaring, inheritedAttributes, inheritedRelationships)
    }

    /// Whether entity `index` is `ancestor` or below it.
    func isKind(_ index: Int, of ancestor: Int) -> Bool { subtrees[ancestor].contains(index) }
}
