import Amber
import AmberHeaders
import Foundation

@c @implementation
public func amber_model_builder_add_template(_ builder: OpaquePointer?, _ spec: UnsafePointer<amber_template_spec>?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CBuilder = try Handles.resolve(builder, as: .builder, "builder")
        let (template, userInfo) = try request(spec)
        guard userInfo.isEmpty else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "spec->user_info_count: a template has no user info", origin: template.name)
        }
        wrapper.description.withLock { $0.templates.append(template) }
    }
}

@c @implementation
public func amber_model_builder_add_fetched_property(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                                                     _ spec: UnsafePointer<amber_template_spec>?) -> amber_status
{
    api { () throws(CAPIError) in
        let (described, userInfo) = try request(spec)
        let property = FetchedPropertyDescription(described.name, entity: described.entityName, where: described.predicate,
                                                  sortedBy: described.sortKeys, limit: described.limit, userInfo: userInfo)
        try withEntity(builder, entity) { entity in entity.fetchedProperties.append(property) }
    }
}

/// The size of amber_template_spec before its user info fields: a caller built then passes that much, and its user info reads as none.
private let templateSpecMinimum = MemoryLayout<amber_template_spec>.offset(of: \.user_info_keys) ?? MemoryLayout<amber_template_spec>.stride

/// The named request `spec` describes (a template's, or a fetched property's), and its user info.
private func request(_ spec: UnsafePointer<amber_template_spec>?) throws(CAPIError) -> (FetchTemplateDescription, [String: String]) {
    let spec = try sized(spec, "spec", initializer: "AMBER_TEMPLATE_SPEC_INIT", minimum: templateSpecMinimum, zero: amber_template_spec())
    let requestName = try name(spec.name, "spec->name")
    guard spec.limit >= 0, spec.limit <= Int64(Int32.max) else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "spec->limit is \(spec.limit); give a count, or 0 for none", origin: requestName)
    }
    var userInfo: [String: String] = [:]
    guard spec.user_info_count <= 4096 else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "spec->user_info_count is \(spec.user_info_count); a request takes at most 4096 entries", origin: requestName)
    }
    if spec.user_info_count > 0 {
        guard let keys = spec.user_info_keys else { throw .null("spec->user_info_keys") }
        guard let values = spec.user_info_values else { throw .null("spec->user_info_values") }
        for index in 0..<spec.user_info_count {
            userInfo[try name(keys[index], "spec->user_info_keys[\(index)]")] = try name(values[index], "spec->user_info_values[\(index)]")
        }
    }
    let described = FetchTemplateDescription(requestName, entity: try name(spec.entity, "spec->entity"),
                                             where: try optionalName(spec.predicate, "spec->predicate"),
                                             sortedBy: try sortKeys(spec.sort, spec.sort_count, "spec->sort"),
                                             limit: spec.limit > 0 ? Int(spec.limit) : nil)
    return (described, userInfo)
}

@c @implementation
public func amber_model_template_count(_ out: UnsafeMutablePointer<Int>?, _ model: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        result.pointee = wrapper.model.templates.count
    }
}

@c @implementation
public func amber_model_template_at(_ out: UnsafeMutablePointer<amber_template_spec>?,
                                    _ out_variables: UnsafeMutablePointer<UnsafePointer<UnsafePointer<CChar>?>?>?,
                                    _ out_variable_count: UnsafeMutablePointer<Int>?, _ model: OpaquePointer?, _ index: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        _ = try sized(UnsafePointer(result), "out", initializer: "AMBER_TEMPLATE_SPEC_INIT", minimum: templateSpecMinimum, zero: amber_template_spec())
        guard out_variables == nil || out_variable_count != nil else { throw .null("out_variable_count") }
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        let views = wrapper.templateViews
        guard index >= 0, index < views.count else {
            throw CAPIError(AMBER_E_NOT_FOUND, "the model has \(views.count) templates; index \(index) is past them", origin: "index")
        }
        let view = views[index]
        // Only as much as the caller's struct holds, keeping its size: a caller built before a field was added passes less.
        let given = UnsafeRawPointer(result).loadUnaligned(as: Int.self)
        withUnsafeBytes(of: view.spec) { spec in
            guard let base = spec.baseAddress else { return }
            let header = MemoryLayout<Int>.size
            UnsafeMutableRawPointer(result).advanced(by: header).copyMemory(from: base.advanced(by: header),
                                                                             byteCount: min(given, spec.count) - header)
        }
        out_variables?.pointee = UnsafePointer(view.variables)
        out_variable_count?.pointee = view.variableCount
    }
}

/// A template as C sees it: its spec and its variables' names, in memory
/// that lives as long as the model handle.
final class CTemplateView: @unchecked Sendable {
    let spec: amber_template_spec
    let variables: UnsafeMutablePointer<UnsafePointer<CChar>?>
    let variableCount: Int
    private let sort: UnsafeMutablePointer<amber_sort>

    init(_ template: FetchTemplate, strings: CStringPool) {
        sort = .allocate(capacity: max(1, template.sortKeys.count))
        for (i, key) in template.sortKeys.enumerated() {
            sort[i] = amber_sort(key: strings.cString(key.key), descending: key.ascending ? 0 : 1,
                                 case_insensitive: key.caseInsensitive ? 1 : 0)
        }
        let names = template.variables
        variables = .allocate(capacity: max(1, names.count))
        for (i, name) in names.enumerated() { variables[i] = strings.cString(name) }
        variableCount = names.count
        var spec = amber_template_spec()
        spec.size = MemoryLayout<amber_template_spec>.stride
        spec.name = strings.cString(template.name)
        spec.entity = strings.cString(template.entityName)
        spec.predicate = template.predicate.flatMap { strings.cString($0.format) }
        spec.sort = UnsafePointer(sort)
        spec.sort_count = template.sortKeys.count
        spec.limit = Int64(template.limit ?? 0)
        self.spec = spec
    }

    deinit {
        sort.deallocate()
        variables.deallocate()
    }
}

/// Sort keys from their C form.
func sortKeys(_ list: UnsafePointer<amber_sort>?, _ count: Int, _ parameter: String) throws(CAPIError) -> [SortKey] {
    let checked = try AmberCAPI.count(count, "\(parameter)_count")
    guard checked == 0 || list != nil else { throw .null(parameter) }
    var keys: [SortKey] = []
    for i in 0..<checked {
        guard let sort = list?[i] else { break }
        keys.append(SortKey(try name(sort.key, "\(parameter)[\(i)].key"), ascending: sort.descending == 0,
                            caseInsensitive: sort.case_insensitive != 0))
    }
    return keys
}
