import AmberModel
import AmberStore
import AmberTransformers
import AmberValues

/// Registered objects of one entity by primary key, without retaining them:
/// an open-addressing table with linear probing. Lookups, inserts and
/// removals happen for every fetched and saved object, and Dictionary's
/// seeded SipHash made them a tenth of a full fetch.
///
/// Row ids come mostly in sequence. The hash keeps each run of eight
/// consecutive keys together (one cache line of keys) and spreads the runs
/// with Fibonacci hashing: a fetch or a save in key order then misses the
/// cache once per eight entries instead of once per entry, while probe runs
/// stay short (an identity hash made one run of every key, and each
/// backward-shift deletion walked all of it).
struct ObjectTable {
    private var keys: [Int64] = []
    private var objects: [Unmanaged<ManagedObject>?] = []
    private(set) var count = 0
    /// 64 − log2(capacity / 8): shifts a Fibonacci hash down to a group of eight slots.
    private var shift: UInt64 = 64
    #if DEBUG
    /// Slots visited by every operation so far, so a test can bound the work per operation.
    private(set) var probes = 0
    #endif

    /// The object registered under `key`, if any.
    func object(for key: Int64) -> ManagedObject? {
        guard count > 0 else { return nil }
        var index = slot(for: key)
        while let entry = objects[index] {
            if keys[index] == key { return entry.takeUnretainedValue() }
            index = (index + 1) & (objects.count - 1)
        }
        return nil
    }

    /// Registers `object` under `key`, replacing what was there.
    mutating func insert(_ object: ManagedObject, for key: Int64) {
        if (count + 1) * 4 > objects.count * 3 { grow(to: Swift.max(16, objects.count * 2)) }
        var index = slot(for: key)
        while objects[index] != nil {
            #if DEBUG
            probes += 1
            #endif
            if keys[index] == key {
                objects[index] = Unmanaged.passUnretained(object)
                return
            }
            index = (index + 1) & (objects.count - 1)
        }
        keys[index] = key
        objects[index] = Unmanaged.passUnretained(object)
        count += 1
    }

    /// Removes the entry for `key` if it is `object` (a newer registration is left alone).
    mutating func remove(_ object: ManagedObject, for key: Int64) {
        guard count > 0 else { return }
        var index = slot(for: key)
        while let entry = objects[index] {
            #if DEBUG
            probes += 1
            #endif
            if keys[index] == key {
                guard entry.toOpaque() == Unmanaged.passUnretained(object).toOpaque() else { return }
                delete(at: index)
                return
            }
            index = (index + 1) & (objects.count - 1)
        }
    }

    /// Removes the entry for `key`, whatever it is.
    mutating func removeValue(for key: Int64) {
        guard count > 0 else { return }
        var index = slot(for: key)
        while objects[index] != nil {
            #if DEBUG
            probes += 1
            #endif
            if keys[index] == key {
                delete(at: index)
                return
            }
            index = (index + 1) & (objects.count - 1)
        }
    }

    /// Makes room for `extra` more entries without growing on the way.
    mutating func reserve(_ extra: Int) {
        var capacity = Swift.max(16, objects.count)
        while (count + extra) * 4 > capacity * 3 { capacity *= 2 }
        if capacity > objects.count { grow(to: capacity) }
    }

    /// Every registered object.
    var all: [ManagedObject] { objects.compactMap { $0?.takeUnretainedValue() } }

    private func slot(for key: Int64) -> Int {
        let k = UInt64(bitPattern: key)
        let group = ((k >> 3) &* 0x9E37_79B9_7F4A_7C15) >> shift
        return Int(truncatingIfNeeded: group << 3 | k & 7)
    }

    /// Backward-shift deletion: later entries of the same probe run move up, so no tombstones are needed.
    private mutating func delete(at start: Int) {
        let mask = objects.count - 1
        var hole = start
        var index = (start + 1) & mask
        while objects[index] != nil {
            #if DEBUG
            probes += 1
            #endif
            let home = slot(for: keys[index])
            // Move the entry into the hole if its home is not between the hole and it (cyclically).
            if (index > hole && (home <= hole || home > index)) || (index < hole && home <= hole && home > index) {
                keys[hole] = keys[index]
                objects[hole] = objects[index]
                hole = index
            }
            index = (index + 1) & mask
        }
        objects[hole] = nil
        count -= 1
    }

    private mutating func grow(to capacity: Int) {
        let oldKeys = keys, oldObjects = objects
        keys = Array(repeating: 0, count: capacity)
        objects = Array(repeating: nil, count: capacity)
        shift = 64 - UInt64(capacity.trailingZeroBitCount - 3)
        // Entries move as unretained references: touching each object to retain it missed the cache per entry.
        for (key, object) in zip(oldKeys, oldObjects) {
            guard let object else { continue }
            var index = slot(for: key)
            while objects[index] != nil { index = (index + 1) & (capacity - 1) }
            keys[index] = key
            objects[index] = object
        }
    }
}
