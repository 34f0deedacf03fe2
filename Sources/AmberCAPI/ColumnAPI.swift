import Amber
import AmberHeaders
import AmberTransformers
import Foundation

// amber_context_insert_columns: C arrays become ColumnValues and
// RelationshipColumns (the checks a pointer, a length and a byte need), and
// Context.insert(_:setting:columns:relating:) does the rest, as it does for Swift callers.

@c @implementation
public func amber_context_insert_columns(_ out_objects: UnsafeMutablePointer<OpaquePointer?>?, _ context: OpaquePointer?,
                                         _ entity: OpaquePointer?, _ columns: UnsafePointer<amber_column>?, _ column_count: Int,
                                         _ row_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper = try Handles.context(context)
        let entityWrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        let rows = try count(row_count, "row_count")
        let width = try count(column_count, "column_count")
        guard width > 0 else { throw CAPIError(AMBER_E_INVALID_VALUE, "column_count is 0", origin: "column_count") }
        guard let columns else { throw .null("columns") }
        // The array's stride is the callers' sizeof(amber_column), which the first column's size gives.
        let stride = UnsafeRawPointer(columns).loadUnaligned(as: Int.self)
        var attributes: [Attribute] = []
        var values: [ColumnValues] = []
        var related: [RelationshipColumn] = []
        attributes.reserveCapacity(width)
        values.reserveCapacity(width)
        for index in 0..<width {
            let element = UnsafeRawPointer(columns) + (index == 0 ? 0 : index * stride)
            let column = try sized(element.assumingMemoryBound(to: amber_column.self), "columns[\(index)]",
                                   initializer: "AMBER_COLUMN_INIT", minimum: columnMinimum, zero: amber_column())
            guard column.size == stride else {
                throw CAPIError(AMBER_E_INVALID_VALUE, "columns[\(index)]->size is \(column.size), columns[0]->size \(stride): "
                                + "every column of the array comes from one AMBER_COLUMN_INIT", origin: "columns[\(index)]")
            }
            if Int(column.type) == AMBER_COLUMN_OBJECTS {
                related.append(try relationshipColumn(column, index: index, rows: rows, entity: entityWrapper.entity))
                continue
            }
            let reader = try ColumnReader(column, index: index, rows: rows, entity: entityWrapper.entity)
            attributes.append(reader.attribute)
            values.append(try reader.values())
        }
        let objects = try core { () throws(AmberError) in
            try wrapper.context.insert(entityWrapper.entity, setting: attributes, columns: values, relating: related)
        }
        if let out_objects {
            wrapper.reserveHandles(objects.count)
            for (i, object) in objects.enumerated() { out_objects[i] = wrapper.handle(for: object) }
        }
    }
}

/// The size of amber_column before `relationship` was added: callers built against it still work.
private let columnMinimum = MemoryLayout<amber_column>.offset(of: \amber_column.relationship) ?? MemoryLayout<amber_column>.size

/// A column of AMBER_COLUMN_OBJECTS, checked and read into a
/// ``RelationshipColumn`` (the destinations' own checks are the context's).
private func relationshipColumn(_ column: amber_column, index: Int, rows: Int, entity: Entity) throws(CAPIError) -> RelationshipColumn {
    let parameter = "columns[\(index)]"
    let wrapper: CRelationship = try Handles.resolve(column.relationship, as: .relationship, "\(parameter).relationship")
    guard let relationship = entity.own(wrapper.relationship) else {
        throw CAPIError(AMBER_E_NOT_FOUND, "\(parameter).relationship is \(wrapper.relationship), not a relationship of \(entity.name)",
                        origin: wrapper.relationship.description)
    }
    func error(_ message: String) -> CAPIError {
        CAPIError(AMBER_E_INVALID_VALUE, "\(parameter) (\(relationship)): \(message)", origin: relationship.description)
    }
    guard column.attribute == nil else { throw error("attribute and relationship are both set; a column sets one") }
    guard column.element_size == 0, column.class_name == nil else { throw error("element_size and class_name do not apply to objects") }
    // Each row's member count: one handle per row for a to-one, `lengths` for a to-many.
    var counts: [Int] = []
    counts.reserveCapacity(rows)
    if relationship.isToMany {
        guard rows == 0 || column.lengths != nil else { throw .null("\(parameter).lengths") }
        for row in 0..<rows {
            let length = column.lengths.map { UnsafeRawPointer($0).loadUnaligned(fromByteOffset: row * MemoryLayout<Int>.stride, as: Int.self) } ?? 0
            guard length >= 0 else { throw error("lengths[\(row)] (\(UInt(bitPattern: length))) is not a member count") }
            counts.append(length)
        }
    } else {
        guard column.lengths == nil else { throw error("lengths is set, but a to-one column has one handle (or NULL) per row") }
        counts = Array(repeating: 1, count: rows)
    }
    var total = 0
    for count in counts {
        let (sum, overflow) = total.addingReportingOverflow(count)
        guard !overflow, sum <= Int(Int32.max) else { throw error("the member counts add up to too many handles") }
        total = sum
    }
    let bytes = total * MemoryLayout<OpaquePointer?>.stride
    if relationship.isToMany || column.data_size != 0 {
        let available = column.data_size < 0 ? Int.max : column.data_size  // a size_t beyond Int.max arrives negative
        guard bytes <= available else { throw error("data_size is \(available), but \(total) handles are \(bytes) bytes") }
    }
    guard total == 0 || column.data != nil else { throw .null("\(parameter).data") }
    let handles = column.data.map { UnsafeRawPointer($0) }
    var members: [[ManagedObject]] = []
    members.reserveCapacity(rows)
    var offset = 0
    for row in 0..<rows {
        defer { offset += counts[row] }
        var destinations: [ManagedObject] = []
        if column.nulls.map({ $0[row] != 0 }) ?? false {
            members.append(destinations)
            continue
        }
        for position in offset..<offset + counts[row] {
            let handle = handles?.loadUnaligned(fromByteOffset: position * MemoryLayout<OpaquePointer?>.stride, as: OpaquePointer?.self)
            let place = relationship.isToMany ? "\(parameter) row \(row) member \(position - offset)" : "\(parameter) row \(row)"
            guard let handle else {
                if relationship.isToMany { throw .null(place) }
                continue  // a to-one's NULL: no destination
            }
            destinations.append(try Handles.object(handle, place).object)
        }
        members.append(destinations)
    }
    return RelationshipColumn(relationship, members: members)
}

/// One caller column, checked and read into ``ColumnValues``.
private struct ColumnReader {
    let column: amber_column
    let index: Int
    let rows: Int
    let attribute: Attribute
    /// Which rows are nil (nil: none).
    let nulls: [Bool]?

    init(_ column: amber_column, index: Int, rows: Int, entity: Entity) throws(CAPIError) {
        self.column = column
        self.index = index
        self.rows = rows
        guard column.relationship == nil else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "columns[\(index)]: relationship is set, but the type is not AMBER_COLUMN_OBJECTS",
                            origin: "columns[\(index)]")
        }
        let wrapper: CAttribute = try Handles.resolve(column.attribute, as: .attribute, "columns[\(index)].attribute")
        guard let attribute = entity.own(wrapper.attribute) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "columns[\(index)].attribute is \(entity.describe(foreign: wrapper.attribute)), not an attribute of \(entity.name)",
                            origin: wrapper.attribute.description)
        }
        self.attribute = attribute
        if let flags = column.nulls, rows > 0 {
            nulls = UnsafeBufferPointer(start: flags, count: rows).map { $0 != 0 }
        } else {
            nulls = nil
        }
    }

    /// `columns[i] (Entity.attribute)`: how errors name the column.
    var place: String { "columns[\(index)] (\(attribute))" }

    func error(_ code: Int, _ message: String) -> CAPIError {
        CAPIError(code, "\(place): \(message)", origin: attribute.description)
    }

    func isNull(_ row: Int) -> Bool { nulls?[row] ?? false }

    func values() throws(CAPIError) -> ColumnValues {
        let type = Int(column.type)
        switch type {
        case AMBER_VALUE_BOOL:
            let bytes: [UInt8] = try fixed()
            for (row, byte) in bytes.enumerated() where byte > 1 && !isNull(row) {
                throw error(AMBER_E_INVALID_VALUE, "row \(row): a Boolean of \(byte) (0 or 1 expected)")
            }
            return .booleans(bytes.map { $0 == 1 }, nulls: nulls)
        case AMBER_VALUE_INT:
            return .integers(try fixed(), nulls: nulls)
        case AMBER_VALUE_DOUBLE:
            return .doubles(try fixed(), nulls: nulls)
        case AMBER_VALUE_FLOAT:
            return .floats(try fixed(), nulls: nulls)
        case AMBER_VALUE_DATE:
            let seconds: [Double] = try fixed()
            var dates: [Date] = []
            dates.reserveCapacity(rows)
            for (row, second) in seconds.enumerated() {
                do throws(CValueBridge.Problem) {
                    dates.append(isNull(row) ? Date(timeIntervalSince1970: 0) : try CValueBridge.date(secondsSince1970: second))
                } catch {
                    throw self.error(AMBER_E_INVALID_VALUE, "row \(row): \(error)")
                }
            }
            return .dates(dates, nulls: nulls)
        case AMBER_VALUE_UUID:
            let bytes = try data(elementSize: 16)
            let uuids = bytes.withUnsafeBytes { raw in
                (0..<rows).map { row in UUID(uuid: raw.loadUnaligned(fromByteOffset: row * 16, as: uuid_t.self)) }
            }
            return .uuids(uuids, nulls: nulls)
        case AMBER_VALUE_STRING:
            var strings: [String] = []
            strings.reserveCapacity(rows)
            try forEachElement { (row, bytes) throws(CAPIError) in
                if isNull(row) { strings.append(""); return }
                guard let text = String(exactUTF8: bytes) else { throw error(AMBER_E_INVALID_UTF8, "row \(row): the string is not valid UTF-8") }
                strings.append(text)
            }
            return .strings(strings, nulls: nulls)
        case AMBER_VALUE_BINARY:
            var blobs: [Data] = []
            blobs.reserveCapacity(rows)
            try forEachElement { (row, bytes) throws(CAPIError) in blobs.append(isNull(row) ? Data() : Data(bytes)) }
            return .binary(blobs, nulls: nulls)
        case AMBER_VALUE_DECIMAL, AMBER_VALUE_URI, AMBER_VALUE_OBJECT_ID, AMBER_VALUE_PLIST:
            // Read as an amber_value of that type is: one bridge for every C value.
            var items: [Value] = []
            items.reserveCapacity(rows)
            try forEachElement { (row, bytes) throws(CAPIError) in
                if isNull(row) { items.append(.null); return }
                var parts = CValueBridge.Parts(type: column.type)
                (parts.data, parts.length) = (bytes.baseAddress, bytes.count)
                do throws(CValueBridge.Problem) {
                    items.append(try CValueBridge.value(parts))
                } catch {
                    throw self.error(error.isUTF8 ? AMBER_E_INVALID_UTF8 : AMBER_E_INVALID_VALUE, "row \(row): \(error)")
                }
            }
            return .values(items, nulls: nulls)
        case AMBER_VALUE_CUSTOM:
            let className = try optionalName(column.class_name, "columns[\(index)].class_name")
            if column.element_size != 0 {
                guard column.lengths == nil else {
                    throw error(AMBER_E_INVALID_VALUE, "element_size (\(column.element_size)) and lengths are both set; give one")
                }
                let size = try count(column.element_size, "columns[\(index)].element_size")
                return .custom(className, stride: size, bytes: try data(elementSize: size), nulls: nulls)
            }
            var items: [Data] = []
            items.reserveCapacity(rows)
            try forEachElement { (row, bytes) throws(CAPIError) in items.append(isNull(row) ? Data() : Data(bytes)) }
            return .customValues(className, items, nulls: nulls)
        case AMBER_COLUMN_VALUES:
            guard rows == 0 || column.data != nil else { throw .null("columns[\(index)].data") }
            let given = column.data?.assumingMemoryBound(to: amber_value.self)
            var items: [Value] = []
            items.reserveCapacity(rows)
            for row in 0..<rows {
                items.append(isNull(row) ? .null : try CValue.read(given.map { $0 + row }, "\(place) row \(row)"))
            }
            return .values(items, nulls: nulls)
        default:
            throw error(AMBER_E_INVALID_VALUE, "type \(column.type) is not a column type (an AMBER_VALUE_* constant other than NULL, "
                        + "AMBER_COLUMN_VALUES, or AMBER_COLUMN_OBJECTS with a relationship)")
        }
    }

    /// The bytes of `rows` elements of `elementSize` each: `data_size`, when
    /// given, must hold them all.
    private func data(elementSize: Int) throws(CAPIError) -> Data {
        let (total, overflow) = rows.multipliedReportingOverflow(by: elementSize)
        guard !overflow, total <= Int(Int32.max) else {
            throw error(AMBER_E_INVALID_VALUE, "\(rows) rows of \(elementSize) bytes are too many bytes")
        }
        guard column.data_size == 0 || UInt(bitPattern: column.data_size) >= UInt(total) else {
            throw error(AMBER_E_INVALID_VALUE, "data_size is \(UInt(bitPattern: column.data_size)), but \(rows) rows of \(elementSize) bytes are \(total)")
        }
        guard column.lengths == nil else { throw error(AMBER_E_INVALID_VALUE, "lengths is set, but this column type has no lengths") }
        if total == 0 { return Data() }
        guard let pointer = column.data else { throw .null("columns[\(index)].data") }
        return Data(bytes: pointer, count: total)
    }

    /// `rows` scalars of type `T` (copied, so the caller's array need not be aligned).
    private func fixed<T>() throws(CAPIError) -> [T] {
        let bytes = try data(elementSize: MemoryLayout<T>.stride)
        return [T](unsafeUninitializedCapacity: rows) { buffer, initialized in
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress, let target = buffer.baseAddress {
                    UnsafeMutableRawPointer(target).copyMemory(from: base, byteCount: raw.count)
                }
            }
            initialized = rows
        }
    }

    /// Calls `body` with each row's bytes of a column with `lengths`, once
    /// they are known to fit in `data_size`.
    private func forEachElement(_ body: (Int, UnsafeRawBufferPointer) throws(CAPIError) -> Void) throws(CAPIError) {
        guard rows > 0 else { return }
        guard let lengths = column.lengths else { throw .null("columns[\(index)].lengths") }
        guard column.element_size == 0 || Int(column.type) == AMBER_VALUE_CUSTOM else {
            throw error(AMBER_E_INVALID_VALUE, "element_size is set, but this column type has lengths")
        }
        let available = column.data_size < 0 ? Int.max : column.data_size  // a size_t beyond Int.max arrives negative
        var sizes: [Int] = []
        sizes.reserveCapacity(rows)
        var total = 0
        for row in 0..<rows {
            let length = UnsafeRawPointer(lengths).loadUnaligned(fromByteOffset: row * MemoryLayout<Int>.stride, as: Int.self)
            guard length >= 0, length <= available - total else {
                throw error(AMBER_E_INVALID_VALUE, "lengths[\(row)] (\(UInt(bitPattern: length))) goes past data_size (\(available))")
            }
            total += length
            sizes.append(length)
        }
        guard total == 0 || column.data != nil else { throw .null("columns[\(index)].data") }
        var offset = 0
        for row in 0..<rows {
            try body(row, UnsafeRawBufferPointer(start: column.data.map { $0 + offset }, count: sizes[row]))
            offset += sizes[row]
        }
    }
}
