import Foundation
import Synchronization

/// Identifies an object. Temporary from insert until the first successful
/// save; then permanent (entity + primary key) and stable for the object's life.
///
/// The URI form is `amber://<store UUID>/<Entity>/p<primary key>` for a
/// permanent ID and `…/t<number>` for a temporary one.
public struct ObjectID: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name.
    public let entityName: String
    /// The UUID of the store the object belongs to.
    public let storeIdentifier: UUID
    package let key: Key

    package enum Key: Hashable, Sendable {
        case temporary(UInt64)
        case permanent(Int64)
    }

    /// Whether the object has not been saved yet.
    public var isTemporary: Bool {
        if case .temporary = key { return true }
        return false
    }

    /// The primary key, once the object has been saved.
    public var primaryKey: Int64? {
        if case .permanent(let pk) = key { return pk }
        return nil
    }

    /// The URI form, to keep outside the program (it parses back with ``init(uri:)``).
    public var uriRepresentation: URL {
        // Entity names are ASCII identifiers and UUIDs are hex, so the text is always a valid URL.
        URL(string: description) ?? URL(fileURLWithPath: "/")
    }

    public var description: String {
        switch key {
        case .temporary(let n): "amber://\(storeIdentifier.uuidString)/\(entityName)/t\(n)"
        case .permanent(let pk): "amber://\(storeIdentifier.uuidString)/\(entityName)/p\(pk)"
        }
    }

    package init(entityName: String, store: UUID, key: Key) {
        self.entityName = entityName
        self.storeIdentifier = store
        self.key = key
    }

    /// Parses an ID from its URI form; nil if `uri` is not one.
    public init?(uri: URL) {
        guard uri.scheme == "amber", let host = uri.host, let store = UUID(uuidString: host) else { return nil }
        let parts = uri.path.split(separator: "/")
        guard parts.count == 2, let tag = parts[1].first else { return nil }
        let number = parts[1].dropFirst()
        switch tag {
        case "p": guard let pk = Int64(number) else { return nil }; key = .permanent(pk)
        case "t": guard let n = UInt64(number) else { return nil }; key = .temporary(n)
        default: return nil
        }
        entityName = String(parts[0])
        storeIdentifier = store
    }

    /// Temporary numbers are unique in the process, so IDs from two contexts never collide.
    private static let nextTemporary = Atomic<UInt64>(1)

    package static func temporary(entity: String, store: UUID) -> ObjectID {
        ObjectID(entityName: entity, store: store, key: .temporary(nextTemporary.add(1, ordering: .relaxed).oldValue))
    }
}
