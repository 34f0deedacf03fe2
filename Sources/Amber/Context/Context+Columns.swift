import AmberModel
import AmberValues

extension Context {
    /// Inserts one object of `entity` per row of `columns`, which hold the
    /// values of `attributes` column by column (`columns[i]` for
    /// `attributes[i]`, every column with the same number of rows): the
    /// column-wise form of ``insert(_:setting:to:relating:)``, for callers that keep
    /// their data in columns (C arrays, Python lists) and should not build a
    /// ``/AmberValues/Value`` per field themselves. Each new object is then
    /// pointed at its row's destinations in `related`, the inverses following.
    ///
    /// Each value is set with ``ManagedObject/setValue(_:for:)``, row by row,
    /// so every check of a single set applies (type, range, value class and
    /// struct size; an immediate encode policy encodes on set); destinations
    /// are checked as a set checks them before any object is made. All or
    /// nothing: if any value or destination is refused, no object of the batch stays.
    ///
    /// - Returns: the new objects, in row order.
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` for a
    ///   refused value, naming `Entity.attribute in row N` (0-based), or for
    ///   columns that do not fit (`attributes` and `columns` of different
    ///   counts, columns of different lengths, a null mask of another length,
    ///   custom bytes that are not whole strides); ``/AmberValues/AmberError/foreignAttribute(attribute:object:)``
    ///   for an attribute of another entity; ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``
    ///   naming the row, when an immediate encode fails; for a refused
    ///   destination, what ``insert(_:setting:to:relating:)`` throws.
    @discardableResult
    public func insert(_ entity: Entity, setting attributes: [Attribute], columns: [ColumnValues], relating related: [RelationshipColumn] = [])
        throws(AmberError) -> [ManagedObject]
    {
        guard !attributes.isEmpty || !related.isEmpty, attributes.count == columns.count else {
            throw .invalidValue(place: "\(entity.name) columns", expected: "one column per attribute (\(attributes.count))",
                                given: "\(columns.count) columns")
        }
        guard entity.index < model.entities.count, model.entities[entity.index] === entity else {
            throw .unknownEntity(name: "\(entity.name) (of another model)", suggestion: nil)
        }
        // The entity's own handles (a parent's handle names the inherited attribute).
        var attributes = attributes
        for (index, attribute) in attributes.enumerated() {
            guard let own = entity.own(attribute) else {
                throw entity.foreign(attribute, object: "an object of \(entity.name)")
            }
            if let derivation = own.derivation { throw ManagedObject.derived(own, derivation, .null) }
            attributes[index] = own
        }
        let rows = columns.first?.count ?? related.first?.rows.count ?? 0
        let relationships = try checked(related, of: entity, rows: rows)
        var classNames: [String?] = []
        classNames.reserveCapacity(columns.count)
        for (index, (attribute, column)) in zip(attributes, columns).enumerated() {
            classNames.append(try column.resolvedClassName(for: attribute, rows: rows, column: index))
        }
        undoStack?.enter()
        defer { undoStack?.leave() }
        var objects: [ManagedObject] = []
        objects.reserveCapacity(rows)
        for row in 0..<rows {
            let object = try insert(entity)
            objects.append(object)
            for index in 0..<attributes.count {
                do throws(AmberError) {
                    try object.setValue(columns[index].value(at: row, className: classNames[index]), for: attributes[index])
                } catch {
                    dropBatch(objects)
                    throw Self.naming(row, in: error)
                }
            }
        }
        try link(objects, to: related, through: relationships)
        return objects
    }

    /// `error` with its place followed by `in row N`, for the errors a set names a place in.
    static func naming(_ row: Int, in error: AmberError) -> AmberError {
        switch error {
        case .invalidValue(let place, let expected, let given):
            return .invalidValue(place: "\(place) in row \(row)", expected: expected, given: given)
        case .transformerFailed(let place, let transformer, let source, let message):
            return .transformerFailed(place: "\(place) in row \(row)", transformer: transformer, source: source, message: message)
        default:
            return error
        }
    }
}
