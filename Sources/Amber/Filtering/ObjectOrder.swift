import AmberModel
import AmberStore
import AmberTransformers
import AmberValues

/// Sort keys compiled for one entity and applied to objects in memory, on
/// their current values, in the order a store's `ORDER BY` gives: nulls
/// first when ascending, text by its UTF-8 bytes (folded for a
/// case-insensitive key), decimals exactly; objects equal on every key by
/// primary key, and new objects after saved ones, in the order they were
/// inserted (the order their keys will take when saved).
struct ObjectOrder {
    private struct Key {
        let read: (ManagedObject) throws(AmberError) -> ComparedValue
        let ascending: Bool
    }

    private let keys: [Key]

    /// `keys` for objects of `entity`; transient attributes are allowed when `transients`.
    ///
    /// - Throws: what a fetch sorted by `keys` throws: an unknown key, a relationship, a transient attribute.
    init(_ keys: [SortKey], entity: Entity, model: Model, transients: Bool = false) throws(AmberError) {
        self.keys = try keys.map { (key) throws(AmberError) in
            let resolved = try ResolvedKeyPath.sortKey(key.key, from: entity, in: model, transients: transients)
            // As the store folds: a text attribute or an extended one (whose text values fold), nothing else.
            let fold = key.caseInsensitive && (resolved.type == .string || resolved.type == nil)
            let hops = resolved.hops
            let read: (ManagedObject) throws(AmberError) -> Value
            switch resolved.end {
            case .attribute(let attribute) where attribute.codec != nil:
                // A transformed attribute sorts by its stored form, as the store sorts it.
                read = { (object) throws(AmberError) in
                    guard let value = try object.reached(through: hops)?.value(for: attribute), !value.isNull, let codec = attribute.codec else { return .null }
                    do throws(TransformerFailure) {
                        return try codec.encode(value)
                    } catch {
                        throw error.error(at: "\(attribute)")
                    }
                }
            case .attribute(let attribute):
                read = { (object) throws(AmberError) in try object.reached(through: hops)?.value(for: attribute) ?? .null }
            case .extended(let name, _):
                read = { (object) throws(AmberError) in
                    guard let owner = try object.reached(through: hops) else { return .null }
                    return ExtendedValues.asStoresRead(try owner.value(forExtendedKey: name))
                }
            case .link, .aggregate:
                read = { _ in .null }  // refused by sortKey
            }
            return Key(read: { (object) throws(AmberError) in
                let value = try read(object)
                if fold, case .string(let text) = value {
                    return ComparedValue(.string(TextFolding.fold(text, flags: ComparisonOptions.caseInsensitive.rawValue)))
                }
                return ComparedValue(value)
            }, ascending: key.ascending)
        }
    }

    /// Whether there is anything to order by but keys.
    var isEmpty: Bool { keys.isEmpty }

    /// `objects` in order; each object's values are read once.
    func sorted(_ objects: [ManagedObject]) throws(AmberError) -> [ManagedObject] {
        var decorated: [(object: ManagedObject, values: [ComparedValue])] = []
        decorated.reserveCapacity(objects.count)
        for object in objects {
            decorated.append((object, try values(of: object)))
        }
        decorated.sort { precedes($0.object, $0.values, $1.object, $1.values) }
        return decorated.map(\.object)
    }

    /// What `object` is ordered by.
    func values(of object: ManagedObject) throws(AmberError) -> [ComparedValue] {
        try keys.map { (key) throws(AmberError) in try key.read(object) }
    }

    /// Whether `a` (with sort values `aValues`) comes before `b`.
    func precedes(_ a: ManagedObject, _ aValues: [ComparedValue], _ b: ManagedObject, _ bValues: [ComparedValue]) -> Bool {
        for (index, key) in keys.enumerated() {
            let order = aValues[index].sortOrder(bValues[index])
            if order != 0 { return key.ascending ? order < 0 : order > 0 }
        }
        return Self.keyPrecedes(a.objectID, b.objectID)
    }

    /// Saved objects by primary key, then new ones by insertion.
    static func keyPrecedes(_ a: ObjectID, _ b: ObjectID) -> Bool {
        switch (a.key, b.key) {
        case (.permanent(let x), .permanent(let y)): x < y
        case (.permanent, .temporary): true
        case (.temporary, .permanent): false
        case (.temporary(let x), .temporary(let y)): x < y
        }
    }
}
