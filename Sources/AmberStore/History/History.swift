import AmberModel
import AmberValues
import Foundation

/// A place in a store's history: every transaction after it is read by
/// ``Store/history(after:)``. Tokens are ordered within one store; a token
/// of another store is refused. Its text form, `UUID/sequence`, is what the
/// C API and Python pass around and what a program keeps between runs.
public struct HistoryToken: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The store the token belongs to.
    public let storeIdentifier: UUID
    /// The transaction's sequence number (0: before the first).
    public let sequence: Int64

    /// The token of transaction `sequence` of the store `storeIdentifier`.
    public init(storeIdentifier: UUID, sequence: Int64) {
        (self.storeIdentifier, self.sequence) = (storeIdentifier, sequence)
    }

    /// Reads the text form, `UUID/sequence`; nil for other text.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let uuid = UUID(uuidString: String(parts[0])), let sequence = Int64(parts[1]), sequence >= 0 else {
            return nil
        }
        self.init(storeIdentifier: uuid, sequence: sequence)
    }

    /// `UUID/sequence`.
    public var description: String { "\(storeIdentifier.uuidString)/\(sequence)" }

    /// Within one store, by sequence; tokens of different stores order by the store's UUID (an order, not a meaning).
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
        lhs.storeIdentifier == rhs.storeIdentifier ? lhs.sequence < rhs.sequence : lhs.storeIdentifier.uuidString < rhs.storeIdentifier.uuidString
    }
}

/// One transaction of a store's history: what one save (or one batch
/// change) wrote, who wrote it, and when.
public struct HistoryTransaction: Sendable {
    /// Where the transaction is in the history; read after it to get the later ones.
    public let token: HistoryToken
    /// When the transaction was written.
    public let timestamp: Date
    /// The author the writing context named (`Context.transactionAuthor`, module Amber), if any.
    public let author: String?
    /// The writing context's name (`Context.name`), if it had one.
    public let contextName: String?
    /// What the transaction changed, object by object.
    public let changes: [HistoryChange]
    /// Whether to-many links kept in join tables, or ordered positions, changed
    /// (they are not objects, so no ``HistoryChange`` lists them).
    public let relinked: Bool
    /// False for a transaction saved through a store opened with
    /// ``Store/Options/recordsHistory`` off: something was saved, but
    /// ``changes`` is empty because they were not recorded. A program keeping
    /// another system in step reads everything again after it.
    public let changesRecorded: Bool

    package init(token: HistoryToken, timestamp: Date, author: String?, contextName: String?, changes: [HistoryChange], relinked: Bool,
                 changesRecorded: Bool) {
        (self.token, self.timestamp, self.author, self.contextName) = (token, timestamp, author, contextName)
        (self.changes, self.relinked, self.changesRecorded) = (changes, relinked, changesRecorded)
    }
}

/// One object a transaction inserted, updated or deleted.
public struct HistoryChange: Sendable, Equatable {
    /// What happened to the object.
    public enum Kind: String, Sendable {
        case inserted, updated, deleted
    }

    public let kind: Kind
    /// The object's ID (for a deleted object, the ID it had: its entity and primary key).
    public let objectID: ObjectID
    /// For an update, the attributes and to-one relationships whose stored
    /// values changed (in the entity's order for a save; as a batch update
    /// set them); empty otherwise.
    public let changedKeys: [String]
    /// The row's version after the transaction (for a deletion, the version deleted).
    public let version: Int64

    package init(kind: Kind, objectID: ObjectID, changedKeys: [String], version: Int64) {
        (self.kind, self.objectID, self.changedKeys, self.version) = (kind, objectID, changedKeys, version)
    }

    /// The entity's name.
    public var entityName: String { objectID.entityName }
}
