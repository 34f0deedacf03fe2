import Amber
import AmberHeaders
import Foundation

/// A C callback and its userdata, whose `userdata_free` runs exactly once:
/// when the last reference goes (the observer or live query was removed or
/// freed, its context was freed, or registering it failed).
final class CCallback<Function> {
    let function: Function
    let userdata: UnsafeMutableRawPointer?
    private let free: amber_userdata_free_fn?

    init(_ function: Function, _ userdata: UnsafeMutableRawPointer?, _ free: amber_userdata_free_fn?) {
        (self.function, self.userdata, self.free) = (function, userdata, free)
    }

    deinit { free?(userdata) }
}

/// A nonzero return from a C callback.
struct CallbackFailed: Error, CustomStringConvertible {
    let status: Int32
    var description: String { "the callback returned \(status)" }
}

/// A change report handed to C: the report, its context, and the keys as C strings.
final class CChanges {
    let report: ChangeReport
    /// Weak: a report the caller keeps must not keep a freed context's handles alive.
    private weak var context: CContext?
    let thread: OwnerThread
    /// Passed to an observer (released when it returns), not the caller's to free.
    let isBorrowed: Bool
    /// Per update (in `updated`, then `refreshed`), its keys as NUL-terminated strings.
    private var keys: [UnsafeMutablePointer<UnsafePointer<CChar>?>?] = []

    init(_ report: ChangeReport, context: CContext, borrowed: Bool) {
        (self.report, self.context, self.thread, self.isBorrowed) = (report, context, context.thread, borrowed)
        for update in report.updated + report.refreshed {
            let array = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(update.keys.count, 1))
            for (index, key) in update.keys.enumerated() { array[index] = UnsafePointer(strdup(key)) }
            keys.append(array)
        }
    }

    deinit {
        for (array, update) in zip(keys, report.updated + report.refreshed) {
            for index in update.keys.indices { free(UnsafeMutablePointer(mutating: array?[index])) }
            array?.deallocate()
        }
    }

    func objects(_ list: Int32) throws(CAPIError) -> [ManagedObject] {
        switch Int(list) {
        case AMBER_CHANGES_INSERTED: report.inserted
        case AMBER_CHANGES_UPDATED: report.updated.map(\.object)
        case AMBER_CHANGES_DELETED: report.deleted
        case AMBER_CHANGES_REFRESHED: report.refreshed.map(\.object)
        default: throw CAPIError(AMBER_E_INVALID_VALUE, "list: \(list) is not an AMBER_CHANGES_* constant", origin: "list")
        }
    }

    /// The keys of update `index` of `list`, if it is a list with keys.
    func keys(_ list: Int32, _ index: Int) -> (UnsafeMutablePointer<UnsafePointer<CChar>?>?, Int)? {
        switch Int(list) {
        case AMBER_CHANGES_UPDATED: (keys[index], report.updated[index].keys.count)
        case AMBER_CHANGES_REFRESHED: (keys[report.updated.count + index], report.refreshed[index].keys.count)
        default: nil
        }
    }

    /// Calls `body` with a handle of this report, valid only during the call.
    func lend<R>(_ body: (OpaquePointer?) -> R) -> R {
        let handle = Handles.make(self, kind: .changes, owner: thread.token)
        defer { Handles.releaseUnchecked([handle]) }
        return body(handle)
    }

    /// The context, for object handles.
    func liveContext() throws(CAPIError) -> CContext {
        guard let context else { throw contextFreed("changes") }
        return context
    }
}

/// A live query handed to C, with its context and callback.
final class CLiveQuery {
    let query: LiveQuery
    /// Weak: freeing the context must free it, and its object handles.
    private weak var context: CContext?
    let thread: OwnerThread
    var handle: OpaquePointer?

    init(_ query: LiveQuery, context: CContext) {
        (self.query, self.context, self.thread) = (query, context, context.thread)
    }

    /// The context, for object handles.
    func liveContext() throws(CAPIError) -> CContext {
        guard let context else { throw contextFreed("query") }
        return context
    }
}

private func contextFreed(_ parameter: String) -> CAPIError {
    CAPIError(AMBER_E_UNAVAILABLE, "\(parameter): its context was freed", origin: parameter)
}

extension Handles {
    /// A report handle, on its context's thread (`freeing`: or any once that thread has ended).
    static func changes(_ handle: OpaquePointer?, freeing: Bool = false) throws(CAPIError) -> CChanges {
        let changes: CChanges = try resolve(handle, as: .changes, "changes")
        try changes.thread.check("changes", freeing: freeing)
        return changes
    }

    /// A live query handle, on its context's thread (`freeing`: or any once that thread has ended).
    static func liveQuery(_ handle: OpaquePointer?, freeing: Bool = false) throws(CAPIError) -> CLiveQuery {
        let query: CLiveQuery = try resolve(handle, as: .liveQuery, "query")
        try query.thread.check("query", freeing: freeing)
        return query
    }
}

// MARK: - Observers

@c @implementation
public func amber_context_add_observer(_ out_token: UnsafeMutablePointer<UInt64>?, _ context: OpaquePointer?,
                                       _ fn: amber_observer_fn?, _ userdata: UnsafeMutableRawPointer?,
                                       _ userdata_free: amber_userdata_free_fn?) -> amber_status
{
    // Made first: if anything below fails, releasing it runs userdata_free.
    let callback = CCallback(fn, userdata, userdata_free)
    return api { () throws(CAPIError) in
        let tokenOut = try require(out_token, "out_token")
        guard let function = callback.function else { throw CAPIError.null("fn") }
        let wrapper = try Handles.context(context)
        let token = wrapper.context.addObserver { [weak wrapper] report in
            guard let wrapper else { return }
            let status = CChanges(report, context: wrapper, borrowed: true).lend { function($0, callback.userdata) }
            if status != 0 { throw CallbackFailed(status: status) }
        }
        tokenOut.pointee = token.rawValue
    }
}

@c @implementation
public func amber_context_remove_observer(_ context: OpaquePointer?, _ token: UInt64) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        guard wrapper.context.removeObserver(ObserverToken(rawValue: token)) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "observer \(token): no such observer (removed already?)", origin: "token")
        }
    }
}

@c @implementation
public func amber_context_pending_changes(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper = try Handles.context(context)
        result.pointee = Handles.make(CChanges(wrapper.context.pendingChanges, context: wrapper, borrowed: false),
                                      kind: .changes, owner: wrapper.owner)
    }
}

@c @implementation
public func amber_changes_event(_ out_event: UnsafeMutablePointer<Int32>?, _ changes: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out_event, "out_event")
        let report = try Handles.changes(changes).report
        result.pointee = switch report.event {
        case .saved: Int32(AMBER_EVENT_SAVED)
        case .merged: Int32(AMBER_EVENT_MERGED)
        case .refreshed: Int32(AMBER_EVENT_REFRESHED)
        case .pending: Int32(AMBER_EVENT_PENDING)
        }
    }
}

@c @implementation
public func amber_changes_count(_ out_count: UnsafeMutablePointer<Int>?, _ changes: OpaquePointer?, _ list: Int32) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out_count, "out_count")
        result.pointee = try Handles.changes(changes).objects(list).count
    }
}

@c @implementation
public func amber_changes_object(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ changes: OpaquePointer?, _ list: Int32,
                                 _ index: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let report = try Handles.changes(changes)
        let objects = try report.objects(list)
        guard objects.indices.contains(index) else { throw outOfRange(index, objects.count) }
        result.pointee = try report.liveContext().handle(for: objects[index])
    }
}

@c @implementation
public func amber_changes_keys(_ out_keys: UnsafeMutablePointer<UnsafePointer<UnsafePointer<CChar>?>?>?,
                               _ out_count: UnsafeMutablePointer<Int>?, _ changes: OpaquePointer?, _ list: Int32,
                               _ index: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let keysOut = try require(out_keys, "out_keys"), countOut = try require(out_count, "out_count")
        let report = try Handles.changes(changes)
        let objects = try report.objects(list)
        guard objects.indices.contains(index) else { throw outOfRange(index, objects.count) }
        let (keys, count) = report.keys(list, index) ?? (nil, 0)
        keysOut.pointee = count == 0 ? nil : UnsafePointer(keys)
        countOut.pointee = count
    }
}

@c @implementation
public func amber_changes_free(_ changes: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let report = try Handles.changes(changes, freeing: true)
        guard !report.isBorrowed else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "changes: a report passed to an observer belongs to its context; it is released when the observer returns",
                            origin: "changes")
        }
        try report.thread.freeing { () throws(CAPIError) in try Handles.release(changes, as: .changes, "changes") }
    }
}

private func outOfRange(_ index: Int, _ count: Int) -> CAPIError {
    CAPIError(AMBER_E_INVALID_VALUE, "index: \(index) is out of range (\(count) objects)", origin: "index")
}

// MARK: - Live queries

@c @implementation
public func amber_live_query_new(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ context: OpaquePointer?,
                                 _ request: UnsafePointer<amber_fetch_request>?, _ options: UnsafePointer<amber_live_query_options>?,
                                 _ fn: amber_live_query_fn?, _ userdata: UnsafeMutableRawPointer?,
                                 _ userdata_free: amber_userdata_free_fn?) -> amber_status
{
    let callback = CCallback(fn, userdata, userdata_free)
    return api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request, model: wrapper.context.model)
        var sectionKey: String?, unit: LiveQuery.DateUnit?
        if let options {
            guard options.pointee.size >= MemoryLayout<amber_live_query_options>.size else {
                throw CAPIError(AMBER_E_INVALID_VALUE, "options->size: \(options.pointee.size) is not sizeof(amber_live_query_options); use AMBER_LIVE_QUERY_OPTIONS_INIT",
                                origin: "options->size")
            }
            sectionKey = try optionalName(options.pointee.section_key, "options->section_key")
            switch Int(options.pointee.section_unit) {
            case AMBER_UNIT_NONE: unit = nil
            case AMBER_UNIT_YEAR: unit = .year
            case AMBER_UNIT_MONTH: unit = .month
            case AMBER_UNIT_DAY: unit = .day
            default:
                throw CAPIError(AMBER_E_INVALID_VALUE, "options->section_unit: \(options.pointee.section_unit) is not an AMBER_UNIT_* constant",
                                origin: "options->section_unit")
            }
        }
        let query = try core { () throws(AmberError) in try LiveQuery(fetch, in: wrapper.context, sectionKey: sectionKey, by: unit) }
        let live = CLiveQuery(query, context: wrapper)
        if let function = callback.function {
            query.onChange = { [weak live] changes in
                guard let live else { return }
                let list = indexChanges(changes)
                let status = list.withUnsafeBufferPointer { function(live.handle, $0.baseAddress, $0.count, callback.userdata) }
                if status != 0 { throw CallbackFailed(status: status) }
            }
        } else {
            // Held until the live query goes, so userdata_free runs then.
            query.onChange = { _ in withExtendedLifetime(callback) {} }
        }
        live.handle = Handles.make(live, kind: .liveQuery, owner: wrapper.owner)
        result.pointee = live.handle
    }
}

/// `changes` as C index changes, in the order they are applied.
private func indexChanges(_ changes: LiveQuery.Changes) -> [amber_index_change] {
    func change(_ kind: Int, from old: LiveQuery.Position? = nil, to new: LiveQuery.Position? = nil) -> amber_index_change {
        amber_index_change(kind: Int32(kind), old_section: Int64(old?.section ?? -1), old_row: Int64(old?.row ?? -1),
                           new_section: Int64(new?.section ?? -1), new_row: Int64(new?.row ?? -1))
    }
    var list: [amber_index_change] = []
    list += changes.deletedSections.map { change(AMBER_INDEX_SECTION_DELETE, from: LiveQuery.Position(section: $0, row: -1)) }
    list += changes.insertedSections.map { change(AMBER_INDEX_SECTION_INSERT, to: LiveQuery.Position(section: $0, row: -1)) }
    list += changes.deleted.map { change(AMBER_INDEX_DELETE, from: $0) }
    list += changes.inserted.map { change(AMBER_INDEX_INSERT, to: $0) }
    list += changes.moved.map { change(AMBER_INDEX_MOVE, from: $0.from, to: $0.to) }
    list += changes.updated.map { change(AMBER_INDEX_UPDATE, to: $0) }
    return list
}

@c @implementation
public func amber_live_query_count(_ out_count: UnsafeMutablePointer<Int>?, _ out_sections: UnsafeMutablePointer<Int>?,
                                   _ query: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out_count, "out_count")
        let live = try Handles.liveQuery(query)
        result.pointee = live.query.count
        out_sections?.pointee = live.query.sections.count
    }
}

@c @implementation
public func amber_live_query_object(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ query: OpaquePointer?, _ section: Int64,
                                    _ index: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let live = try Handles.liveQuery(query)
        let object = section < 0 ? live.query.object(at: index) : live.query.object(at: LiveQuery.Position(section: Int(section), row: index))
        guard let object else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "section \(section), index \(index): no such result", origin: "index")
        }
        result.pointee = try live.liveContext().handle(for: object)
    }
}

@c @implementation
public func amber_live_query_section(_ out_start: UnsafeMutablePointer<Int>?, _ out_count: UnsafeMutablePointer<Int>?,
                                     _ out_value: UnsafeMutablePointer<amber_value>?, _ query: OpaquePointer?,
                                     _ section: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let sections = try Handles.liveQuery(query).query.sections
        guard sections.indices.contains(section) else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "section: \(section) is out of range (\(sections.count) sections)", origin: "section")
        }
        if let out_value { try CValue.write(sections[section].value, to: out_value) }
        out_start?.pointee = sections[section].range.lowerBound
        out_count?.pointee = sections[section].range.count
    }
}

@c @implementation
public func amber_live_query_refetch(_ query: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let live = try Handles.liveQuery(query)
        try core { () throws(AmberError) in try live.query.refetch() }
    }
}

@c @implementation
public func amber_context_process_pending_changes(_ context: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        try core { () throws(AmberError) in try wrapper.context.processPendingChanges() }
    }
}

@c @implementation
public func amber_live_query_free(_ query: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let live = try Handles.liveQuery(query, freeing: true)
        try live.thread.freeing { () throws(CAPIError) in
            live.query.onChange = nil
            try Handles.release(query, as: .liveQuery, "query")
        }
    }
}
