import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// An object of an entity, owned by one ``Context``.
///
/// A fetched object reads its values from the fetch's compact rows until it
/// first changes; then it gets its own slot array, indexed by
/// ``/AmberModel/Attribute/slot``. Either way, reading or writing through an
/// ``/AmberModel/Attribute`` handle is an index plus a type check, with no name lookup.
/// The by-name methods resolve the name first.
public final class ManagedObject: Hashable, CustomStringConvertible {
    /// The object's entity.
    public let entity: Entity
    /// The object's ID: temporary until the first save, then permanent.
    public internal(set) var objectID: ObjectID
    /// The context that owns the object; nil once it was deleted and saved,
    /// or rolled back after insert.
    public var context: Context? { isDetached ? nil : owner }
    /// The context the object belongs or belonged to: for a binding's hook,
    /// which that context calls (so it is alive), even after the object left it.
    package var hookContext: Context { owner }
    /// The owning context, valid while the object is not detached. Not a weak
    /// reference, which costs atomic operations per object: a context marks
    /// every object it tracks or registers as detached when it goes away.
    unowned(unsafe) let owner: Context
    // Dynamic exclusivity checks on every property access were a sixth of
    // reading a value. An object is used from one thread, and no access to
    // its state spans a call that could reach the same object again (a
    // transformer may: decoding reads what it needs first and re-checks after).
    // Fields are ordered so the small ones share a word: an object is
    // allocated per row, and its size decides its malloc size class.

    /// The fetched row the object reads from while it is unchanged, or nil
    /// once it has its own `values`. Saved values are the same either way.
    @exclusivity(unchecked) private(set) var row: FetchedBatch?
    /// The object's row in `row`.
    @exclusivity(unchecked) private var rowIndex: Int32
    /// Whether the object left its context (deleted and saved, rolled back
    /// after insert, or its context was released): set only by ``leaveContext()``.
    @exclusivity(unchecked) private(set) var isDetached = false
    @exclusivity(unchecked) var insertedFlag = false
    @exclusivity(unchecked) var deletedFlag = false
    /// Whether the context's pending list holds this object.
    @exclusivity(unchecked) var isPending = false
    /// A saved object reached through a relationship whose row is not read
    /// yet: it has neither `row` nor `values` until the first read fires it.
    @exclusivity(unchecked) var isFault = false
    /// A new object some slot points at by its provisional key (the context
    /// remembers it, and a save must map the key to its new primary key).
    @exclusivity(unchecked) var isLinkTarget = false
    /// Counts the object's changes (wrapping), set here or read from the
    /// store: a live query that shows pending changes tells an object
    /// changed since it last looked from one that did not. Beside the
    /// flags, it takes no more room.
    @exclusivity(unchecked) var edits: UInt32 = 0
    /// The to-many relationships (by index) whose members changed since the
    /// last save; an object with any is listed in the context's `relinked`.
    /// On the object, not in a table by object: a large save marks an owner
    /// per linked member.
    @exclusivity(unchecked) var relinkedRelationships = SlotMask()
    /// Listed in the context's objects whose to-many members changed since the last save.
    var isRelinked: Bool { !relinkedRelationships.isEmpty }
    /// Current values, while `row` is nil: one slot per attribute, then a
    /// hidden slot per transformable attribute holding its encoded (stored) form.
    @exclusivity(unchecked) var values: [Value]
    /// Values as last saved or fetched (all slots), kept only once the object
    /// changes: nil means `values` are still the committed ones (or, for a
    /// new object, that there are none). Read-only objects never copy.
    @exclusivity(unchecked) var committed: [Value]?
    /// For attributes with transformers, by attribute slot: which of the
    /// decoded value and the encoded form is current (empty if the entity has none).
    @exclusivity(unchecked) var codecState: CodecStates
    /// The row version last read or written, for optimistic locking.
    @exclusivity(unchecked) var version: Int64
    /// A word a binding layer keeps with the object (the C API: the
    /// object's handle), so finding it needs no table; 0 when unused.
    @exclusivity(unchecked) package var bindingWord: UInt = 0
    /// The loaded members of its to-many relationships (nil until one is read).
    @exclusivity(unchecked) var links: Links?
    /// The slots set in this context since the object was last saved or
    /// rolled back (saved objects only): what a merge keeps, per key.
    @exclusivity(unchecked) var changedSlots = SlotMask()

    /// Which forms of a transformed attribute's value are current.
    struct CodecState: OptionSet {
        let rawValue: UInt8
        /// `values[slot]` holds the decoded value.
        static let decoded = CodecState(rawValue: 1)
        /// `values[encodedSlot]` holds the encoding of the current value.
        static let encoded = CodecState(rawValue: 2)
    }

    /// A new object with its own `values`.
    init(entity: Entity, objectID: ObjectID, context: Context, values: [Value], version: Int64, codecState: CodecStates)
    {
        self.entity = entity
        self.objectID = objectID
        self.owner = context
        self.values = values
        self.row = nil
        self.rowIndex = 0
        self.version = version
        self.codecState = codecState
    }

    /// A fetched object reading from row `index` of `batch`, whose version is `version`.
    init(entity: Entity, objectID: ObjectID, context: Context, batch: FetchedBatch, index: Int, version: Int64, codecState: CodecStates) {
        self.entity = entity
        self.objectID = objectID
        self.owner = context
        self.values = []
        self.row = batch
        self.rowIndex = Int32(truncatingIfNeeded: index)
        self.version = version
        self.codecState = codecState
    }

    /// The value in `slot` as held now (a transformed attribute's slot holds
    /// its decoded value only once decoded).
    @inline(__always)
    func slotValue(_ slot: Int) -> Value {
        if let row { return row.value(Int(rowIndex), slot: slot) }
        return values[slot]
    }

    /// The value in `slot` as last saved or fetched (what the store holds, as far as this context knows).
    func savedSlotValue(_ slot: Int) -> Value { committed?[slot] ?? slotValue(slot) }

    /// Every slot as held now (the row's values while reading from it): a
    /// snapshot to compare with after a refresh.
    func slotSnapshot() -> [Value] {
        guard let row else { return values }
        var all = entity.initialValues
        row.rows.read(Int(rowIndex), into: &all)
        return all
    }

    /// The stored attributes and to-one relationships whose values differ
    /// between slot arrays `old` and `new`, by name, in model order.
    func changedKeys(from old: [Value], to new: [Value]) -> [String] {
        var keys: [String] = []
        for attribute in entity.attributes where !attribute.isTransient {
            let slot = attribute.codec?.encodedSlot ?? attribute.slot
            if slot < old.count, slot < new.count, old[slot] != new[slot] { keys.append(attribute.name) }
        }
        keys += changedToOneKeys(from: old, to: new)
        if let slot = entity.extraSlot, slot < old.count, slot < new.count { keys += ExtendedValues.changedKeys(from: old[slot], to: new[slot]) }
        return keys
    }

    /// The to-one relationships whose slots differ between `old` and `new`, by name, in model order.
    func changedToOneKeys(from old: [Value], to new: [Value]) -> [String] {
        entity.toOneRelationships.compactMap { relationship in
            guard let slot = relationship.slot, slot < old.count, slot < new.count, old[slot] != new[slot] else { return nil }
            return relationship.name
        }
    }

    /// Reads a fault's row: from then on it reads its values like a fetched object.
    ///
    /// - Throws: ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` if the row is gone from the store.
    func fire() throws(AmberError) {
        guard isFault, let pk = objectID.primaryKey else { return }
        guard !isDetached else { throw .objectUnavailable(objectID, reason: Self.noContext) }
        let rows = try owner.engine.fetchRows(of: entity, where: .primaryKey, in: [pk])
        guard rows.count == 1 else { throw .objectUnavailable(objectID, reason: "its row was deleted from the store") }
        fill(FetchedBatch(rows: rows, entity: entity, template: owner.template(for: entity)), index: 0)
        owner.tell([self]) { $0.awakeFromFetch($1) }
    }

    /// Gives a fault its row, read by a fetch or a prefetch.
    func fill(_ batch: FetchedBatch, index: Int) {
        guard isFault else { return }
        row = batch
        rowIndex = Int32(truncatingIfNeeded: index)
        version = batch.rows.version(index)
        isFault = false
        if !entity.eagerAttributes.isEmpty { decodeEagerAttributes() }
    }

    /// Gives the object its own slot array, before its first change.
    private func materialize() {
        guard let row else { return }
        var own = entity.initialValues
        row.rows.read(Int(rowIndex), into: &own)
        for attribute in entity.codedAttributes where codecState[attribute.slot].contains(.decoded) {
            own[attribute.slot] = row.decodedValue(Int(rowIndex), attribute)
        }
        values = own
        row.forget(Int(rowIndex))
        self.row = nil
    }

    /// Takes the saved state in row `index` of `batch` (read again from the
    /// store). Keeping changes, every slot set here keeps its value and the
    /// rest take the stored ones, which become the committed snapshot (so a
    /// save no longer conflicts); otherwise pending value changes are dropped.
    /// A deletion mark stays either way.
    func refresh(from batch: FetchedBatch, index: Int, keepingChanges: Bool) {
        guard !insertedFlag else { return }
        guard keepingChanges, !changedSlots.isEmpty else {
            edits &+= 1  // values the store wrote (another context's save, a derived value): a change live queries report
            row?.forget(Int(rowIndex))
            (row, rowIndex, values, committed) = (batch, Int32(truncatingIfNeeded: index), [], nil)
            changedSlots.removeAll()
            codecState = owner.template(for: entity).fetchCodecState
            (version, isFault) = (batch.rows.version(index), false)
            if !entity.eagerAttributes.isEmpty { decodeEagerAttributes() }
            return
        }
        merge(from: batch, index: index) { isSetHere(slot: $0) }
    }

    /// Takes the stored values in row `index` of `batch`, except in the
    /// stored slots `keep` picks, which keep this object's values (with
    /// their decoded forms); the stored values become the committed
    /// snapshot and the row's version the object's. Transient values stay.
    func merge(from batch: FetchedBatch, index: Int, keeping keep: (Int) -> Bool) {
        edits &+= 1
        materialize()
        var stored = entity.initialValues
        batch.rows.read(index, into: &stored)
        var merged = stored
        for attribute in entity.attributes {
            // The slot a stored attribute's value lives in: its encoded form's, if transformed.
            let column = attribute.codec?.encodedSlot ?? attribute.slot
            if attribute.isTransient && batch.rows.value(index, slot: column) == nil {
                // Nothing stored: the value stays as it is here.
                for slot in [attribute.slot, column] { (merged[slot], stored[slot]) = (values[slot], values[slot]) }
            } else if keep(column) {
                merged[attribute.slot] = values[attribute.slot]
                merged[column] = values[column]
                // A value set back to what is stored is no change.
                if stored[column] == merged[column] { stored[attribute.slot] = merged[attribute.slot] }
            } else if attribute.codec != nil {
                // Not kept: decode the stored form afresh.
                codecState[attribute.slot] = .encoded
            }
        }
        for relationship in entity.toOneRelationships {
            if let slot = relationship.slot, keep(slot) { merged[slot] = values[slot] }
        }
        // Extended attributes merge key by key: the keys changed here over the stored ones.
        if let slot = entity.extraSlot, keep(slot) {
            merged[slot] = ExtendedValues.merge(stored: stored[slot], read: committed?[slot] ?? values[slot], current: values[slot], storeWins: false)
        }
        (values, committed, version, isFault) = (merged, stored, batch.rows.version(index), false)
        forgetComputedValues()
    }

    /// Whether the stored value in `slot` was set here since the object was
    /// read: the slot itself, or the attribute it is the encoded form of.
    package func isSetHere(slot: Int) -> Bool {
        if changedSlots.contains(slot) { return true }
        guard slot < entity.encodedFormOf.count, let attribute = entity.encodedFormOf[slot] else { return false }
        return changedSlots.contains(attribute.slot)
    }

    /// Leaves the context for good: no longer pending, and every change refused.
    func leaveContext() {
        isPending = false
        isDetached = true
    }

    /// Comes back to the context as a new object, with the values it had
    /// when it left (an undone deletion or insert): under its old key if it
    /// had been saved.
    func rejoinContext() {
        materialize()
        (isDetached, insertedFlag, committed, version) = (false, true, nil, 0)
        // The context forgot its provisional key when it left: it is registered again on first use.
        isLinkTarget = false
        changedSlots.removeAll()
    }

    deinit {
        if !isDetached, let pk = objectID.primaryKey { owner.unregister(self, primaryKey: pk) }
        row?.forget(Int(rowIndex))
    }

    // MARK: Reading and writing values

    /// The current value of `attribute`. A transformable attribute's stored
    /// form is decoded on first read (unless its policy decoded it at fetch)
    /// and the result cached.
    ///
    /// - Throws: ``/AmberValues/AmberError/foreignAttribute(attribute:object:)`` if the
    ///   handle belongs to another entity (not one this object's entity
    ///   inherits from) or model;
    ///   ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``
    ///   if the stored form cannot be decoded (other attributes stay readable).
    @inline(__always)
    public func value(for attribute: Attribute) throws(AmberError) -> Value {
        // Most reads: a plain attribute of this entity, on a live object with its row or values.
        if attribute.readsSlot, !isFault, !isDetached, entity.owns(attribute) { return slotValue(attribute.slot) }
        return try anyValue(for: attribute)
    }

    /// ``value(for:)`` for any attribute and object.
    private func anyValue(for attribute: Attribute) throws(AmberError) -> Value {
        guard let attribute = entity.own(attribute) else { throw entity.foreign(attribute, object: description) }
        // A pending deletion can still be read (observers, undo); once saved, the object is gone.
        if isDetached, deletedFlag { throw .objectUnavailable(objectID, reason: Self.deletedAndSaved) }
        if isFault { try fire() }
        if let computer = attribute.computer { return try computedValue(attribute, computer) }
        if let codec = attribute.codec {
            if !codecState[attribute.slot].contains(.decoded) { return try decode(attribute, codec) }
            if let row { return row.decodedValue(Int(rowIndex), attribute) }
            return values[attribute.slot]
        }
        return slotValue(attribute.slot)
    }

    /// The current value of the attribute named `key`; for an extensible
    /// entity, a name the model does not know is an extended attribute
    /// (see ``value(forExtendedKey:)``).
    ///
    /// - Throws: ``/AmberValues/AmberError/unknownAttribute(entity:name:suggestion:)`` with the nearest name.
    public func value(forKey key: String) throws(AmberError) -> Value {
        if entity.isExtensible, entity.existingAttribute(named: key) == nil { return try value(forExtendedKey: key) }
        return try value(for: entity.attribute(named: key))
    }

    /// Sets `attribute` to `value`. The value must be of the attribute's type
    /// or value class (an integer is accepted for Double, Float and Decimal;
    /// integer widths are range-checked; struct values must have their
    /// class's size); on error nothing changes. With the `immediate` encode
    /// policy the value is encoded now, and an encoding error also changes nothing.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` naming the
    ///   attribute, the expected type or class and the given value;
    ///   ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``;
    ///   ``/AmberValues/AmberError/objectUnavailable(_:reason:)`` for a deleted object.
    @inline(__always)
    public func setValue(_ value: Value, for attribute: Attribute) throws(AmberError) {
        guard let attribute = entity.own(attribute) else { throw entity.foreign(attribute, object: description) }
        guard !deletedFlag, !isDetached else {
            throw .objectUnavailable(objectID, reason: deletedFlag ? "the object is deleted" : Self.noContext)
        }
        if let derivation = attribute.derivation { throw Self.derived(attribute, derivation, value) }
        if let computation = attribute.computation {
            throw .invalidValue(place: attribute.description, expected: "no value: it is computed by \(computation.function) from "
                + computation.sources.joined(separator: ", "), given: "\(value.valueClass) \(value)")
        }
        let checked = try attribute.check(value)
        if let undo = owner.undoStack { undo.record(.value(self, attribute, try self.value(for: attribute))) }
        try beginChange()
        if let codec = attribute.codec {
            if codec.encodePolicy == .immediate {
                values[codec.encodedSlot] = try encoded(checked, attribute, codec)
                codecState[attribute.slot] = [.decoded, .encoded]
            } else {
                codecState[attribute.slot] = .decoded
            }
        }
        values[attribute.slot] = checked
        if !insertedFlag { changedSlots.insert(attribute.slot) }
        // Setting a shadow pattern's storage attribute makes its transient partner decode afresh.
        if let partner = entity.encodedFormOf[attribute.slot] { codecState[partner.slot] = .encoded }
        if !entity.dependents.isEmpty {
            for dependent in entity.dependents[attribute.slot] { codecState[dependent.slot] = [] }
        }
        edits &+= 1
        if !isPending { owner.track(self) }
    }

    /// The error for setting a derived attribute.
    static func derived(_ attribute: Attribute, _ derivation: Derivation, _ value: Value) -> AmberError {
        .invalidValue(place: attribute.description, expected: "no value: it is derived (\(derivation)) and the store computes it at save",
                      given: "\(value.valueClass) \(value)")
    }

    /// Sets a hidden slot (a to-one's destination key), tracking the change
    /// like a set; the caller checked the object is not deleted or detached.
    func setSlot(_ slot: Int, to value: Value) throws(AmberError) {
        try beginChange()
        if let undo = owner.undoStack {
            let old = values[slot]
            let target: ManagedObject? = if case .int(let key) = old, key < 0 { owner.provisional[key] } else { nil }
            undo.record(.slot(self, slot, old, target: target))
        }
        values[slot] = value
        if !insertedFlag { changedSlots.insert(slot) }
        edits &+= 1
        if !isPending { owner.track(self) }
    }

    /// Before a change: the row read, the object's own slots, and (the first
    /// change of a saved object) the committed values kept, sharing storage
    /// until values change.
    @inline(__always)
    func beginChange() throws(AmberError) {
        if isFault { try fire() }
        materialize()
        if committed == nil && !insertedFlag { committed = values }
    }

    /// Sets the attribute named `key` to `value`; for an extensible entity,
    /// a name the model does not know is an extended attribute (see
    /// ``setValue(_:forExtendedKey:)``).
    public func setValue(_ value: Value, forKey key: String) throws(AmberError) {
        if entity.isExtensible, entity.existingAttribute(named: key) == nil { return try setValue(value, forExtendedKey: key) }
        try setValue(value, for: entity.attribute(named: key))
    }

    /// A computed attribute's value: the cached one, or its function's result
    /// over the sources' current values, cached until a source changes.
    private func computedValue(_ attribute: Attribute, _ computer: Computer) throws(AmberError) -> Value {
        if row == nil, codecState[attribute.slot].contains(.decoded) { return values[attribute.slot] }
        let sources = computer.sourceSlots.map { entity.attributes[$0] }
        var inputs: [Value] = []
        inputs.reserveCapacity(sources.count)
        for source in sources { inputs.append(try value(for: source)) }
        // A C or Python callback may read computed values, this one included: bound the nesting.
        guard owner.computingDepth < Self.maximumComputingDepth else {
            throw .computationFailed(place: attribute.description, function: attribute.computation?.function ?? "", source: "",
                                     message: "reads computed values nested more than \(Self.maximumComputingDepth) deep (does it read itself?)")
        }
        owner.computingDepth += 1
        defer { owner.computingDepth -= 1 }
        let result = try computer.compute(inputs, for: attribute)
        // The function may have reached this object (a C or Python callback setting a source): cache only what still holds.
        for (source, input) in zip(sources, inputs) where !(try value(for: source)).isIdentical(to: input) { return result }
        materialize()
        values[attribute.slot] = result
        // Computing is not a change: a committed snapshot learns the value too.
        committed?[attribute.slot] = result
        codecState[attribute.slot].insert(.decoded)
        return result
    }

    /// Decodes `attribute`'s stored form and caches the result.
    @discardableResult
    private func decode(_ attribute: Attribute, _ codec: Codec) throws(AmberError) -> Value {
        let source = row, index = Int(rowIndex)
        let stored = source == nil ? values[codec.encodedSlot] : .null
        let decoded: Value
        do throws(TransformerFailure) {
            if let source {
                // Straight from the fetched bytes where the transformer allows (no stored value is made).
                if let bytes = source.rows.storedBytes(index, slot: codec.encodedSlot), let fromBytes = try codec.decode(bytes: bytes) {
                    decoded = fromBytes
                } else {
                    decoded = try codec.decode(source.value(index, slot: codec.encodedSlot))
                }
            } else {
                decoded = try codec.decode(stored)
            }
        } catch {
            throw error.error(at: "\(attribute) of \(objectID)")
        }
        // The transformer may have reached this object (a C or Python callback
        // setting a value) while it ran: cache only if nothing moved meanwhile.
        guard row === source, !codecState[attribute.slot].contains(.decoded) else { return decoded }
        if let source {
            source.setDecoded(decoded, index, attribute)
        } else {
            guard values[codec.encodedSlot] == stored else { return decoded }
            values[attribute.slot] = decoded
            // Decoding is not a change: a committed snapshot learns the value too.
            if committed?[codec.encodedSlot] == stored { committed?[attribute.slot] = decoded }
        }
        codecState[attribute.slot].insert(.decoded)
        return decoded
    }

    private func encoded(_ value: Value, _ attribute: Attribute, _ codec: Codec) throws(AmberError) -> Value {
        do throws(TransformerFailure) {
            return try codec.encode(value)
        } catch {
            throw error.error(at: "\(attribute) of \(objectID)")
        }
    }

    /// Brings every stale encoded form up to date (before a save).
    func encodePending() -> [SaveProblem] {
        materialize()
        var problems: [SaveProblem] = []
        for attribute in entity.codedAttributes where !codecState[attribute.slot].contains(.encoded) {
            guard let codec = attribute.codec else { continue }
            do throws(TransformerFailure) {
                values[codec.encodedSlot] = try codec.encode(values[attribute.slot])
                codecState[attribute.slot].insert(.encoded)
            } catch {
                problems.append(error.problem(objectID: objectID, place: attribute.description))
            }
        }
        return problems
    }

    /// Decodes every attribute whose policy is eager; a failure leaves the
    /// attribute undecoded, so reading it reports the error.
    func decodeEagerAttributes() {
        for attribute in entity.eagerAttributes {
            if let codec = attribute.codec { _ = try? decode(attribute, codec) }
        }
    }

    /// Whether `attribute` has a value, without decoding it.
    func hasValue(_ attribute: Attribute) -> Bool {
        if let codec = attribute.codec {
            if !codecState[attribute.slot].contains(.decoded) { return !slotValue(codec.encodedSlot).isNull }
            if let row { return !row.decodedValue(Int(rowIndex), attribute).isNull }
        }
        return !slotValue(attribute.slot).isNull
    }

    /// After a rollback or refresh: decoded values are stale, encoded forms current.
    func resetCodecState() {
        for attribute in entity.codedAttributes { codecState[attribute.slot] = .encoded }
        forgetComputedValues()
    }

    /// Makes every computed attribute compute afresh on its next read (its sources may have moved).
    func forgetComputedValues() {
        for attribute in entity.computedAttributes { codecState[attribute.slot] = [] }
    }

    /// How deeply computed attributes may read computed attributes (through callbacks) before a read fails.
    static let maximumComputingDepth = 32

    static let deletedAndSaved = "the object was deleted, and the deletion saved"
    static let noContext = "the object belongs to no context (it was rolled back, or its context was released)"

    // MARK: Change tracking

    /// Inserted into its context and not saved yet.
    public var isInserted: Bool { insertedFlag && !deletedFlag }
    /// Deleted in its context and not saved yet.
    public var isDeleted: Bool { deletedFlag && !insertedFlag }
    /// Saved before, and has values that differ from the saved ones.
    public var isUpdated: Bool { !insertedFlag && !deletedFlag && committed.map { $0 != values } ?? false }
    /// Whether saving would write anything for this object.
    public var hasChanges: Bool { isInserted || isDeleted || isUpdated }

    /// The values that differ from the committed ones, by attribute name
    /// (every non-null value for a new object), extended attributes included
    /// (one removed here is null). Values still in their stored form are
    /// unchanged by definition and are not decoded.
    public func changedValues() -> [String: Value] {
        var changed: [String: Value] = [:]
        guard row == nil, !isFault else { return changed }  // still reading its fetched row, or not read: unchanged
        for attribute in entity.attributes where attribute.computer == nil {
            if attribute.codec != nil && !codecState[attribute.slot].contains(.decoded) { continue }
            let current = values[attribute.slot]
            if insertedFlag ? !current.isNull : current != (committed ?? values)[attribute.slot] {
                changed[attribute.name] = current
            }
        }
        if let slot = entity.extraSlot { changed.merge(changedExtendedValues(slot: slot)) { modelled, _ in modelled } }
        return changed
    }

    /// The values as last saved or fetched, by attribute name (empty for a
    /// new object), extended attributes included; transformed values are
    /// decoded from their committed form.
    ///
    /// - Throws: ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``.
    public func committedValues() throws(AmberError) -> [String: Value] {
        guard !insertedFlag else { return [:] }
        try fire()
        let saved = { (slot: Int) in self.committed?[slot] ?? self.slotValue(slot) }
        var result: [String: Value] = [:]
        // Computed values follow the current sources, not the committed ones: they are left out, as from changedValues.
        for attribute in entity.attributes where attribute.computer == nil {
            if let codec = attribute.codec {
                do throws(TransformerFailure) {
                    result[attribute.name] = try codec.decode(saved(codec.encodedSlot))
                } catch {
                    throw error.error(at: "\(attribute) of \(objectID)")
                }
            } else {
                result[attribute.name] = saved(attribute.slot)
            }
        }
        if let slot = entity.extraSlot { result.merge(try extendedValues(in: saved(slot))) { modelled, _ in modelled } }
        return result
    }

    /// All current values by attribute name (decoding transformed ones), with
    /// the extended attributes of an extensible entity's object.
    public func dictionary() throws(AmberError) -> [String: Value] {
        var result: [String: Value] = [:]
        for attribute in entity.attributes { result[attribute.name] = try value(for: attribute) }
        if entity.isExtensible { result.merge(try extendedValues()) { modelled, _ in modelled } }
        return result
    }

    // MARK: Identity

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String { objectID.description }
}

extension ManagedObject: RowSource {
    package var slotValues: [Value] {
        guard let row else { return values }
        var saved = entity.initialValues
        row.rows.read(Int(rowIndex), into: &saved)
        return saved
    }
    package var rowVersion: Int64 { version }
    package var savedSlotValues: [Value]? { committed }

    /// The negative key that stands for this new object's primary key in slots and join rows.
    var temporaryKey: Int64 {
        if case .temporary(let number) = objectID.key { return -Int64(truncatingIfNeeded: number) - 1 }
        return 0
    }
}

/// A set of slot indexes, one bit each.
struct SlotMask {
    private var words: [UInt64] = []

    var isEmpty: Bool { words.isEmpty }

    mutating func insert(_ slot: Int) {
        let word = slot >> 6
        if word >= words.count { words += repeatElement(0, count: word + 1 - words.count) }
        words[word] |= 1 << UInt64(slot & 63)
    }

    func contains(_ slot: Int) -> Bool {
        let word = slot >> 6
        return word < words.count && words[word] & (1 << UInt64(slot & 63)) != 0
    }

    mutating func removeAll() { words = [] }
}

/// How an entity's objects start out in a context.
struct ObjectTemplate {
    /// A new object's codec state: attributes with a default must encode it;
    /// the rest decode from their (empty or storage-attribute) encoded form.
    let insertCodecState: CodecStates
    /// A fetched object's codec state: every encoded form is current.
    let fetchCodecState: CodecStates

    /// By slot, the attribute's position among the entity's transformed attributes (-1: none).
    let codedIndex: [Int]

    init(_ entity: Entity) {
        // Computed attributes keep whether their cached value is current in the same states.
        let coded = !entity.codedAttributes.isEmpty || !entity.computedAttributes.isEmpty
        insertCodecState = CodecStates(coded ? entity.attributes.map { $0.defaultValue.isNull ? .encoded : .decoded } : [])
        fetchCodecState = CodecStates(coded ? entity.attributes.map { _ in .encoded } : [])
        var codedIndex = [Int](repeating: -1, count: entity.attributes.count)
        for (index, attribute) in entity.codedAttributes.enumerated() { codedIndex[attribute.slot] = index }
        self.codedIndex = codedIndex
    }
}

/// A fetch's rows as its objects read them until they change: the store's
/// compact rows, each transient attribute's default, and the values decoded
/// from stored forms (one list for the whole fetch, made on the first decode,
/// so decoding allocates nothing per object beyond the value itself).
final class FetchedBatch {
    let rows: FetchedRows
    private let entity: Entity
    private let codedIndex: [Int]
    private let codedCount: Int
    /// Row after row, one decoded value per transformed attribute.
    @exclusivity(unchecked) private var decoded: [Value] = []

    init(rows: FetchedRows, entity: Entity, template: ObjectTemplate) {
        self.rows = rows
        self.entity = entity
        self.codedIndex = template.codedIndex
        self.codedCount = entity.codedAttributes.count
    }

    /// The value in `slot` of row `row` (a transient attribute's default if it is not stored).
    @inline(__always)
    func value(_ row: Int, slot: Int) -> Value {
        rows.value(row, slot: slot) ?? entity.initialValues[slot]
    }

    /// The decoded value of transformed `attribute` in row `row`, as last set by ``setDecoded(_:_:_:)``.
    func decodedValue(_ row: Int, _ attribute: Attribute) -> Value {
        decoded.isEmpty ? .null : decoded[row * codedCount + codedIndex[attribute.slot]]
    }

    func setDecoded(_ value: Value, _ row: Int, _ attribute: Attribute) {
        if decoded.isEmpty { decoded = Array(repeating: .null, count: rows.count * codedCount) }
        decoded[row * codedCount + codedIndex[attribute.slot]] = value
    }

    /// Drops row `row`'s decoded values once no object reads them (it
    /// changed, or went away), so a large decoded value is not kept for the
    /// life of the whole fetch.
    func forget(_ row: Int) {
        guard !decoded.isEmpty else { return }
        for index in row * codedCount..<(row + 1) * codedCount { decoded[index] = .null }
    }
}

/// Per attribute slot, which forms of a transformed value are current. Two
/// bits a slot in one word for entities of up to 32 attributes, so an object
/// that decodes a value allocates nothing for it; an array beyond that.
struct CodecStates {
    private var word: UInt64 = 0
    private var wide: [ManagedObject.CodecState] = []

    init(_ states: [ManagedObject.CodecState]) {
        if states.count <= 32 {
            for (slot, state) in states.enumerated() { word |= UInt64(state.rawValue) << (2 * UInt64(slot)) }
        } else {
            wide = states
        }
    }

    subscript(slot: Int) -> ManagedObject.CodecState {
        get {
            if !wide.isEmpty { return wide[slot] }
            return ManagedObject.CodecState(rawValue: UInt8(truncatingIfNeeded: word >> (2 * UInt64(slot))) & 3)
        }
        set {
            if !wide.isEmpty {
                wide[slot] = newValue
                return
            }
            let shift = 2 * UInt64(slot)
            word = word & ~(3 << shift) | UInt64(newValue.rawValue) << shift
        }
    }
}
