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
    /// By entity, by property name (its own and inherited): the column of the root's table holding it.
    private(set) var columns: [[String: StoredColumn]]

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
        // Siblings and cousins share their root's table, and may each declare a property of one name (as in Core Data):
        // the first in model order keeps the name as its column, each later one has its own column, `Entity.name`.
        var claimed: [String: Int] = [:]
        var ownColumns = entities.map { _ in [String: StoredColumn]() }
        for (index, entity) in entities.enumerated() {
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                let key = "\(roots[index]) \(name.lowercased())", rank = claimed[key, default: 0]
                claimed[key] = rank + 1
                ownColumns[index][name] = StoredColumn(name: rank == 0 ? name : "\(entity.name).\(name)", property: name, rank: rank)
            }
        }
        var columns = ownColumns
        for index in entities.indices.sorted(by: { depths[$0] < depths[$1] }) {
            guard let parent = parents[index] else { continue }
            columns[index].merge(columns[parent]) { own, _ in own }
        }
        (self.parents, self.roots, self.subtrees, self.effective, self.depths) = (parents, roots, subtrees, effective, depths)
        (self.declaring, self.inheritedAttributes, self.inheritedRelationships) = (declaring, inheritedAttributes, inheritedRelationships)
        self.columns = columns
    }

    /// Whether entity `index` is `ancestor` or below it.
    func isKind(_ index: Int, of ancestor: Int) -> Bool { subtrees[ancestor].contains(index) }
}

/// Where a property is kept in its hierarchy's table. A property has its own
/// name as its column, unless an entity earlier in the model, beside it in the
/// hierarchy (neither above nor below it), declares a property of that name
/// too: then its column is `Entity.name`, which no property name can be.
package struct StoredColumn: Sendable, Equatable {
    /// The column's name in Amber's layout.
    package let name: String
    /// The property's name.
    package let property: String
    /// How many entities of the hierarchy declared a property of this name
    /// (letters in any case) before the declaring entity, in model order: 0
    /// for the column named as the property.
    package let rank: Int
}
