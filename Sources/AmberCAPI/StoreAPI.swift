import Amber
import AmberHeaders
import Foundation

@c @implementation
public func amber_store_open(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ path: UnsafePointer<CChar>?,
                             _ model: OpaquePointer?) -> amber_status
{
    amber_store_open_with_options(out, path, model, nil)
}

@c @implementation
public func amber_store_open_with_options(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ path: UnsafePointer<CChar>?,
                                          _ model: OpaquePointer?, _ options: UnsafePointer<amber_store_options>?) -> amber_status
{
    openStore(out, model, options) { (model, settings) throws(CAPIError) in
        let file = try optionalName(path, "path")
        return try core { () throws(AmberError) in
            if let file, file != ":memory:" { return try Store(path: file, model: model, options: settings) }
            return try Store.inMemory(model: model, options: settings)
        }
    }
}

@c @implementation
public func amber_store_open_url(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ url: UnsafePointer<CChar>?,
                                 _ model: OpaquePointer?, _ options: UnsafePointer<amber_store_options>?) -> amber_status
{
    openStore(out, model, options) { (model, settings) throws(CAPIError) in
        let text = try name(url, "url")
        return try core { () throws(AmberError) in try Store(url: text, model: model, options: settings) }
    }
}

/// Opens a store with a caller's model and options as `open` says, and hands out its handle.
private func openStore(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ model: OpaquePointer?, _ options: UnsafePointer<amber_store_options>?,
                       _ open: (Model, Store.Options) throws(CAPIError) -> Store) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        let store = try open(wrapper.model, try storeOptions(options))
        result.pointee = Handles.make(CStore(store, model: wrapper), kind: .store)
    }
}

/// Reads a caller's amber_store_options (NULL: the defaults).
private func storeOptions(_ options: UnsafePointer<amber_store_options>?) throws(CAPIError) -> Store.Options {
    guard options != nil else { return Store.Options() }
    let published = MemoryLayout<amber_store_options>.offset(of: \amber_store_options.busy_timeout_ms).map { $0 + MemoryLayout<Int64>.size } ?? 0
    // Fields a caller compiled before them does not send keep AMBER_STORE_OPTIONS_INIT's defaults.
    let defaults = amber_store_options(size: 0, busy_timeout_ms: 5000, migrate: 1, backup: 1, progress: nil, progress_context: nil,
                                       durability: AMBER_DURABILITY_NORMAL, history: 1, allow_data_removal: 0)
    let given = try sized(options, "options", initializer: "AMBER_STORE_OPTIONS_INIT", minimum: published, zero: defaults)
    guard given.busy_timeout_ms >= 0 else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "options->busy_timeout_ms is \(given.busy_timeout_ms); expected 0 or more",
                        origin: "options->busy_timeout_ms")
    }
    var settings = Store.Options(busyTimeout: .milliseconds(given.busy_timeout_ms))
    settings.migratesStore = given.migrate != 0
    settings.backsUpBeforeMigrating = given.backup != 0
    settings.recordsHistory = given.history != 0
    settings.allowsDataRemoval = given.allow_data_removal != 0
    switch given.durability {
    case AMBER_DURABILITY_NORMAL: settings.durability = .normal
    case AMBER_DURABILITY_FULL: settings.durability = .full
    default:
        throw CAPIError(AMBER_E_INVALID_VALUE,
                        "options->durability is \(given.durability); expected AMBER_DURABILITY_NORMAL (0) or AMBER_DURABILITY_FULL (1)",
                        origin: "options->durability")
    }
    if let progress = given.progress {
        let context = UncheckedPointer(given.progress_context)
        settings.migrationProgress = { step in
            let answer = step.step.withCString { progress(context.pointer, $0, UInt64(step.completed), UInt64(step.total)) }
            if answer != 0 { throw CAPIError(AMBER_E_MIGRATION_FAILED, "the progress callback returned \(answer)") }
        }
    }
    return settings
}

/// A caller's context pointer, handed back to its callback on the thread that gave it.
private struct UncheckedPointer: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
    init(_ pointer: UnsafeMutableRawPointer?) { self.pointer = pointer }
}

@c @implementation
public func amber_store_migration_plan(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                                       _ path: UnsafePointer<CChar>?, _ model: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), count = try require(out_count, "out_count")
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        let store = try name(path, "path")
        try giveLines(try core { () throws(AmberError) in
            // A postgresql:// URL names a store on a server; anything else is a file's path, as before.
            if let url = try? StoreURL(store), case .postgresql = url.kind { return try Store.migrationPlan(for: url, to: wrapper.model) }
            return try Store.migrationPlan(forStoreAt: store, to: wrapper.model)
        }, result, count)
    }
}

@c @implementation
public func amber_store_open_existing(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ out_model: UnsafeMutablePointer<OpaquePointer?>?,
                                      _ path: UnsafePointer<CChar>?, _ registry: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let file = try name(path, "path")
        let target = try Handles.registry(registry)
        let store = try core { () throws(AmberError) in try Store(openingExisting: file, registry: target) }
        let model = CModel(store.model)
        result.pointee = Handles.make(CStore(store, model: model), kind: .store)
        out_model?.pointee = Handles.make(model, kind: .model)
    }
}

@c @implementation
public func amber_store_import_coredata(_ out_objects: UnsafeMutablePointer<Int64>?, _ source: UnsafePointer<CChar>?,
                                        _ destination: UnsafePointer<CChar>?, _ model: OpaquePointer?, _ registry: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let from = try name(source, "source"), to = try name(destination, "destination")
        let target = try Handles.registry(registry)
        let given: Model? = try model.map { (handle) throws(CAPIError) -> Model in
            let wrapper: CModel = try Handles.resolve(handle, as: .model, "model")
            return wrapper.model
        }
        let counts = try core { () throws(AmberError) in try Store.importCoreDataStore(at: from, into: to, model: given, registry: target) }
        out_objects?.pointee = Int64(counts.values.reduce(0, +))
    }
}

@c @implementation
public func amber_store_close(_ store: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        // The handle goes either way; a log the disk would not take is reported after.
        var refused: AmberError?
        do throws(AmberError) { try wrapper.store.foldLog() } catch { refused = error }
        try Handles.release(store, as: .store, "store")
        if let refused { throw CAPIError(refused) }
    }
}

// MARK: Maintenance

@c @implementation
public func amber_store_check(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                              _ store: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), count = try require(out_count, "out_count")
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        try giveLines(try core { () throws(AmberError) in try wrapper.store.checkIntegrity() }, result, count)
    }
}

@c @implementation
public func amber_store_check_file(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                                   _ path: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), count = try require(out_count, "out_count")
        let file = try name(path, "path")
        try giveLines(try core { () throws(AmberError) in try Store.checkIntegrity(ofStoreAt: file) }, result, count)
    }
}

/// Hands `lines` to a C caller as one malloc'd text separated by '\n', and their count.
private func giveLines(_ lines: [String], _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                       _ count: UnsafeMutablePointer<Int>) throws(CAPIError)
{
    out.pointee = try mallocString(lines.joined(separator: "\n")).0
    count.pointee = lines.count
}

@c @implementation
public func amber_store_backup(_ store: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        let file = try name(path, "path")
        try core { () throws(AmberError) in try wrapper.store.backup(to: file) }
    }
}

@c @implementation
public func amber_store_vacuum(_ store: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        try core { () throws(AmberError) in try wrapper.store.vacuum() }
    }
}

@c @implementation
public func amber_store_checkpoint(_ store: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        try core { () throws(AmberError) in try wrapper.store.checkpoint() }
    }
}

// MARK: Contexts

@c @implementation
public func amber_context_new(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ store: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CStore = try Handles.resolve(store, as: .store, "store")
        let context = CContext(Context(store: wrapper.store), store: wrapper)
        let handle = Handles.make(context, kind: .context, owner: context.owner)
        context.handle = handle
        result.pointee = handle
    }
}

@c @implementation
public func amber_context_free(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.contextToFree(context)
        try wrapper.thread.freeing { () throws(CAPIError) in
            wrapper.releaseObjectHandles()
            try Handles.release(context, as: .context, "context")
        }
    }
}

@c @implementation
public func amber_context_insert(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ context: OpaquePointer?,
                                 _ entity: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper = try Handles.context(context)
        let entityWrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        let object = try core { () throws(AmberError) in try wrapper.context.insert(entityWrapper.entity) }
        result.pointee = wrapper.handle(for: object)
    }
}

/// Attribute handles from a C array, checked to belong to `entity`.
/// The shared start of the fetches that return values: the context, the
/// fetched objects, and the attribute handles checked against the request's entity.
func fetchWithAttributes(_ context: OpaquePointer?, _ request: UnsafePointer<amber_fetch_request>?,
                         _ attributes: UnsafePointer<OpaquePointer?>?, _ attributeCount: Int)
    throws(CAPIError) -> (CContext, [ManagedObject], [Attribute])
{
    let wrapper = try Handles.context(context)
    let fetch = try fetchRequest(request, model: wrapper.context.model)
    let entity = try core { () throws(AmberError) in try wrapper.context.model.entity(named: fetch.entityName) }
    let list = try attributeList(attributes, attributeCount, of: entity)
    return (wrapper, try core { () throws(AmberError) in try wrapper.context.fetch(fetch) }, list)
}

private func attributeList(_ attributes: UnsafePointer<OpaquePointer?>?, _ attributeCount: Int, of entity: Entity) throws(CAPIError) -> [Attribute] {
    let checked = try count(attributeCount, "attribute_count")
    guard checked > 0 else { throw CAPIError(AMBER_E_INVALID_VALUE, "attribute_count is 0", origin: "attribute_count") }
    guard let attributes else { throw .null("attributes") }
    var result: [Attribute] = []
    for i in 0..<checked {
        let wrapper: CAttribute = try Handles.resolve(attributes[i], as: .attribute, "attributes[\(i)]")
        guard entity.attributes.indices.contains(wrapper.attribute.slot), entity.attributes[wrapper.attribute.slot] === wrapper.attribute else {
            throw CAPIError(AMBER_E_NOT_FOUND, "attributes[\(i)] is \(entity.describe(foreign: wrapper.attribute)), not an attribute of \(entity.name)",
                            origin: wrapper.attribute.description)
        }
        result.append(wrapper.attribute)
    }
    return result
}

@c @implementation
public func amber_context_insert_many(_ out_objects: UnsafeMutablePointer<OpaquePointer?>?, _ context: OpaquePointer?,
                                      _ entity: OpaquePointer?, _ attributes: UnsafePointer<OpaquePointer?>?, _ attribute_count: Int,
                                      _ values: UnsafePointer<amber_value>?, _ row_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let entityWrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        let list = try attributeList(attributes, attribute_count, of: entityWrapper.entity)
        let (total, overflow) = list.count.multipliedReportingOverflow(by: try count(row_count, "row_count"))
        guard !overflow, total <= Int(Int32.max) else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "row_count \(row_count) × attribute_count \(attribute_count) is too many values",
                            origin: "row_count")
        }
        guard total == 0 || values != nil else { throw .null("values") }
        var converted: [Value] = []
        converted.reserveCapacity(total)
        for i in 0..<total {
            converted.append(try CValue.read(values.map { $0 + i }, "values[\(i)] (row \(i / attribute_count), \(list[i % attribute_count]))"))
        }
        let objects = try core { () throws(AmberError) in try wrapper.context.insert(entityWrapper.entity, setting: list, to: converted) }
        if let out_objects {
            for (i, object) in objects.enumerated() { out_objects[i] = wrapper.handle(for: object) }
        }
    }
}

@c @implementation
public func amber_context_fetch_values(_ out_objects: UnsafeMutablePointer<UnsafeMutablePointer<OpaquePointer?>?>?,
                                       _ out_values: UnsafeMutablePointer<UnsafeMutablePointer<amber_value>?>?,
                                       _ out_count: UnsafeMutablePointer<Int>?, _ context: OpaquePointer?,
                                       _ request: UnsafePointer<amber_fetch_request>?, _ attributes: UnsafePointer<OpaquePointer?>?,
                                       _ attribute_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let objectsOut = try require(out_objects, "out_objects"), valuesOut = try require(out_values, "out_values")
        let countOut = try require(out_count, "out_count")
        let (wrapper, objects, list) = try fetchWithAttributes(context, request, attributes, attribute_count)
        let total = objects.count * list.count
        var values: UnsafeMutablePointer<amber_value>?
        if total > 0 {
            guard let buffer = calloc(total, MemoryLayout<amber_value>.stride)?.assumingMemoryBound(to: amber_value.self) else {
                throw CAPIError(AMBER_E_INTERNAL, "out of memory")
            }
            values = buffer
            do throws(CAPIError) {
                for (row, object) in objects.enumerated() {
                    for (column, attribute) in list.enumerated() {
                        let value = try core { () throws(AmberError) in try object.value(for: attribute) }
                        try CValue.write(value, to: buffer + (row * list.count + column))
                    }
                }
            } catch {
                // calloc zeroed the rest, so releasing every slot is safe.
                for i in 0..<total { CValue.release(buffer + i) }
                free(buffer)
                throw error
            }
        }
        let handles: UnsafeMutablePointer<OpaquePointer?>?
        do throws(CAPIError) {
            handles = try handleArray(objects, wrapper)
        } catch {
            if let values { for i in 0..<total { CValue.release(values + i) }; free(values) }
            throw error
        }
        objectsOut.pointee = handles
        valuesOut.pointee = values
        countOut.pointee = objects.count
    }
}

@c @implementation
public func amber_context_delete(_ context: OpaquePointer?, _ object: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let target = try Handles.object(object)
        try core { () throws(AmberError) in try wrapper.context.delete(target.object) }
    }
}

/// A fetch request from its C form, for a context over `model` (whose templates it may name).
/// The request a C caller gave; with `needsEntity` false (a filter in memory) it may name no entity.
func fetchRequest(_ request: UnsafePointer<amber_fetch_request>?, model: Model, needsEntity: Bool = true) throws(CAPIError) -> FetchRequest {
    // The struct as ABI 1 published it ends with `offset`: later fields are optional.
    let published = (MemoryLayout<amber_fetch_request>.offset(of: \amber_fetch_request.offset) ?? 0) + MemoryLayout<Int64>.size
    let request = try sized(request, "request", initializer: "AMBER_FETCH_REQUEST_INIT", minimum: published,
                            zero: amber_fetch_request())
    let templateName = try optionalName(request.template_name, "request->template_name")
    let entity = try optionalName(request.entity, "request->entity")
    let arguments = try values(request.arguments, request.argument_count, "request->arguments", count: "request->argument_count")
    let sortKeys = try sortKeys(request.sort, request.sort_count, "request->sort")
    let predicate = try optionalName(request.predicate, "request->predicate")
    let prefetch = try names(request.prefetch, request.prefetch_count, "request->prefetch")
    let variableValues = try values(request.variable_values, request.variable_count, "request->variable_values",
                                    count: "request->variable_count")
    let variableNames = try names(request.variable_names, request.variable_count, "request->variable_names")
    var variables: [String: Value] = [:]
    for (name, value) in zip(variableNames, variableValues) {
        guard variables.updateValue(value, forKey: name) == nil else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "request->variable_names: $\(name) is given twice", origin: "$\(name)")
        }
    }
    var fetch: FetchRequest
    if let templateName {
        guard predicate == nil, arguments.isEmpty else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "request->predicate and request->arguments must be unset with a template: "
                + "template \(templateName) brings its own predicate", origin: "request->template_name")
        }
        fetch = try core { () throws(AmberError) in try model.fetchRequest(fromTemplate: templateName, substituting: variables) }
        if let entity, entity != fetch.entityName {
            throw CAPIError(AMBER_E_INVALID_VALUE, "request->entity is \(entity), but template \(templateName) fetches \(fetch.entityName)",
                            origin: "request->entity")
        }
        if !sortKeys.isEmpty { fetch.sortKeys = sortKeys }
        if request.limit > 0 { fetch.limit = Int(request.limit) }
    } else {
        guard let entity = entity ?? (needsEntity ? nil : "") else { throw .null("request->entity") }
        let parsed = try core { () throws(AmberError) in
            try FetchPredicate.substituting(variables, into: predicate.map { (text) throws(AmberError) in try FetchPredicate(text, arguments: arguments) },
                                            owner: "the request")
        }
        fetch = FetchRequest(entity, predicate: parsed, sortedBy: sortKeys, limit: request.limit > 0 ? Int(request.limit) : nil)
    }
    fetch.offset = Int(max(0, request.offset))
    fetch.prefetchKeyPaths = prefetch
    fetch.includesSubentities = request.exclude_subentities == 0
    fetch.includesPendingChanges = request.exclude_pending_changes == 0
    return fetch
}

/// `count` values from their C form; `parameter` and `countName` name the two fields in errors.
private func values(_ list: UnsafePointer<amber_value>?, _ count: Int, _ parameter: String, count countName: String) throws(CAPIError) -> [Value] {
    let checked = try AmberCAPI.count(count, countName)
    guard checked == 0 || list != nil else { throw .null(parameter) }
    var result: [Value] = []
    for i in 0..<checked { result.append(try CValue.read(list.map { $0 + i }, "\(parameter)[\(i)]")) }
    return result
}

/// A malloc'd array of the handles of `objects` (NULL when empty).
func handleArray(_ objects: [ManagedObject], _ context: CContext) throws(CAPIError) -> UnsafeMutablePointer<OpaquePointer?>? {
    guard !objects.isEmpty else { return nil }
    guard let array = malloc(objects.count * MemoryLayout<OpaquePointer?>.stride)?.assumingMemoryBound(to: OpaquePointer?.self) else {
        throw CAPIError(AMBER_E_INTERNAL, "out of memory")
    }
    context.reserveHandles(objects.count)
    for (i, object) in objects.enumerated() { array[i] = context.handle(for: object) }
    return array
}

@c @implementation
public func amber_context_fetch(_ out_objects: UnsafeMutablePointer<UnsafeMutablePointer<OpaquePointer?>?>?,
                                _ out_count: UnsafeMutablePointer<Int>?, _ context: OpaquePointer?,
                                _ request: UnsafePointer<amber_fetch_request>?) -> amber_status
{
    api { () throws(CAPIError) in
        let objectsOut = try require(out_objects, "out_objects"), countOut = try require(out_count, "out_count")
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request, model: wrapper.context.model)
        let objects = try core { () throws(AmberError) in try wrapper.context.fetch(fetch) }
        objectsOut.pointee = try handleArray(objects, wrapper)
        countOut.pointee = objects.count
    }
}

@c @implementation
public func amber_context_count(_ out: UnsafeMutablePointer<Int64>?, _ context: OpaquePointer?,
                                _ request: UnsafePointer<amber_fetch_request>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request, model: wrapper.context.model)
        result.pointee = Int64(try core { () throws(AmberError) in try wrapper.context.count(fetch) })
    }
}

@c @implementation
public func amber_context_filter(_ out_objects: UnsafeMutablePointer<UnsafeMutablePointer<OpaquePointer?>?>?,
                                 _ out_count: UnsafeMutablePointer<Int>?, _ context: OpaquePointer?,
                                 _ objects: UnsafePointer<OpaquePointer?>?, _ object_count: Int,
                                 _ request: UnsafePointer<amber_fetch_request>?) -> amber_status
{
    api { () throws(CAPIError) in
        let objectsOut = try require(out_objects, "out_objects"), countOut = try require(out_count, "out_count")
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request, model: wrapper.context.model, needsEntity: false)
        let total = try count(object_count, "object_count")
        guard total == 0 || objects != nil else { throw .null("objects") }
        var given: [ManagedObject] = []
        given.reserveCapacity(total)
        for index in 0..<total {
            guard let handle = objects?[index] else { throw .null("objects[\(index)]") }
            given.append(try Handles.object(handle, "objects[\(index)]").object)
        }
        let filtered = try core { () throws(AmberError) in
            try wrapper.context.filter(given, matching: fetch.predicate, sortedBy: fetch.sortKeys)
        }
        let window = Array(filtered[fetch.window(over: filtered.count)])
        objectsOut.pointee = try handleArray(window, wrapper)
        countOut.pointee = window.count
    }
}

@c @implementation
public func amber_context_save(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        try core { () throws(AmberError) in try wrapper.context.save() }
    }
}

@c @implementation
public func amber_context_rollback(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in try Handles.context(context).context.rollback() }
}

@c @implementation
public func amber_context_merge_saved_changes(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        try core { () throws(AmberError) in try wrapper.context.mergeSavedChanges() }
    }
}

@c @implementation
public func amber_context_wait_for_saved_changes(_ out_changed: UnsafeMutablePointer<Int32>?, _ context: OpaquePointer?,
                                                 _ timeout_ms: Int64) -> amber_status {
    api { () throws(CAPIError) in
        let changed = try require(out_changed, "out_changed")
        let wrapper = try Handles.context(context)
        guard timeout_ms >= 0 else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "timeout_ms is \(timeout_ms); expected 0 or more", origin: "timeout_ms")
        }
        let saved = try core { () throws(AmberError) in try wrapper.context.waitForSavedChanges(timeout: .milliseconds(timeout_ms)) }
        changed.pointee = saved ? 1 : 0
    }
}

@c @implementation
public func amber_context_refresh(_ context: OpaquePointer?, _ object: OpaquePointer?, _ merge_changes: Int32) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let target = try Handles.object(object)
        let keep = try flag(merge_changes, "merge_changes")
        try core { () throws(AmberError) in try wrapper.context.refresh(target.object, mergeChanges: keep) }
    }
}

@c @implementation
public func amber_context_set_automatic_merging(_ context: OpaquePointer?, _ enabled: Int32) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        wrapper.context.automaticallyMergesChanges = try flag(enabled, "enabled")
    }
}

/// The C numbers of the merge policies, in the order of `AMBER_MERGE_ERROR`… in amber.h.
private let mergePolicies: [MergePolicy] = [.error, .storeWins, .objectWins, .overwrite]

@c @implementation
public func amber_context_set_merge_policy(_ context: OpaquePointer?, _ policy: Int32) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        guard mergePolicies.indices.contains(Int(policy)) else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "policy is \(policy); expected an AMBER_MERGE_ value (0 to \(mergePolicies.count - 1))",
                            origin: "policy")
        }
        wrapper.context.mergePolicy = mergePolicies[Int(policy)]
    }
}

@c @implementation
public func amber_context_merge_policy(_ out: UnsafeMutablePointer<Int32>?, _ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        result.pointee = Int32(mergePolicies.firstIndex(of: try Handles.context(context).context.mergePolicy) ?? 0)
    }
}

// MARK: Undo and redo

@c @implementation
public func amber_context_enable_undo(_ context: OpaquePointer?, _ levels_limit: Int64) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        guard levels_limit >= 0, levels_limit <= Int64(Int32.max) else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "levels_limit is \(levels_limit); expected 0 (no limit) or a positive count",
                            origin: "levels_limit")
        }
        wrapper.context.undoStack = UndoStack(levelsLimit: Int(levels_limit))
    }
}

@c @implementation
public func amber_context_disable_undo(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in try Handles.context(context).context.undoStack = nil }
}

@c @implementation
public func amber_context_undo(_ out_done: UnsafeMutablePointer<Int32>?, _ context: OpaquePointer?) -> amber_status {
    replaying(out_done, context) { (context) throws(AmberError) in try context.undo() }
}

@c @implementation
public func amber_context_redo(_ out_done: UnsafeMutablePointer<Int32>?, _ context: OpaquePointer?) -> amber_status {
    replaying(out_done, context) { (context) throws(AmberError) in try context.redo() }
}

/// Undo or redo (`body`) on `context`, reporting in `out_done` whether it did anything.
private func replaying(_ out_done: UnsafeMutablePointer<Int32>?, _ context: OpaquePointer?,
                       _ body: (Context) throws(AmberError) -> Bool) -> amber_status
{
    api { () throws(CAPIError) in
        let done = try require(out_done, "out_done")
        let wrapper = try Handles.context(context)
        done.pointee = try core { () throws(AmberError) in try body(wrapper.context) } ? 1 : 0
    }
}

@c @implementation
public func amber_context_begin_undo_group(_ context: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        let stack = try undoStack(of: context)
        stack.beginGroup(named: try optionalName(name, "name"))
    }
}

@c @implementation
public func amber_context_end_undo_group(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        guard try undoStack(of: context).endGroup() else {
            throw CAPIError(AMBER_E_UNAVAILABLE, "no undo group is open", origin: "context")
        }
    }
}

@c @implementation
public func amber_context_undo_state(_ out_can_undo: UnsafeMutablePointer<Int32>?, _ out_can_redo: UnsafeMutablePointer<Int32>?,
                                     _ context: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let stack = try Handles.context(context).context.undoStack
        out_can_undo?.pointee = stack?.canUndo == true ? 1 : 0
        out_can_redo?.pointee = stack?.canRedo == true ? 1 : 0
    }
}

@c @implementation
public func amber_context_undo_action_name(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ context: OpaquePointer?,
                                           _ redo: Int32) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let stack = try Handles.context(context).context.undoStack
        let name = try flag(redo, "redo") ? stack?.redoActionName : stack?.undoActionName
        result.pointee = try name.map { (name) throws(CAPIError) in try mallocString(name).0 }
    }
}

/// The undo stack of a context, which must have one.
private func undoStack(of context: OpaquePointer?) throws(CAPIError) -> UndoStack {
    guard let stack = try Handles.context(context).context.undoStack else {
        throw CAPIError(AMBER_E_UNAVAILABLE, "undo is not enabled for this context (amber_context_enable_undo)", origin: "context")
    }
    return stack
}

/// A C Boolean argument: 0 or 1, anything else refused.
private func flag(_ value: Int32, _ parameter: String) throws(CAPIError) -> Bool {
    guard value == 0 || value == 1 else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "\(parameter) is \(value); expected 0 or 1", origin: parameter)
    }
    return value == 1
}

@c @implementation
public func amber_context_has_changes(_ out: UnsafeMutablePointer<Int32>?, _ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        result.pointee = try Handles.context(context).context.hasChanges ? 1 : 0
    }
}

@c @implementation
public func amber_context_pending_objects(_ out_objects: UnsafeMutablePointer<UnsafeMutablePointer<OpaquePointer?>?>?,
                                          _ out_count: UnsafeMutablePointer<Int>?, _ context: OpaquePointer?,
                                          _ kind: Int32) -> amber_status
{
    api { () throws(CAPIError) in
        let objectsOut = try require(out_objects, "out_objects"), countOut = try require(out_count, "out_count")
        let wrapper = try Handles.context(context)
        let objects: [ManagedObject]
        switch Int(kind) {
        case AMBER_PENDING_INSERTED: objects = wrapper.context.insertedObjects
        case AMBER_PENDING_UPDATED: objects = wrapper.context.updatedObjects
        case AMBER_PENDING_DELETED: objects = wrapper.context.deletedObjects
        default: throw CAPIError(AMBER_E_INVALID_VALUE, "kind: \(kind) is not an AMBER_PENDING_* constant", origin: "kind")
        }
        objectsOut.pointee = try handleArray(objects, wrapper)
        countOut.pointee = objects.count
    }
}

@c @implementation
public func amber_context_object_with_uri(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ context: OpaquePointer?,
                                          _ uri: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper = try Handles.context(context)
        let text = try name(uri, "uri")
        guard let url = Value.exactURI(text), let id = ObjectID(uri: url) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "\"\(text)\" is not an object ID URI", origin: text)
        }
        let object = try core { () throws(AmberError) in try wrapper.context.object(with: id) }
        result.pointee = wrapper.handle(for: object)
    }
}
