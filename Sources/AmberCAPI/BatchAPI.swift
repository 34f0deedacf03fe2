import Amber
import AmberHeaders
import Foundation

/// A fetched batch: one array of values and one arena their pointers point
/// into, both freed with the batch; and the object handle array, if asked for.
final class CBatch: @unchecked Sendable {
    let values: UnsafeMutablePointer<amber_value>?
    let arena: UnsafeMutableRawPointer?
    let handles: UnsafeMutablePointer<OpaquePointer?>?

    init(values: UnsafeMutablePointer<amber_value>?, arena: UnsafeMutableRawPointer?, handles: UnsafeMutablePointer<OpaquePointer?>?) {
        self.values = values
        self.arena = arena
        self.handles = handles
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

    mutating func append(_ value: Value) throws(CAPIError) {
        var c = amber_value()
        func bytes(_ type: Int, _ data: some Collection<UInt8>, className: String? = nil) {
            c.type = Int32(type)
            let offset = arena.count
            arena.append(contentsOf: data)
            var classOffset = -1
            if let className {
                classOffset = arena.count
                arena.append(contentsOf: className.utf8)
                arena.append(0)
            }
            // Text is NUL-terminated too, as amber_object_get's is.
            if className == nil && type != AMBER_VALUE_BINARY { arena.append(0) }
            fixups.append((values.count, offset, data.count, classOffset))
        }
        switch value {
        case .null: c.type = Int32(AMBER_VALUE_NULL)
        case .bool(let b): c.type = Int32(AMBER_VALUE_BOOL); c.v.boolean = b ? 1 : 0
        case .int(let i): c.type = Int32(AMBER_VALUE_INT); c.v.integer = i
        case .double(let d): c.type = Int32(AMBER_VALUE_DOUBLE); c.v.real = d
        case .float(let f): c.type = Int32(AMBER_VALUE_FLOAT); c.v.real32 = f
        case .date(let d): c.type = Int32(AMBER_VALUE_DATE); c.v.date = d.timeIntervalSince1970
        case .uuid(let u):
            c.type = Int32(AMBER_VALUE_UUID)
            withUnsafeBytes(of: u.uuid) { raw in withUnsafeMutableBytes(of: &c.v.uuid) { $0.copyMemory(from: raw) } }
        case .string(let s): bytes(AMBER_VALUE_STRING, s.utf8)
        case .binary(let d): bytes(AMBER_VALUE_BINARY, d)
        case .decimal(let d): bytes(AMBER_VALUE_DECIMAL, d.description.utf8)
        case .uri(let u): bytes(AMBER_VALUE_URI, u.absoluteString.utf8)
        case .objectID(let id): bytes(AMBER_VALUE_OBJECT_ID, id.uriRepresentation.absoluteString.utf8)
        case .custom(let custom): bytes(AMBER_VALUE_CUSTOM, custom.bytes, className: custom.className)
        case .array, .dictionary:
            bytes(AMBER_VALUE_PLIST, try core { () throws(AmberError) in try value.propertyListJSON() }.utf8)
        }
        values.append(c)
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
        let wrapper = try Handles.context(context)
        let fetch = try fetchRequest(request)
        let entity = try core { () throws(AmberError) in try wrapper.context.model.entity(named: fetch.entityName) }
        let list = try attributeList(attributes, attribute_count, of: entity)
        let objects = try core { () throws(AmberError) in try wrapper.context.fetch(fetch) }
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
        batchOut.pointee = Handles.make(CBatch(values: values, arena: arena, handles: handles), kind: .batch)
        valuesOut.pointee = UnsafePointer(values)
        out_objects?.pointee = UnsafePointer(handles)
        countOut.pointee = objects.count
    }
}

@c @implementation
public func amber_batch_free(_ batch: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in try Handles.release(batch, as: .batch, "batch") }
}
