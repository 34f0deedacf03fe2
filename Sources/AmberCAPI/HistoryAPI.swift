import Amber
import AmberHeaders
import Foundation

@c @implementation
public func amber_store_history_token(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ store: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        let token = try core { () throws(AmberError) in try wrapper.store.lastHistoryToken() }
        result.pointee = try mallocString(token.description).0
    }
}

@c @implementation
public func amber_store_history(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                                _ store: OpaquePointer?, _ after_token: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), count = try require(out_count, "out_count")
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        let after = try token(after_token, "after_token")
        let transactions = try core { () throws(AmberError) in try wrapper.store.history(after: after) }
        result.pointee = try mallocString(JSONValue.array(transactions.map(json)).text()).0
        count.pointee = transactions.count
    }
}

@c @implementation
public func amber_store_purge_history(_ store: OpaquePointer?, _ through_token: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        guard let through = try token(through_token, "through_token") else { throw .null("through_token") }
        try core { () throws(AmberError) in try wrapper.store.purgeHistory(through: through) }
    }
}

@c @implementation
public func amber_context_set_names(_ context: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ author: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let (contextName, authorName) = (try optionalName(name, "name"), try optionalName(author, "author"))
        wrapper.context.name = contextName
        wrapper.context.transactionAuthor = authorName
    }
}

/// The token a caller passed as text (NULL: none).
private func token(_ pointer: UnsafePointer<CChar>?, _ parameter: String) throws(CAPIError) -> HistoryToken? {
    guard let text = try optionalName(pointer, parameter) else { return nil }
    guard let token = HistoryToken(text) else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "\(parameter) is \"\(text)\"; expected a history token, \"UUID/sequence\"", origin: parameter)
    }
    return token
}

/// One transaction as amber.h documents it.
private func json(_ transaction: HistoryTransaction) -> JSONValue {
    func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    let changes = transaction.changes.map { change -> JSONValue in
        .object(["kind": .string(change.kind.rawValue), "entity": .string(change.entityName), "key": .int(change.objectID.primaryKey ?? 0),
                 "object": .string(change.objectID.uriRepresentation.absoluteString), "keys": .array(change.changedKeys.map(JSONValue.string)),
                 "version": .int(change.version)])
    }
    return .object(["token": .string(transaction.token.description), "timestamp": .double(transaction.timestamp.timeIntervalSinceReferenceDate),
                     "author": text(transaction.author), "context": text(transaction.contextName), "relinked": .bool(transaction.relinked),
                     "recorded": .bool(transaction.changesRecorded), "changes": .array(changes)])
}
