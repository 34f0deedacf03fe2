import Amber
import AmberHeaders
import Foundation

@c @implementation
public func amber_context_batch_update(_ out_ids: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                                       _ context: OpaquePointer?, _ request: UnsafePointer<amber_fetch_request>?,
                                       _ assignments: UnsafePointer<amber_batch_assignment>?, _ assignment_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request, model: wrapper.context.model)
        guard assignment_count > 0, let assignments else {
            throw assignment_count > 0 ? .null("assignments")
                : CAPIError(AMBER_E_INVALID_VALUE, "assignment_count is 0; a batch update sets at least one attribute", origin: "assignment_count")
        }
        let entity = try core { () throws(AmberError) in try wrapper.context.model.entity(named: fetch.entityName) }
        /// The attribute a handle names, if it is one of the request's entity (its own or inherited).
        func attribute(_ handle: OpaquePointer?, _ parameter: String) throws(CAPIError) -> CAttribute {
            let found: CAttribute = try Handles.resolve(handle, as: .attribute, parameter)
            guard entity.attributes.indices.contains(found.attribute.slot), entity.attributes[found.attribute.slot] === found.attribute else {
                throw CAPIError(AMBER_E_NOT_FOUND, "\(parameter) is \(entity.describe(foreign: found.attribute)), not an attribute of \(entity.name)",
                                origin: found.attribute.description)
            }
            return found
        }
        var pairs: [(String, BatchValue)] = []
        for index in 0..<assignment_count {
            let given = assignments[index], place = "assignments[\(index)]"
            let target = try attribute(given.attribute, "\(place).attribute")
            let source = given.source == nil ? nil : try attribute(given.source, "\(place).source")
            let left = BatchValue.attribute(source?.attribute.name ?? target.attribute.name)
            let value: BatchValue
            switch given.operation {
            case Int32(AMBER_BATCH_SET.rawValue): value = .value(try constant(given, target))
            case Int32(AMBER_BATCH_COPY.rawValue):
                guard let source else { throw .null("\(place).source") }
                value = .attribute(source.attribute.name)
            case Int32(AMBER_BATCH_ADD.rawValue): value = left + .value(try constant(given, target))
            case Int32(AMBER_BATCH_SUBTRACT.rawValue): value = left - .value(try constant(given, target))
            case Int32(AMBER_BATCH_MULTIPLY.rawValue): value = left * .value(try constant(given, target))
            default:
                throw CAPIError(AMBER_E_INVALID_VALUE, "\(place).operation is \(given.operation); expected an amber_batch_operation (0 to 4)",
                                origin: "\(place).operation")
            }
            pairs.append((target.attribute.name, value))
        }
        var observerFailure: AmberError?
        let result = try core { () throws(AmberError) in try wrapper.context.batchUpdate(fetch, setting: pairs, observerFailure: &observerFailure) }
        try give(result, out_ids, out_count, observerFailure)
    }
}

@c @implementation
public func amber_context_batch_delete(_ out_ids: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                                       _ context: OpaquePointer?, _ request: UnsafePointer<amber_fetch_request>?) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request, model: wrapper.context.model)
        var observerFailure: AmberError?
        let result = try core { () throws(AmberError) in try wrapper.context.batchDelete(fetch, observerFailure: &observerFailure) }
        try give(result, out_ids, out_count, observerFailure)
    }
}

/// The value of an assignment, as amber_object_set reads one; errors name the attribute it is for.
private func constant(_ assignment: amber_batch_assignment, _ target: CAttribute) throws(CAPIError) -> Value {
    var value = assignment.value
    return try CValue.read(&value, target.attribute.description)
}

/// Hands a batch's object IDs to a C caller (their count, and their URIs
/// separated by '\n'), then reports an observer's failure: the batch is written either way.
private func give(_ result: BatchResult, _ ids: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                  _ count: UnsafeMutablePointer<Int>?, _ observerFailure: AmberError?) throws(CAPIError)
{
    if let ids { ids.pointee = try mallocString(result.objectIDs.map(\.uriRepresentation.absoluteString).joined(separator: "\n")).0 }
    count?.pointee = result.objectIDs.count
    if let observerFailure { throw CAPIError(observerFailure) }
}
