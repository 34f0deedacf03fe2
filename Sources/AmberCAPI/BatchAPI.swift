import Amber
import AmberHeaders
import Foundation

/// A fetched batch: one array of values and one arena their pointers point
/// into, both freed with the batch; the object handle array, if asked for;
/// and the fetched objects, which stay in their context until the batch is
/// freed (so tearing them down is the free's cost, not the fetch's).
final class CBatch: @unchecked Sendable {
    let values: UnsafeMutablePointer<amber_value>?
    let arena: UnsafeMutableRawPointer?
    let handles: UnsafeMutablePointer<OpaquePointer?>?
    private let objects: [ManagedObject]
    /// The context the objects belong to: they leave it on its thread only.
    let context: CContext

    init(values: UnsafeMutablePointer<amber_value>?, arena: UnsafeMutableRawPointer?, handles: UnsafeMutablePointer<OpaquePointer?>?,
         objects: [ManagedObject], context: CContext)
    {
        self.values = values
        self.arena = arena
        self.handles = handles
        self.objects = objects
        self.context = context
    }

    deinit {
        free(values)
        free(arena)
        free(handles)
    }
}

/// Lays values out as borrowed views: scalars in place, every byte they point
/// to appended to one arena. Pointers are set once the arena has its final
/// address, so it can grow while rows are added.
private struct BatchWriter {
    var values: [amber_value] = []
    var arena: [UInt8] = []
    /// Per value with bytes: its index, the arena offset and count of its bytes, and the offset of its class name (or -1).
    var fixups: [(value: Int, bytes: Int, length: Int, className: Int)] = []
    /// Each custom class's name in the arena, by name.
    private var classNames: [String: Int] = [:]
    /// The last class name looked up and its offset: a column of one class needs no hashing per value.
    private var lastClassName: (name: String, offset: Int)?

    mutating func append(_ value: Value) throws(CAPIError) {
        var c = amber_value()
        switch try CValue.form(value) {
        case .inPlace(let complete):
            c = complete
        case .text(let type, let text):
            c.type = type
            appendText(text)
        case .bytes(let data):
            c.type = Int32(AMBER_VALUE_BINARY)
            let offset = arena.count
            data.withUnsafeBytes { arena.append(contentsOf: $0) }
            fixups.append((values.count, offset, data.count, -1))
        case .custom(let custom):
            c.type = Int32(AMBER_VALUE_CUSTOM)
            let offset = arena.count
            custom.withUnsafeBytes { arena.append(contentsOf: $0) }
            fixups.append((values.count, offset, custom.count, classNameOffset(custom.className)))
        }
        values.append(c)
    }

    /// Where the NUL-terminated `className` is in the arena: written once per class, shared by its values.
    private mutating func classNameOffset(_ className: String) -> Int {
        if let last = lastClassName, last.name == className { return last.offset }
        if let known = classNames[className] {
            lastClassName = (className, known)
            return known
        }
        let offset = arena.count
        var name = className
        name.withUTF8 { arena.append(contentsOf: $0) }
        arena.append(0)
        classNames[className] = offset
        lastClassName = (className, offset)
        return offset
    }

    /// Text's UTF-8 bytes and a NUL (as amber_object_get gives them), for the value about to be appended.
    private mutating func appendText(_ text: String) {
        var text = text
        let offset = arena.count
        let length = text.withUTF8 { utf8 in
            arena.append(contentsOf: utf8)
            return utf8.count
        }
        arena.append(0)
        fixups.append((values.count, offset, length, -1))
    }

    /// The values and the arena in malloc'd memory, pointers set.
    func finish() throws(CAPIError) -> (UnsafeMutablePointer<amber_value>?, UnsafeMutableRawPointer?) {
        let arenaMemory = arena.isEmpty ? nil : malloc(arena.count)
        let valueMemory = values.isEmpty ? nil : malloc(values.count * MemoryLayout<amber_value>.stride)?
            .assumingMemoryBound(to: amber_value.self)
        guard (arena.isEmpty || arenaMemory != nil), (values.isEmpty || valueMemory != nil) else {
            free(arenaMemory)
            free(valueMemory)
            throw CAPIError(AMBER_E_INTERNAL, "out of memory")
        }
        if let arenaMemory {
            arena.withUnsafeBytes { bytes in
                if let source = bytes.baseAddress { arenaMemory.copyMemory(from: source, byteCount: bytes.count) }
            }
        }
        if let valueMemory {
            values.withUnsafeBufferPointer { buffer in
                if let source = buffer.baseAddress { valueMemory.initialize(from: source, count: buffer.count) }
            }
            // Every fixup has bytes in the arena (at least a NUL or a class name), so it exists.
            let base = UnsafeRawPointer(arenaMemory)
            for fixup in fixups {
                let data = base.map { $0 + fixup.bytes }
                if fixup.className >= 0 {
                    valueMemory[fixup.value].v.custom.class_name = base.map { ($0 + fixup.className).assumingMemoryBound(to: CChar.self) }
                    valueMemory[fixup.value].v.custom.data = data
                    valueMemory[fixup.value].v.custom.length = fixup.length
                } else {
                    valueMemory[fixup.value].v.bytes.data = data
                    valueMemory[fixup.value].v.bytes.length = fixup.length
                }
            }
        }
        return (valueMemory, arenaMemory)
    }
}

@c @implementation
public func amber_context_fetch_batch(_ out: UnsafeMutablePointer<OpaquePointer?>?,
                                      _ out_values: UnsafeMutablePointer<UnsafePointer<amber_value>?>?,
                                      _ out_objects: UnsafeMutablePointer<UnsafePointer<OpaquePointer?>?>?,
                                      _ out_count: UnsafeMutablePointer<Int>?, _ context: OpaquePointer?,
                                      _ request: UnsafePointer<amber_fetch_request>?, _ attributes: UnsafePointer<OpaquePointer?>?,
                                      _ attribute_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let batchOut = try require(out, "out"), valuesOut = try require(out_values, "out_values")
        let countOut = try require(out_count, "out_count")
        let (wrapper, objects, list) = try fetchWithAttributes(context, request, attributes, attribute_count)
        var writer = BatchWriter()
        writer.values.reserveCapacity(objects.count * list.count)
        for object in objects {
            for attribute in list {
                try writer.append(try core { () throws(AmberError) in try object.value(for: attribute) })
            }
        }
        let (values, arena) = try writer.finish()
        var handles: UnsafeMutablePointer<OpaquePointer?>?
        if out_objects != nil {
            do throws(CAPIError) {
                handles = try handleArray(objects, wrapper)
            } catch {
                free(values)
                free(arena)
                throw error
            }
        }
        let batch = CBatch(values: values, arena: arena, handles: handles, objects: objects, context: wrapper)
        batchOut.pointee = Handles.make(batch, kind: .batch)
        valuesOut.pointee = UnsafePointer(values)
        out_objects?.pointee = UnsafePointer(handles)
        countOut.pointee = objects.count
    }
}

@c @implementation
public func amber_batch_free(_ batch: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let target: CBatch = try Handles.resolve(batch, as: .batch, "batch")
        try target.context.checkThread("batch", freeing: true)
        try target.context.thread.freeing { () throws(CAPIError) in try Handles.release(batch, as: .batch, "batch") }
    }
}
