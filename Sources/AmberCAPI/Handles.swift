import Amber
import AmberHeaders
import Foundation
import Synchronization

/// The kinds of handle, encoded in every handle so a handle of one kind
/// passed where another is expected is caught.
enum HandleKind: UInt8, CustomStringConvertible {
    case registry = 1, model, builder, entity, attribute, store, context, object, transformer, batch, relationship, changes, liveQuery, problems

    var description: String {
        switch self {
        case .registry: "amber_registry"
        case .model: "amber_model"
        case .builder: "amber_model_builder"
        case .entity: "amber_entity"
        case .attribute: "amber_attribute"
        case .store: "amber_store"
        case .context: "amber_context"
        case .object: "amber_object"
        case .transformer: "amber_transformer"
        case .batch: "amber_batch"
        case .relationship: "amber_relationship"
        case .changes: "amber_changes"
        case .liveQuery: "amber_live_query"
        case .problems: "amber_problems"
        }
    }
}

/// Every live handle. A handle is not a pointer to memory: it encodes a
/// magic byte, its kind, a generation and a slot index, so looking up a
/// released, forged or wrong-kind handle never touches freed memory.
///
///     bits 56–63  magic 0xAB
///     bits 48–55  kind
///     bits 32–47  generation of the slot (bumped when the handle is released)
///     bits  0–31  slot index + 1
enum Handles {
    private static let magic: UInt64 = 0xAB

    private struct Slot {
        var generation: UInt16 = 0
        var kind: HandleKind?
        var object: AnyObject?
        /// Released while lock-free readers were inside it: `object` is dropped,
        /// and the slot reused, when the last of them leaves.
        var retiring = false
    }

    private struct Table {
        var slots: [Slot] = []
        var free: [Int] = []
    }

    private static let table = Locked(Table())

    /// A new handle for `object`. `owner` (a ``ThreadMark`` token) is the
    /// only thread that may use it, and release it while it runs (object and
    /// context handles); `attribute`, for an attribute handle, what the
    /// lock-free path compares it with.
    static func make(_ object: AnyObject, kind: HandleKind, owner: UInt = 0, attribute: Attribute? = nil) -> OpaquePointer? {
        table.withLock { table in
            let index: Int
            if let reused = table.free.popLast() {
                index = reused
            } else {
                index = table.slots.count
                table.slots.append(Slot())
            }
            table.slots[index].kind = kind
            table.slots[index].object = object
            let handle = encode(index: index, generation: table.slots[index].generation, kind: kind)
            Mirror.publish(index: index, handle: handle, owner: owner, object: object, attribute: attribute)
            return handle
        }
    }

    /// Never NULL: the magic byte is set.
    private static func encode(index: Int, generation: UInt16, kind: HandleKind) -> OpaquePointer? {
        OpaquePointer(bitPattern: UInt(magic << 56 | UInt64(kind.rawValue) << 48 | UInt64(generation) << 32 | UInt64(index + 1)))
    }

    /// The object behind `handle`, which must be a live handle of `kind`.
    static func resolve<T: AnyObject>(_ handle: OpaquePointer?, as kind: HandleKind, _ parameter: String) throws(CAPIError) -> T {
        let object = try table.withLock { (table) throws(CAPIError) in try lookup(handle, kind, parameter, in: table) }
        // Each kind is only ever made from one wrapper class, so the kind check in lookup
        // is the type check; a dynamic cast here would cost more than the lookup.
        return unsafeDowncast(object, to: T.self)
    }

    /// Runs `body` on the object behind `handle`, a live handle of a kind any
    /// thread may use and release (a transformer): lock-free when the handle
    /// is mirrored, else under the lock.
    @inline(__always)
    static func withShared<T: AnyObject, R>(_ handle: OpaquePointer?, as kind: HandleKind, _ parameter: String,
                                            _ body: (T) throws(CAPIError) -> R) throws(CAPIError) -> R
    {
        if let result = try Mirror.withShared(handle, kind, as: T.self, body) { return result }
        // Not mirrored or not live: the locked path reports a bad handle; a live one beyond the mirror is held here.
        let object: T = try resolve(handle, as: kind, parameter)
        return try withExtendedLifetime(object) { () throws(CAPIError) in try body(object) }
    }

    /// Two handles under one lock: the per-value calls (get, set) resolve an object and an attribute.
    static func resolve<A: AnyObject, B: AnyObject>(_ first: OpaquePointer?, as firstKind: HandleKind, _ firstParameter: String,
                                                    _ second: OpaquePointer?, as secondKind: HandleKind,
                                                    _ secondParameter: String) throws(CAPIError) -> (A, B)
    {
        let (a, b) = try table.withLock { (table) throws(CAPIError) in
            (try lookup(first, firstKind, firstParameter, in: table), try lookup(second, secondKind, secondParameter, in: table))
        }
        return (unsafeDowncast(a, to: A.self), unsafeDowncast(b, to: B.self))
    }

    private static func lookup(_ handle: OpaquePointer?, _ kind: HandleKind, _ parameter: String,
                               in table: Table) throws(CAPIError) -> AnyObject
    {
        guard let handle else { throw .null(parameter) }
        let bits = UInt64(UInt(bitPattern: Int(bitPattern: handle)))
        guard bits >> 56 == magic else {
            throw CAPIError(AMBER_E_INVALID_HANDLE, "\(parameter) is not an Amber handle", origin: parameter)
        }
        let index = Int(bits & 0xFFFF_FFFF) - 1
        let generation = UInt16(truncatingIfNeeded: bits >> 32)
        guard index >= 0, index < table.slots.count, table.slots[index].generation == generation,
              let slotKind = table.slots[index].kind, let object = table.slots[index].object
        else {
            throw CAPIError(AMBER_E_INVALID_HANDLE, "\(parameter) is a released (stale) handle", origin: parameter)
        }
        // The kind is in the handle too: a handle whose kind bits differ from its slot's is forged.
        guard UInt8(truncatingIfNeeded: bits >> 48) == slotKind.rawValue else {
            throw CAPIError(AMBER_E_INVALID_HANDLE, "\(parameter) is not an Amber handle", origin: parameter)
        }
        guard slotKind == kind else {
            throw CAPIError(AMBER_E_WRONG_HANDLE_TYPE, "\(parameter) is an \(slotKind), expected an \(kind)", origin: parameter)
        }
        return object
    }

    /// Releases `handle` (which must be live and of `kind`): later uses are stale.
    static func release(_ handle: OpaquePointer?, as kind: HandleKind, _ parameter: String) throws(CAPIError) {
        let _: AnyObject = try resolve(handle, as: kind, parameter)
        releaseUnchecked([handle])
    }

    /// Releases handles known to be live (owned handles of a model or context being freed).
    static func releaseUnchecked(_ handles: some Sequence<OpaquePointer?>) {
        // Objects are dropped outside the lock: their deinit may release more handles.
        var dropped: [AnyObject] = []
        table.withLock { table in
            for handle in handles {
                guard let handle else { continue }
                let index = Int(UInt64(UInt(bitPattern: Int(bitPattern: handle))) & 0xFFFF_FFFF) - 1
                guard index >= 0, index < table.slots.count, !table.slots[index].retiring,
                      table.slots[index].object != nil
                else { continue }
                // Stale from here on, in both tables, whoever still holds the handle.
                table.slots[index].generation &+= 1
                if Mirror.retract(index: index) {
                    vacate(index, in: &table, dropping: &dropped)
                } else {
                    table.slots[index].retiring = true  // the last reader out calls finishRetiring
                }
            }
        }
        dropped.removeAll()
    }

    /// Drops a retiring slot's object once the lock-free readers inside it have left.
    static func finishRetiring(index: Int) {
        var dropped: [AnyObject] = []
        table.withLock { table in
            guard index < table.slots.count, table.slots[index].retiring, Mirror.drained(index: index) else { return }
            vacate(index, in: &table, dropping: &dropped)
        }
        dropped.removeAll()
    }

    /// Empties a released slot (its generation already bumped) and makes it reusable.
    private static func vacate(_ index: Int, in table: inout Table, dropping dropped: inout [AnyObject]) {
        if let object = table.slots[index].object { dropped.append(object) }
        let generation = table.slots[index].generation
        table.slots[index] = Slot(generation: generation)
        // A slot whose generation would wrap is retired for good, so a stale handle never matches again.
        if generation < UInt16.max { table.free.append(index) }
    }
}

/// Checks an out-parameter before any work is done, so a NULL one fails early.
@inline(__always)
func require<T>(_ pointer: UnsafeMutablePointer<T>?, _ parameter: String) throws(CAPIError) -> UnsafeMutablePointer<T> {
    guard let pointer else { throw .null(parameter) }
    return pointer
}

/// A count or length from C. `size_t` arrives as a signed `Int`, so a huge
/// value (SIZE_MAX from a bug) is negative here; ranges over it would trap.
@inline(__always)
func count(_ value: Int, _ parameter: @autoclosure () -> String) throws(CAPIError) -> Int {
    guard value >= 0, value <= Int(Int32.max) else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "\(parameter()) is \(UInt(bitPattern: value)), which is not a sensible count",
                        origin: parameter())
    }
    return value
}

/// A NUL-terminated UTF-8 name argument, checked.
func name(_ pointer: UnsafePointer<CChar>?, _ parameter: @autoclosure () -> String) throws(CAPIError) -> String {
    guard let pointer else { throw .null(parameter()) }
    let length = strlen(pointer)
    let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
    guard let text = String(exactUTF8: bytes) else {
        let place = parameter()
        throw CAPIError(AMBER_E_INVALID_UTF8, "\(place) is not valid UTF-8", origin: place)
    }
    return text
}

/// An optional name argument (NULL allowed).
func optionalName(_ pointer: UnsafePointer<CChar>?, _ parameter: String) throws(CAPIError) -> String? {
    guard pointer != nil else { return nil }
    return try name(pointer, parameter)
}

/// A malloc'd, NUL-terminated copy of `text` for the caller to amber_free.
func mallocString(_ text: String) throws(CAPIError) -> (UnsafeMutablePointer<CChar>, Int) {
    let utf8 = Array(text.utf8)
    guard let buffer = malloc(utf8.count + 1)?.assumingMemoryBound(to: CChar.self) else {
        throw CAPIError(AMBER_E_INTERNAL, "out of memory")
    }
    utf8.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(buffer), byteCount: utf8.count) }
    buffer[utf8.count] = 0
    return (buffer, utf8.count)
}

/// A caller-filled struct that can grow: its first field is the `size` the
/// caller's header gave it (set by the struct's `AMBER_…_INIT`). Reads only
/// that many bytes, so a caller built against an older, shorter struct gets
/// zeros (the documented defaults) for fields added since. A caller built
/// against a newer header may pass a larger struct if the fields this library
/// does not know are zero (as the Linux kernel's copy_struct_from_user does);
/// a set one is refused rather than ignored. A size below `minimum` (the
/// struct as first published), or one never set, is refused.
func sized<T>(_ pointer: UnsafePointer<T>?, _ parameter: String, initializer: String, minimum: Int, zero: T) throws(CAPIError) -> T {
    guard let pointer else { throw .null(parameter) }
    let raw = UnsafeRawPointer(pointer)
    let given = raw.loadUnaligned(as: Int.self)
    guard given >= minimum, given <= 1 << 16 else {
        throw CAPIError(AMBER_E_INVALID_VALUE,
                        "\(parameter)->size is \(UInt(bitPattern: given)); start from \(initializer), which sets it",
                        origin: parameter)
    }
    // C's sizeof includes trailing padding, which is Swift's stride.
    let known = MemoryLayout<T>.stride
    if given > known, UnsafeRawBufferPointer(start: raw + known, count: given - known).contains(where: { $0 != 0 }) {
        throw CAPIError(AMBER_E_INVALID_VALUE,
                        "\(parameter) sets fields this library (Amber \(Amber.version)) does not know; it reads \(known) bytes",
                        origin: parameter)
    }
    return readGrowingStruct(raw, byteCount: given, over: zero)
}

/// Lock-free reads of live handles on the hot paths (get and set through
/// attribute handles, transformer calls). For each of the first `capacity`
/// slots it keeps, in memory that is never moved or freed, the handle the
/// slot is live under (0 when released), its owner thread or attribute
/// position, the object's address and the number of readers inside a shared
/// handle. Writers hold the handle table's lock; readers take none.
///
/// A reader never touches an object it has not proved alive:
/// - an object or context handle is followed only if the calling thread owns
///   it (its ``ThreadMark``), and only the owner releases such handles while
///   it runs (another thread only once it has ended), so it cannot go away
///   during the call;
/// - an attribute handle is never followed: its address is compared with the
///   object's own entity's attribute at the recorded position, which the
///   (live) object keeps alive;
/// - a shared handle (a transformer, which any thread may use and release)
///   is followed between entering and leaving its slot's reader count: a
///   release while readers are inside marks the count retiring and leaves the
///   object to the last reader out (``Handles/finishRetiring(index:)``).
/// Anything else (another thread, a released, forged or unmirrored handle)
/// takes the locked path, which reports the error.
enum Mirror {
    private static let capacity = 1 << 22
    /// Words per slot: handle, owner thread or attribute position, object address, attribute address, readers.
    private static let stride = 5
    /// The reader count's flag for a released slot that readers were inside.
    private static let retiring: UInt = 1 << (UInt.bitWidth - 1)
    /// 160 MiB of address space, reserved (not committed: pages are touched
    /// only as slots are used) by the first publish, under the table's lock.
    /// A constant initial value, so reads need no lazy-initialisation check;
    /// the pointer is written once, before any handle it mirrors exists.
    nonisolated(unsafe) private static var words: UnsafeMutablePointer<Atomic<UInt>>? = nil
    nonisolated(unsafe) private static var reserved = false

    /// The mirror's memory, reserved on first use; nil if the system refused it (every read then takes the locked path).
    private static func reserve() -> UnsafeMutablePointer<Atomic<UInt>>? {
        if !reserved {
            reserved = true
            let bytes = capacity * stride * MemoryLayout<UInt>.stride
            if let memory = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
               memory != MAP_FAILED
            {
                // Zero-filled pages: every word is an Atomic<UInt> holding 0 (no handle).
                words = memory.bindMemory(to: Atomic<UInt>.self, capacity: capacity * stride)
            }
        }
        return words
    }

    /// Records a live slot (under the table's lock): the fields first, then the handle that makes them valid.
    static func publish(index: Int, handle: OpaquePointer?, owner: UInt, object: AnyObject, attribute: Attribute?) {
        guard index < capacity, let words = reserve() else { return }
        // A reused slot: its new fields must not be seen before its retraction. Readers
        // would reject a mix anyway (an owner only this thread can have written; an
        // attribute compared by identity), but they must not rely on that.
        atomicMemoryFence(ordering: .releasing)
        let slot = words + index * stride
        slot[1].store(attribute.map { UInt($0.slot) } ?? owner, ordering: .relaxed)
        slot[2].store(UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), ordering: .relaxed)
        slot[3].store(attribute.map { UInt(bitPattern: ObjectIdentifier($0)) } ?? 0, ordering: .relaxed)
        slot[0].store(UInt(bitPattern: handle), ordering: .releasing)
    }

    /// Marks a slot released (under the table's lock): true if its object may
    /// be dropped now, false if readers are inside and the last of them will
    /// call ``Handles/finishRetiring(index:)``.
    static func retract(index: Int) -> Bool {
        guard index < capacity, let words else { return true }
        let slot = words + index * stride
        slot[0].store(0, ordering: .sequentiallyConsistent)
        // One read-modify-write on the count orders this release against every
        // reader's entry and exit: exactly one side sees "retiring, no readers".
        // No reader inside: take the flag back, unless one entered meanwhile (it will leave after us).
        return slot[4].bitwiseOr(retiring, ordering: .sequentiallyConsistent).oldValue == 0 && drained(index: index)
    }

    /// Whether a retiring slot's readers have all left; if so, clears the flag.
    static func drained(index: Int) -> Bool {
        guard index < capacity, let words else { return true }
        return words[index * stride + 4].compareExchange(expected: retiring, desired: 0, ordering: .sequentiallyConsistent).exchanged
    }

    /// Runs `body` on the object behind a shared handle of `kind` without the
    /// table's lock; nil (and `body` not run) if the handle is not live here:
    /// take the locked path.
    @inline(__always)
    static func withShared<T: AnyObject, R, E: Error>(_ handle: OpaquePointer?, _ kind: HandleKind, as type: T.Type,
                                                       _ body: (T) throws(E) -> R) throws(E) -> R?
    {
        let bits = UInt(bitPattern: handle)
        let index = Int(bits & 0xFFFF_FFFF) &- 1
        guard UInt8(truncatingIfNeeded: bits >> 48) == kind.rawValue, index >= 0, index < capacity, let words else { return nil }
        let slot = words + index * stride
        slot[4].wrappingAdd(1, ordering: .sequentiallyConsistent)
        defer {
            if slot[4].wrappingSubtract(1, ordering: .sequentiallyConsistent).oldValue == retiring | 1 {
                Handles.finishRetiring(index: index)
            }
        }
        // Inside the count, a slot live under `handle` stays so until we leave.
        guard slot[0].load(ordering: .sequentiallyConsistent) == bits,
              let pointer = UnsafeRawPointer(bitPattern: slot[2].load(ordering: .relaxed))
        else { return nil }
        // Borrowed, not retained: the count keeps it alive. (The borrow does not carry typed throws.)
        var result: Result<R, E>?
        Unmanaged<T>.fromOpaque(pointer)._withUnsafeGuaranteedRef { object in result = Result { () throws(E) in try body(object) } }
        return try result.unsafelyUnwrapped.get()
    }

    /// Words 1–3 of the slot `handle` is live under, read consistently; nil
    /// if it is not, or `handle` is not of `kind`.
    @inline(__always)
    private static func read(_ handle: OpaquePointer?, _ kind: HandleKind) -> (UInt, UInt, UInt)? {
        let bits = UInt(bitPattern: handle)
        let index = Int(bits & 0xFFFF_FFFF) &- 1
        // A live handle of another kind (an object passed as a context) is the locked path's error to report.
        guard UInt8(truncatingIfNeeded: bits >> 48) == kind.rawValue, index >= 0, index < capacity, let words else { return nil }
        let slot = words + index * stride
        guard slot[0].load(ordering: .acquiring) == bits else { return nil }
        let fields = (slot[1].load(ordering: .relaxed), slot[2].load(ordering: .relaxed), slot[3].load(ordering: .relaxed))
        // The fields must belong to the handle checked above: re-check after them.
        atomicMemoryFence(ordering: .acquiring)
        guard slot[0].load(ordering: .relaxed) == bits else { return nil }
        return fields
    }

    /// The object behind a handle of `kind` (object, context) that the calling
    /// thread owns; nil: take the locked path.
    @inline(__always)
    static func owned<T: AnyObject>(_ handle: OpaquePointer?, _ kind: HandleKind, as type: T.Type) -> T? {
        guard let (owner, address, _) = read(handle, kind), owner == ThreadMark.currentToken,
              let pointer = UnsafeRawPointer(bitPattern: address)
        else { return nil }
        // A handle's bits name its kind, and each kind is made from one wrapper class.
        return unsafeDowncast(Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue(), to: T.self)
    }

    /// The attribute of `entity` behind an attribute handle; nil: take the locked path.
    @inline(__always)
    static func attribute(_ handle: OpaquePointer?, of entity: Entity) -> Attribute? {
        guard let (position, _, address) = read(handle, .attribute), position < UInt(entity.attributes.count) else { return nil }
        let candidate = entity.attributes[Int(position)]
        return UInt(bitPattern: ObjectIdentifier(candidate)) == address ? candidate : nil
    }
}
