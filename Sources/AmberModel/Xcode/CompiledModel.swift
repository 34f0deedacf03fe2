import AmberTransformers
import AmberValues
import Foundation

/// Core Data's compiled model: the `NSKeyedArchiver` archive of an
/// `NSManagedObjectModel` that Core Data keeps in a store's `Z_MODELCACHE`
/// (and in an app's `.mom` files). It is read into the `contents` XML that
/// Xcode writes for the same model and imported by the same rules, so a
/// model read from a store means what the app's Xcode model means; what the
/// archive holds that the XML cannot say is noted here.
extension XcodeModelImport {
    /// Imports the compiled model in `data` (the archive, already inflated);
    /// `file` names it in errors and notes.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for an archive that cannot be read or is not a managed object model.
    public init(compiledModel data: Data, file: String, options: XcodeImportOptions = XcodeImportOptions()) throws(AmberError) {
        var reader: CompiledModelReader
        do {
            reader = CompiledModelReader(archive: try KeyedArchive(data))
        } catch {
            throw .invalidXcodeModel(file: file, line: 0, element: "model", message: "not a compiled model: \(error)")
        }
        let xml: String
        do {
            xml = try reader.xml()
        } catch {
            throw .invalidXcodeModel(file: file, line: 0, element: "model", message: "a compiled model Amber cannot read: \(error)")
        }
        let imported = try XcodeModelImport(xml: Data(xml.utf8), file: file, options: options)
        model = imported.model
        notes = reader.notes + imported.notes
    }
}

/// Writes the Xcode XML of the model a compiled model's archive holds.
struct CompiledModelReader {
    let archive: KeyedArchive
    /// What the archive holds that the XML does not carry.
    var notes: [XcodeImportNote] = []

    init(archive: KeyedArchive) { self.archive = archive }

    typealias Failure = KeyedArchive.Failure

    /// Core Data's attribute type codes, as Xcode names the types.
    private static let attributeTypes: [Int64: String] = [
        0: "Undefined", 100: "Integer 16", 200: "Integer 32", 300: "Integer 64", 400: "Decimal", 500: "Double", 600: "Float",
        700: "String", 800: "Boolean", 900: "Date", 1000: "Binary", 1100: "UUID", 1200: "URI", 1800: "Transformable", 2000: "ObjectID",
    ]
    private static let deleteRules: [Int64: String] = [0: "No Action", 1: "Nullify", 2: "Cascade", 3: "Deny"]

    mutating func xml() throws(Failure) -> String {
        guard try archive.className(of: archive.root) == "NSManagedObjectModel" else { throw Failure("the root object is not an NSManagedObjectModel") }
        let entities = try members(try reference("NSEntities", of: archive.root), keyed: "values")
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>",
                     "<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\">"]
        for entity in entities { lines += try self.entity(entity) }
        if let templates = try reference("NSFetchRequestTemplates", of: archive.root), try !members(templates).isEmpty {
            notes.append(XcodeImportNote(place: "model", message: "fetch request templates of a compiled model are not read", kind: .notHonoured))
        }
        return (lines + ["</model>"]).joined(separator: "\n")
    }

    /// The `<entity>` element of entity `uid`, with its properties and uniqueness constraints.
    private mutating func entity(_ uid: Int) throws(Failure) -> [String] {
        let name = try text("NSEntityName", of: uid) ?? ""
        var element = ["name": name]
        var inherited: Set<String> = []
        if let parent = try reference("NSSuperentity", of: uid) {
            element["parentEntity"] = try text("NSEntityName", of: parent)
            inherited = Set(try properties(of: parent).map(\.name))
        }
        if try flag("NSIsAbstract", of: uid) { element["isAbstract"] = "YES" }
        var lines = ["<entity \(Self.attributes(element))>"]
        for (property, propertyUID) in try properties(of: uid) where !inherited.contains(property) {
            if let line = try self.property(propertyUID, name: property, entity: name) { lines.append(line) }
        }
        if let tuples = try reference("NSUniqueTuples", of: uid) {
            let constraints = try members(tuples).map { (tuple) throws(Failure) -> [String] in
                try members(tuple).map { (member) throws(Failure) -> String in
                    if case .string(let text) = try archive.object(member) { return text }
                    return try text("NSPropertyName", of: member) ?? ""
                }
            }
            if !constraints.isEmpty {
                lines.append("<uniquenessConstraints>")
                for constraint in constraints {
                    lines.append("<uniquenessConstraint>" + constraint.map { "<constraint \(Self.attributes(["value": $0]))/>" }.joined() + "</uniquenessConstraint>")
                }
                lines.append("</uniquenessConstraints>")
            }
        }
        return lines + ["</entity>"]
    }

    /// The element of property `uid` of entity `entity`; nil (with a note) for a kind the XML import does not keep.
    private mutating func property(_ uid: Int, name: String, entity: String) throws(Failure) -> String? {
        let place = "\(entity).\(name)"
        var element = ["name": name]
        if try flag("NSIsOptional", of: uid) { element["optional"] = "YES" }
        if try flag("NSIsTransient", of: uid) { element["transient"] = "YES" }
        switch try archive.className(of: uid) {
        case "NSAttributeDescription", "NSDerivedAttributeDescription":
            let code = try integer("NSAttributeType", of: uid) ?? 0
            guard let type = Self.attributeTypes[code] else { throw Failure("\(place): attribute type \(code)") }
            element["attributeType"] = type
            if let transformer = try text("NSValueTransformerName", of: uid) { element["valueTransformerName"] = transformer }
            if type == "Transformable" || type == "Undefined", let className = try text("NSAttributeValueClassName", of: uid) {
                element["customClassName"] = className
            }
            try defaultValue(of: uid, into: &element, place: place)
            if let expression = try reference("NSDerivationExpression", of: uid) {
                if let derivation = try derivation(expression) {
                    element["derived"] = "YES"
                    element["derivationExpression"] = derivation
                } else {
                    notes.append(XcodeImportNote(place: place, message: "its derivation is not one Amber reads from a compiled model; "
                        + "it is read as a stored attribute (Core Data's triggers keep it in the store)", kind: .notHonoured))
                }
            }
            if try reference("NSValidationPredicates", of: uid).map({ (list) throws(Failure) in try !members(list).isEmpty }) == true {
                notes.append(XcodeImportNote(place: place, message: "validation predicates of a compiled model are not read", kind: .notHonoured))
            }
            return "<attribute \(Self.attributes(element))/>"
        case "NSRelationshipDescription":
            guard let destination = try reference("NSDestinationEntity", of: uid), let target = try text("NSEntityName", of: destination) else {
                throw Failure("\(place): a relationship without a destination")
            }
            element["destinationEntity"] = target
            if let inverse = try reference("NSInverseRelationship", of: uid), let inverseName = try text("NSPropertyName", of: inverse) {
                element["inverseName"] = inverseName
                element["inverseEntity"] = target
            }
            let maximum = try integer("NSMaxCount", of: uid) ?? 0, minimum = try integer("NSMinCount", of: uid) ?? 0
            if maximum != 1 {
                element["toMany"] = "YES"
                if maximum > 1 { element["maxCount"] = String(maximum) }
                if minimum > 0 { element["minCount"] = String(minimum) }
                if try flag("NSIsOrdered", of: uid) { element["ordered"] = "YES" }
            } else {
                element["maxCount"] = "1"
            }
            element["deletionRule"] = Self.deleteRules[try integer("NSDeleteRule", of: uid) ?? 1] ?? "Nullify"
            return "<relationship \(Self.attributes(element))/>"
        case let other:
            let kind = other == "NSFetchedPropertyDescription" ? "a fetched property" : "a property of class \(other ?? "unknown")"
            notes.append(XcodeImportNote(place: place, message: "\(kind) in a compiled model is not read", kind: .notHonoured))
            return nil
        }
    }

    /// Sets `defaultValueString` (or `defaultDateTimeInterval`) from the archived default, or notes one it cannot write.
    private mutating func defaultValue(of uid: Int, into element: inout [String: String], place: String) throws(Failure) {
        let value: Value
        if let reference = try reference("NSDefaultValue", of: uid) {
            // A default is a number, text or a date; anything else (an object of the app's own class, a collection) is noted.
            let className = try archive.className(of: reference)
            guard className == nil || className == "NSDate", let read = try? archive.value(reference) else {
                notes.append(XcodeImportNote(place: place, message: "its default value (an archived object) is not kept", kind: .notHonoured))
                return
            }
            value = read
        } else if let item = try field("NSDefaultValue", of: uid), let scalar = Self.scalar(item) {
            value = scalar
        } else {
            return
        }
        switch value {
        case .null: break
        case .bool(let flag): element["defaultValueString"] = flag ? "YES" : "NO"
        case .int(let number): element["defaultValueString"] = String(number)
        case .double(let number): element["defaultValueString"] = String(number)
        case .string(let text): element["defaultValueString"] = text
        case .date(let date): element["defaultDateTimeInterval"] = String(date.timeIntervalSinceReferenceDate)
        default: notes.append(XcodeImportNote(place: place, message: "its default value (\(value)) is not kept", kind: .notHonoured))
        }
    }

    /// `pages.@count` for a count of a key path; nil for an expression of another shape.
    private func derivation(_ expression: Int) throws(Failure) -> String? {
        guard try archive.className(of: expression) == "NSFunctionExpression", try text("NSSelectorName", of: expression) == "count:",
              let arguments = try reference("NSArguments", of: expression), case let list = try members(arguments), list.count == 1,
              let path = try keyPath(list[0])
        else { return nil }
        return path + ".@count"
    }

    /// The key path an `NSKeyPathExpression` reads (`valueForKey:` with a key path specifier or a constant key).
    private func keyPath(_ expression: Int) throws(Failure) -> String? {
        guard try archive.className(of: expression) == "NSKeyPathExpression", let arguments = try reference("NSArguments", of: expression),
              case let list = try members(arguments), list.count == 1
        else { return nil }
        switch try archive.className(of: list[0]) {
        case "NSKeyPathSpecifierExpression": return try text("NSKeyPath", of: list[0])
        case "NSConstantValueExpression": return try text("NSConstantValue", of: list[0])
        default: return nil
        }
    }

    // MARK: Reading archived objects

    /// The property names and UIDs of entity `uid`, by name.
    private func properties(of uid: Int) throws(Failure) -> [(name: String, uid: Int)] {
        guard let dictionary = try reference("NSProperties", of: uid) else { return [] }
        let keys = try members(dictionary, keyed: "NS.keys"), values = try members(dictionary, keyed: "NS.objects")
        guard keys.count == values.count else { throw Failure("object \(dictionary): \(keys.count) property names for \(values.count) properties") }
        return try zip(keys, values).map { (pair) throws(Failure) -> (name: String, uid: Int) in
            guard case .string(let name) = try archive.object(pair.0) else { throw Failure("object \(pair.0): a property name that is not text") }
            return (name, pair.1)
        }.sorted { $0.name < $1.name }
    }

    private func field(_ key: String, of uid: Int) throws(Failure) -> BinaryPropertyList.Item? { try archive.field(key, of: uid) }

    /// The object `key` of `uid` refers to; nil when it is absent or `$null`.
    private func reference(_ key: String, of uid: Int) throws(Failure) -> Int? {
        guard case .uid(let target)? = try field(key, of: uid), try !archive.isNull(target) else { return nil }
        return target
    }

    /// The text `key` of `uid` holds (directly or by reference); nil when absent or `$null`.
    private func text(_ key: String, of uid: Int) throws(Failure) -> String? {
        switch try field(key, of: uid) {
        case .string(let text)?: return text
        case .uid(let target)?:
            guard try !archive.isNull(target) else { return nil }
            // Text only: a string, or an NSString (read without decoding anything else).
            if case .string(let text) = try archive.object(target) { return text }
            guard ["NSString", "NSMutableString"].contains(try archive.className(of: target)),
                  case .string(let text)? = try archive.field("NS.string", of: target) else { return nil }
            return text
        default: return nil
        }
    }

    private func integer(_ key: String, of uid: Int) throws(Failure) -> Int64? {
        switch try field(key, of: uid) {
        case .int(let number)?: return number
        case .uid(let target)?: if case .int(let number) = try archive.object(target) { return number }
        default: break
        }
        return nil
    }

    private func flag(_ key: String, of uid: Int) throws(Failure) -> Bool {
        switch try field(key, of: uid) {
        case .bool(let flag)?: return flag
        case .int(let number)?: return number != 0
        default: return false
        }
    }

    /// The UIDs a collection object holds under `keyed` (`NS.objects`, or a known-keys dictionary's `values` array).
    private func members(_ uid: Int?, keyed key: String = "NS.objects") throws(Failure) -> [Int] {
        guard let uid else { return [] }
        var list = try field(key, of: uid)
        if case .uid(let array)? = list { list = try field("NS.objects", of: array) }
        guard case .array(let items)? = list else {
            if key == "values" { return try members(uid) }
            throw Failure("object \(uid): no \(key) list")
        }
        return try items.map { (item) throws(Failure) -> Int in
            guard case .uid(let member) = archive.list.items[item] else { throw Failure("object \(uid): a member that is not a reference") }
            return member
        }
    }

    /// A default held as a plain item rather than by reference.
    private static func scalar(_ item: BinaryPropertyList.Item) -> Value? {
        switch item {
        case .bool(let flag): .bool(flag)
        case .int(let number): .int(number)
        case .real(let number): .double(number)
        case .float(let number): .double(Double(number))
        case .string(let text): .string(text)
        default: nil
        }
    }

    /// `a="1" b="2"`, sorted by name, each value escaped for XML.
    private static func attributes(_ values: [String: String]) -> String {
        values.sorted { $0.key < $1.key }.map { key, value in
            var escaped = ""
            for character in value.unicodeScalars {
                switch character {
                case "&": escaped += "&amp;"
                case "<": escaped += "&lt;"
                case ">": escaped += "&gt;"
                case "\"": escaped += "&quot;"
                case "\n": escaped += "&#10;"
                case "\r": escaped += "&#13;"
                case "\t": escaped += "&#9;"
                default: escaped.unicodeScalars.append(character)
                }
            }
            return "\(key)=\"\(escaped)\""
        }.joined(separator: " ")
    }
}
