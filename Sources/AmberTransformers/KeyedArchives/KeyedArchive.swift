import AmberValues
import Foundation

/// An `NSKeyedArchiver` archive (what Core Data's secure unarchiver reads,
/// and how it keeps its model cache), read from untrusted bytes: a binary
/// property list whose `$objects` refer to one another by UID, with a
/// `$class` naming each object's class.
///
/// ``value(_:)`` turns the property-list classes into Amber values
/// (strings, numbers, dates, data, URLs, UUIDs, arrays, dictionaries, sets
/// as arrays, null); any other class is refused by name. Nesting is limited,
/// an object that contains itself is refused, and so is an archive that
/// expands to more than a million values (shared objects counted each
/// time), so no input can exhaust the stack or memory.
package struct KeyedArchive {
    /// The property list the archive is written in.
    package let list: BinaryPropertyList
    /// `$objects`: by UID, the item index of each archived object.
    private let objects: [Int]
    /// The UID of the archive's root object (`$top.root`).
    package let root: Int

    /// Deeper nesting is refused.
    static let maximumDepth = 64
    /// More values than this in one decoding are refused.
    static let maximumValues = 1_000_000
    /// An archived object (a dictionary of `$objects`) with more keys than this is refused.
    static let maximumKeys = 256

    /// Why bytes are not a keyed archive Amber reads.
    package struct Failure: Error, CustomStringConvertible {
        package let message: String
        /// The archived class that is not one Amber reads, when that is the reason.
        package let unreadClass: String?
        package var description: String { "keyed archive: \(message)" }

        package init(_ message: String, unreadClass: String? = nil) {
            (self.message, self.unreadClass) = (message, unreadClass)
        }
    }

    /// Whether `data` starts as a binary property list does (a keyed archive's first bytes).
    package static func looksLikeOne(_ data: Data) -> Bool { data.starts(with: BinaryPropertyList.magic) }

    /// Reads the archive's structure (its objects are read on demand).
    ///
    /// - Throws: ``Failure`` for bytes that are not a binary property list,
    ///   or a list without `$archiver` `NSKeyedArchiver`, `$objects` or `$top.root`.
    package init(_ data: Data) throws(Failure) {
        let parsed: BinaryPropertyList
        do {
            parsed = try BinaryPropertyList(data)
        } catch {
            throw Failure(error.description)
        }
        func entry(_ name: String, of item: BinaryPropertyList.Item) -> BinaryPropertyList.Item? {
            guard case .dictionary(let keys, let values) = item else { return nil }
            return zip(keys, values).first { parsed.items[$0.0] == .string(name) }.map { parsed.items[$0.1] }
        }
        let top = parsed.items[parsed.top]
        guard entry("$archiver", of: top) == .string("NSKeyedArchiver") else { throw Failure("$archiver is not NSKeyedArchiver") }
        guard case .array(let objects)? = entry("$objects", of: top) else { throw Failure("no $objects array") }
        guard let topEntry = entry("$top", of: top), case .uid(let root)? = entry("root", of: topEntry), root < objects.count else {
            throw Failure("no $top.root naming one of the \(objects.count) objects")
        }
        list = parsed
        self.objects = objects
        self.root = root
    }

    /// The archived object with UID `uid`.
    package func object(_ uid: Int) throws(Failure) -> BinaryPropertyList.Item {
        guard uid >= 0, uid < objects.count else { throw Failure("UID \(uid) names none of the \(objects.count) objects") }
        return list.items[objects[uid]]
    }

    /// Whether UID `uid` is the archive's nil (`$null`).
    package func isNull(_ uid: Int) throws(Failure) -> Bool { try object(uid) == .string("$null") && uid == 0 }

    /// The value under `key` of object `uid` (a dictionary of an archived
    /// class), as its item; nil when the object has no such key.
    package func field(_ key: String, of uid: Int) throws(Failure) -> BinaryPropertyList.Item? {
        guard case .dictionary(let keys, let values) = try object(uid) else { return nil }
        // Archived objects have a few keys each (collections keep theirs in arrays): a long key list is read once, not per value.
        guard keys.count <= Self.maximumKeys else { throw Failure("object \(uid) has \(keys.count) keys; an archived object has at most \(Self.maximumKeys)") }
        return zip(keys, values).first { list.items[$0.0] == .string(key) }.map { list.items[$0.1] }
    }

    /// The name of object `uid`'s class (`$class.$classname`); nil for an object stored as a plain property-list item.
    package func className(of uid: Int) throws(Failure) -> String? {
        guard let classItem = try field("$class", of: uid) else { return nil }
        guard case .uid(let classUID) = classItem, case .string(let name)? = try field("$classname", of: classUID) else {
            throw Failure("object \(uid): its $class names no class")
        }
        return name
    }

    /// The root object as an Amber value.
    package func rootValue() throws(Failure) -> Value {
        var budget = Self.maximumValues, path: Set<Int> = []
        return try value(root, depth: 0, path: &path, budget: &budget)
    }

    /// Object `uid` as an Amber value.
    package func value(_ uid: Int) throws(Failure) -> Value {
        var budget = Self.maximumValues, path: Set<Int> = []
        return try value(uid, depth: 0, path: &path, budget: &budget)
    }

    private func value(_ uid: Int, depth: Int, path: inout Set<Int>, budget: inout Int) throws(Failure) -> Value {
        guard depth < Self.maximumDepth else { throw Failure("nested deeper than \(Self.maximumDepth) levels") }
        budget -= 1
        guard budget >= 0 else { throw Failure("more than \(Self.maximumValues) values") }
        if uid == 0, try isNull(uid) { return .null }
        guard path.insert(uid).inserted else { throw Failure("object \(uid) contains itself") }
        defer { path.remove(uid) }
        func member(_ item: BinaryPropertyList.Item, _ place: String) throws(Failure) -> Value {
            guard case .uid(let next) = item else { throw Failure("object \(uid): \(place) is not a reference") }
            return try value(next, depth: depth + 1, path: &path, budget: &budget)
        }
        /// A date, unless it is one no binding reads back (NaN, outside the years 1 to 9999).
        func date(_ seconds: Double) throws(Failure) -> Value {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            if let problem = DateText.problem(date) { throw Failure("object \(uid): \(problem)") }
            return .date(date)
        }
        func members(_ key: String) throws(Failure) -> [Value] {
            guard case .array(let items)? = try field(key, of: uid) else { throw Failure("object \(uid): no \(key) array") }
            var found: [Value] = []
            for (i, item) in items.enumerated() { found.append(try member(list.items[item], "\(key)[\(i)]")) }
            return found
        }
        let item = try object(uid)
        guard let name = try className(of: uid) else {
            switch item {
            case .string(let text): return .string(text)
            case .int(let number): return .int(number)
            case .real(let number): return .double(number)
            case .float(let number): return .float(number)
            case .bool(let flag): return .bool(flag)
            case .data(let bytes): return .binary(bytes)
            case .date(let seconds): return try date(seconds)
            default: throw Failure("object \(uid) is neither a value nor an archived object")
            }
        }
        switch name {
        case "NSString", "NSMutableString":
            guard case .string(let text)? = try field("NS.string", of: uid) else { throw Failure("object \(uid): an \(name) without NS.string") }
            return .string(text)
        case "NSData", "NSMutableData":
            guard case .data(let bytes)? = try field("NS.bytes", of: uid) else { throw Failure("object \(uid): an \(name) without NS.bytes") }
            return .binary(bytes)
        case "NSDate":
            guard let time = try field("NS.time", of: uid) else { throw Failure("object \(uid): an NSDate without NS.time") }
            switch time {
            case .real(let seconds), .date(let seconds): return try date(seconds)
            case .float(let seconds): return try date(Double(seconds))
            case .int(let seconds): return try date(Double(seconds))
            default: throw Failure("object \(uid): an NSDate whose NS.time is not a number")
            }
        case "NSUUID":
            guard case .data(let bytes)? = try field("NS.uuidbytes", of: uid), bytes.count == 16 else {
                throw Failure("object \(uid): an NSUUID without 16 NS.uuidbytes")
            }
            return .uuid(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
        case "NSURL":
            guard let relative = try field("NS.relative", of: uid), case .string(let text) = try member(relative, "NS.relative") else {
                throw Failure("object \(uid): an NSURL without NS.relative text")
            }
            // The base, when there is one, is an archived URL itself (or a string, as some archivers write it).
            var base: URL?
            if let baseItem = try field("NS.base", of: uid) {
                switch try member(baseItem, "NS.base") {
                case .null: break
                case .uri(let url): base = url
                case .string(let text): base = URL(string: text)
                default: throw Failure("object \(uid): an NSURL whose NS.base is not a URL")
                }
            }
            guard let url = URL(string: text, relativeTo: base)?.absoluteURL else { throw Failure("object \(uid): \"\(text)\" is not a URL") }
            return .uri(url)
        case "NSNull":
            return .null
        case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet":
            return .array(try members("NS.objects"))
        case "NSDictionary", "NSMutableDictionary":
            let keys = try members("NS.keys"), values = try members("NS.objects")
            guard keys.count == values.count else { throw Failure("object \(uid): \(keys.count) keys for \(values.count) values") }
            var dictionary: [String: Value] = [:]
            for (key, value) in zip(keys, values) {
                guard case .string(let text) = key else { throw Failure("object \(uid): a dictionary key that is not a string: \(key)") }
                guard dictionary.updateValue(value, forKey: text) == nil else { throw Failure("object \(uid): the key \"\(text)\" twice") }
            }
            return .dictionary(dictionary)
        default:
            throw Failure("object \(uid) is an archived \(name), which is not a property-list class Amber reads", unreadClass: name)
        }
    }
}
