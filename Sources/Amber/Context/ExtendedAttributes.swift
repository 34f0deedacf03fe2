import AmberModel
import AmberValues

/// Extended attributes: keys an extensible entity's objects take at run time
/// without the model naming them (``EntityDescription/isExtensible``).
///
/// They behave like attributes: a set is checked (the key, and that the value
/// reads back exactly), tracked per key (``ManagedObject/changedValues()``,
/// ``ManagedObject/committedValues()``, observers), undone and redone per key,
/// and merged per key when another context's save or a refresh brings in
/// other keys. Setting null removes a key. They are stored together in the
/// entity's `_extra` JSON column (see `ExtendedValues`), so fetches can test
/// and sort by them (`shelf == 'B2'`) with no migration.
extension ManagedObject {
    /// The value of extended attribute `key`: null if the object has none.
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownAttribute(entity:name:suggestion:)`` if
    ///   the entity is not extensible; ``/AmberValues/AmberError/invalidValue(place:expected:given:)``
    ///   if `key` is not a valid name or clashes with a modelled attribute or
    ///   relationship, or if the stored extended attributes cannot be read.
    public func value(forExtendedKey key: String) throws(AmberError) -> Value {
        try ExtendedValues.checkKey(key, of: entity)
        return try extendedValues()[key] ?? .null
    }

    /// Sets extended attribute `key` to `value`; null removes it. The value
    /// may be a property-list value (null, Boolean, integer, Double, Float,
    /// string, binary, date, UUID, and arrays and dictionaries of these), a
    /// decimal or a URI; it reads back exactly, or is refused. On error
    /// nothing changes.
    ///
    /// - Throws: as ``value(forExtendedKey:)``;
    ///   ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming
    ///   `Entity.key` for a value that cannot be stored exactly (an object
    ///   ID, a custom value, nesting deeper than `ExtendedValues.maximumDepth`);
    ///   ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` for a deleted object.
    public func setValue(_ value: Value, forExtendedKey key: String) throws(AmberError) {
        try ExtendedValues.checkKey(key, of: entity)
        guard !deletedFlag, !isDetached else {
            throw .objectUnavailable(objectID, reason: deletedFlag ? "the object is deleted" : Self.noContext)
        }
        try ExtendedValues.check(value, place: "\(entity.name).\(key)")
        guard let slot = entity.extraSlot else { return }
        var all = try extendedValues()
        let old = all[key] ?? .null
        if value.isNull { all.removeValue(forKey: key) } else { all[key] = value }
        try beginChange()
        owner.undoStack?.record(.extended(self, key, old))
        let stored = ExtendedValues.encode(all)
        values[slot] = stored
        // The next set or read of this object starts from these values, not from decoding them again.
        if case .string(let text) = stored { owner.lastExtendedValues = (text, all) }
        if !insertedFlag { changedSlots.insert(slot) }
        edits &+= 1
        if !isPending { owner.track(self) }
    }

    /// The object's extended attributes, by key (empty for an entity that is not extensible).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` if the
    ///   stored extended attributes cannot be read (written by another tool).
    public func extendedValues() throws(AmberError) -> [String: Value] {
        guard let slot = entity.extraSlot else { return [:] }
        if isFault { try fire() }
        return try extendedValues(in: slotValue(slot))
    }

    /// The keys of the object's extended attributes, sorted.
    ///
    /// - Throws: as ``extendedValues()``.
    public func extendedKeys() throws(AmberError) -> [String] {
        try extendedValues().keys.sorted()
    }

    /// The extended attributes in stored form `stored`. The context keeps the
    /// last form it read, so reading several keys of one object reads its JSON once.
    func extendedValues(in stored: Value) throws(AmberError) -> [String: Value] {
        if stored.isNull { return [:] }
        // A detached object's context may be gone: it reads without the cache.
        // Compared byte for byte: String's == takes canonically equivalent text as equal.
        if !isDetached, case .string(let text) = stored, let last = owner.lastExtendedValues, last.text.utf8.elementsEqual(text.utf8) {
            return last.values
        }
        let values = try ExtendedValues.decode(stored, place: "\(entity.name).\(ExtendedValues.columnName) of \(objectID)")
        if !isDetached, case .string(let text) = stored { owner.lastExtendedValues = (text, values) }
        return values
    }

    /// The extended attributes that differ from the committed ones (every
    /// one of a new object), with null for those removed here.
    func changedExtendedValues(slot: Int) -> [String: Value] {
        // Both forms were read when the object changed, so they can be read now.
        guard let current = try? extendedValues(in: values[slot]) else { return [:] }
        if insertedFlag { return current }
        guard let committed, committed[slot] != values[slot], let before = try? extendedValues(in: committed[slot]) else { return [:] }
        return Dictionary(uniqueKeysWithValues: ExtendedValues.differingKeys(before, current).map { ($0, current[$0] ?? .null) })
    }
}
