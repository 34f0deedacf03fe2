import AmberValues
import Foundation

extension KeyedArchive {
    /// `value` as an `NSKeyedArchiver` archive of Foundation's property-list
    /// classes, as Core Data's secure unarchiver reads it: strings, numbers
    /// and data as plain items; dates, UUIDs, arrays, dictionaries and null
    /// as `NSDate`, `NSUUID`, `NSArray`, `NSDictionary` and `NSNull` objects.
    /// A `Float` stays a four-byte real, so it reads back as a `Float`;
    /// dictionary keys are written sorted, so equal values archive to equal bytes.
    ///
    /// - Throws: ``Failure`` for a value that is not plist-like (a decimal,
    ///   URI, object ID or custom value) or nested deeper than the reader reads.
    package static func archive(_ value: Value) throws(Failure) -> Data {
        var writer = Writer()
        let root = try writer.object(value, depth: 0)
        return writer.finished(root: root)
    }

    /// Builds the property list's flat item table while values are archived.
    private struct Writer {
        /// Every item of the property list.
        private var items: [BinaryPropertyList.Item] = []
        /// `$objects`: by UID, the item holding each archived object.
        private var objects: [Int] = []
        /// Items already written, so a string or class is held once.
        private var strings: [String: Int] = [:], classes: [String: Int] = [:], uids: [Int: Int] = [:]

        init() { objects.append(item(.string("$null"))) }

        private mutating func item(_ item: BinaryPropertyList.Item) -> Int {
            items.append(item)
            return items.count - 1
        }

        private mutating func string(_ text: String) -> Int {
            if let known = strings[text] { return known }
            let index = item(.string(text))
            strings[text] = index
            return index
        }

        /// The item of reference `uid`.
        private mutating func reference(_ uid: Int) -> Int {
            if let known = uids[uid] { return known }
            let index = item(.uid(uid))
            uids[uid] = index
            return index
        }

        /// Appends an archived object, returning its UID.
        private mutating func keep(_ index: Int) -> Int {
            objects.append(index)
            return objects.count - 1
        }

        /// The UID of the class object naming `name` (a subclass of NSObject).
        private mutating func classObject(_ name: String) -> Int {
            if let known = classes[name] { return known }
            let names = item(.array([string(name), string("NSObject")]))
            let uid = keep(item(.dictionary(keys: [string("$classes"), string("$classname")], values: [names, string(name)])))
            classes[name] = uid
            return uid
        }

        /// Archives an object of class `name` with `fields`, returning its UID.
        private mutating func instance(_ name: String, _ fields: [(String, Int)]) -> Int {
            let uid = keep(-1)
            let classUID = classObject(name)
            var keys = fields.map { string($0.0) }, values = fields.map(\.1)
            keys.append(string("$class"))
            values.append(reference(classUID))
            objects[uid] = item(.dictionary(keys: keys, values: values))
            return uid
        }

        /// Archives `value`, returning its UID.
        mutating func object(_ value: Value, depth: Int) throws(Failure) -> Int {
            guard depth < KeyedArchive.maximumDepth else { throw Failure("nested deeper than \(KeyedArchive.maximumDepth) levels") }
            switch value {
            case .null: return instance("NSNull", [])
            case .bool(let flag): return keep(item(.bool(flag)))
            case .int(let number): return keep(item(.int(number)))
            case .double(let number): return keep(item(.real(number)))
            case .float(let number): return keep(item(.float(number)))
            case .string(let text): return keep(string(text))
            case .binary(let bytes): return keep(item(.data(bytes)))
            case .date(let date): return instance("NSDate", [("NS.time", item(.real(date.timeIntervalSinceReferenceDate)))])
            case .uuid(let uuid): return instance("NSUUID", [("NS.uuidbytes", item(.data(withUnsafeBytes(of: uuid.uuid) { Data($0) })))])
            case .array(let members):
                var uids: [Int] = []
                for member in members { uids.append(try object(member, depth: depth + 1)) }
                return instance("NSArray", [("NS.objects", item(.array(uids.map { reference($0) })))])
            case .dictionary(let entries):
                var keys: [Int] = [], values: [Int] = []
                for (key, member) in entries.sorted(by: { $0.key < $1.key }) {
                    keys.append(reference(keep(string(key))))
                    values.append(reference(try object(member, depth: depth + 1)))
                }
                return instance("NSDictionary", [("NS.keys", item(.array(keys))), ("NS.objects", item(.array(values)))])
            case .decimal, .uri, .objectID, .custom:
                throw Failure("\(value.className) is not a property-list value a keyed archive holds")
            }
        }

        /// The archive's bytes, `root` its root object.
        mutating func finished(root: Int) -> Data {
            let objectList = item(.array(objects))
            let top = item(.dictionary(keys: [string("root")], values: [reference(root)]))
            let archive = item(.dictionary(keys: [string("$archiver"), string("$objects"), string("$top"), string("$version")],
                                           values: [string("NSKeyedArchiver"), objectList, top, item(.int(100_000))]))
            return BinaryPropertyList.encode(items, top: archive)
        }
    }
}
