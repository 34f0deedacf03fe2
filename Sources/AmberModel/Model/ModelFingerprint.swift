import AmberTransformers
import AmberValues

/// What of a model shapes its store, as named parts: comparing two
/// fingerprints says exactly what differs; hashing one gives the model's
/// version hash. Defaults, validation rules and user info do not shape the
/// store, so changing them needs no migration.
package struct ModelFingerprint {
    /// Part name (`Book`, `Book.title`, `Book indexes`) → its description.
    let parts: [String: String]

    package init(_ model: ModelDescription) {
        var parts: [String: String] = [:], unused: [ModelProblem] = []
        // A property beside a sibling's of the same name keeps its own column, named after its entity: which one has
        // the plain name follows the model's order, so it is part of the shape (and only where it applies).
        let columns = Hierarchy(model, problems: &unused).columns
        for (index, entity) in model.entities.enumerated() {
            let column = { (name: String) in columns[index][name].flatMap { $0.rank == 0 ? nil : ", column \($0.name)" } ?? "" }
            // A parent decides the table an entity's objects live in.
            parts[entity.name] = "entity" + (entity.parent.map { " inheriting from \($0)" } ?? "") + (entity.isAbstract ? ", abstract" : "")
                + (entity.isExtensible ? ", extensible" : "") + Self.modifier(entity.versionHashModifier)
            for attribute in entity.attributes where !attribute.isTransient {
                var text = attribute.type.rawValue + (attribute.isOptional ? ", optional" : ", required")
                if attribute.type == .transformable {
                    // The chain decides what the column holds, so it is part of the store's shape.
                    text += " \(attribute.valueClassName ?? ValueClass.propertyListName) via "
                        + (attribute.transformerNames.isEmpty ? [Registry.archiveTransformerName] : attribute.transformerNames)
                            .joined(separator: " > ")
                }
                if attribute.isIndexed { text += ", indexed" }
                // Stored derived values follow their expression: another expression needs the column computed again.
                if let derivation = attribute.derivation { text += ", derived \(derivation)" }
                text += Self.modifier(attribute.versionHashModifier) + column(attribute.name)
                parts["\(entity.name).\(attribute.name)"] = text
            }
            // A shadow attribute's chain decides what its storage column holds.
            for shadow in entity.attributes where shadow.isTransient {
                guard let storage = shadow.storageAttribute, let part = parts["\(entity.name).\(storage)"] else { continue }
                parts["\(entity.name).\(storage)"] = part + ", stores \(shadow.name) " + (shadow.valueClassName ?? ValueClass.propertyListName)
                    + " via " + shadow.transformerNames.joined(separator: " > ")
            }
            // Links are part of the store's shape: a to-one is a column, a to-many a column elsewhere or a join table.
            for relationship in entity.relationships {
                var text = (relationship.isToMany ? "to-many " : "to-one ") + relationship.destination
                text += relationship.inverse.map { " inverse \($0)" } ?? " one-way"
                if relationship.isOrdered { text += ", ordered" }
                text += Self.modifier(relationship.versionHashModifier) + column(relationship.name)
                parts["\(entity.name).\(relationship.name)"] = text
            }
            let render = { (lists: [[String]]) in lists.map { "(" + $0.joined(separator: ", ") + ")" }.sorted().joined(separator: " ") }
            if !entity.indexes.isEmpty { parts["\(entity.name) indexes"] = render(entity.indexes) }
            if !entity.uniquenessConstraints.isEmpty { parts["\(entity.name) uniqueness constraints"] = render(entity.uniquenessConstraints) }
        }
        self.parts = parts
    }

    private static func modifier(_ text: String?) -> String { text.map { ", version hash modifier \"\($0)\"" } ?? "" }

    /// 64-bit FNV-1a of the sorted parts, as 16 hex digits. Detects change; it
    /// is not meant to resist an adversary (the store keeps the whole model too).
    var hash: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (key, value) in parts.sorted(by: { $0.key < $1.key }) {
            for byte in "\(key)=\(value)\n".utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Every difference between the model a store holds and the one given.
    package static func differences(store: ModelFingerprint, model: ModelFingerprint) -> [String] {
        Set(store.parts.keys).union(model.parts.keys).sorted().compactMap { key in
            switch (store.parts[key], model.parts[key]) {
            case (let s?, nil): "\(key): in the store, not in the model (\(s))"
            case (nil, let m?): "\(key): in the model, not in the store (\(m))"
            case (let s?, let m?) where s != m: "\(key): the store has \(s), the model has \(m)"
            default: nil
            }
        }
    }
}
