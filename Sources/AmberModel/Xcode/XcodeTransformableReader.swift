import AmberTransformers
import AmberValues
import Foundation

/// Finishes a Transformable or Composite attribute: which transformer
/// chain stores it and which value class its values must have, from
/// Xcode's `valueTransformerName` and `customClassName`.
///
/// Rules (docs/xcode-models.md has them as a table): the secure unarchiver
/// and the insecure ones become Amber's default archive, which keeps
/// plist-like values only; other transformer names must be registered
/// (a module-qualified name is read as its short name when only that is);
/// Foundation and Swift class names become Amber's built-in classes; a
/// class Amber does not know leaves the values unchecked, with a note.
struct XcodeTransformableReader {
    let context: XcodeReadContext

    /// Names of Core Data's secure unarchiver: Amber's archive takes its place.
    static let secureUnarchivers: Set<String> = ["NSSecureUnarchiveFromData", "NSSecureUnarchiveFromDataTransformer",
                                                 "NSSecureUnarchiveFromDataTransformerName"]
    /// Core Data's older unarchivers, which decode any class: Amber's archive takes their place too.
    static let insecureUnarchivers: Set<String> = ["NSKeyedUnarchiveFromData", "NSUnarchiveFromData",
                                                   "NSKeyedUnarchiveFromDataTransformerName", "NSUnarchiveFromDataTransformerName"]

    /// What a Foundation or Swift class name stands for in Amber.
    enum ClassMeaning: Equatable {
        /// One of Amber's built-in classes.
        case builtin(ValueClass)
        /// Any plist-like value (NSNumber: a Boolean, an integer or a real).
        case plist
        /// A set: Amber has no set values, so an array.
        case set
    }

    static let foundationClasses: [String: ClassMeaning] = [
        "NSString": .builtin(.string), "NSMutableString": .builtin(.string), "String": .builtin(.string),
        "NSData": .builtin(.binary), "NSMutableData": .builtin(.binary), "Data": .builtin(.binary),
        "NSDate": .builtin(.date), "Date": .builtin(.date),
        "NSURL": .builtin(.uri), "URL": .builtin(.uri),
        "NSUUID": .builtin(.uuid), "UUID": .builtin(.uuid),
        "NSDecimalNumber": .builtin(.decimal), "Decimal": .builtin(.decimal),
        "NSNumber": .plist,
        "NSArray": .builtin(.array), "NSMutableArray": .builtin(.array), "Array": .builtin(.array),
        "NSDictionary": .builtin(.dictionary), "NSMutableDictionary": .builtin(.dictionary), "Dictionary": .builtin(.dictionary),
        "NSSet": .set, "NSMutableSet": .set, "Set": .set, "NSOrderedSet": .set, "NSMutableOrderedSet": .set,
    ]

    /// How an attribute's values are stored.
    private enum Storage {
        /// Amber's default archive (an empty chain).
        case archive
        /// The transformer registered (or not) under `name`.
        case transformer(name: String, registered: Transformer?)
    }

    /// What the attribute's `customClassName` resolved to.
    private enum ClassChoice {
        case none
        case meaning(ClassMeaning, written: String)
        /// A class the registry knows, under `name`.
        case known(name: String)
        case unknown(written: String)
    }

    // MARK: Transformable

    /// Sets `attribute`'s transformer chain and value class from `node`.
    func transformable(_ attribute: inout AttributeDescription, node: XMLNode, place: String) {
        if attribute.isTransient {
            let written = node["valueTransformerName"]?.trimmingCharacters(in: .whitespaces) ?? ""
            let choice = classChoice(node["customClassName"], place: place)
            transient(&attribute, transformer: written.isEmpty ? nil : written, choice: choice, place: place)
            return
        }
        let choice = classChoice(node["customClassName"], place: place)
        // A class the registry knows cannot go through the archive: the note about it says so, and what to do,
        // so the archive is not also announced as where its values are stored.
        let known = if case .known = choice { true } else { false }
        let storage = self.storage(node["valueTransformerName"], place: place, announcingArchive: !known)
        switch storage {
        case .archive:
            attribute.transformerNames = []
            archived(&attribute, choice: choice, place: place)
        case .transformer(let name, let registered):
            attribute.transformerNames = [name]
            attribute.valueClassName = transformed(choice, transformer: name, registered: registered, place: place)
        }
    }

    /// A Composite attribute: a transformable dictionary of its fields, through the default archive.
    func composite(_ attribute: inout AttributeDescription, node: XMLNode, place: String, composites: [String: XMLNode]) {
        let name = node["composite"] ?? ""
        var described = "a composite"
        if name.isEmpty {
            described = "a composite with no composite=\"…\" name"
        } else if composites[name] == nil {
            described = "composite \(name), which the model does not define,"
        } else {
            var visited: Set<String> = []
            described = "composite \(name) (\(Self.fields(of: name, in: composites, depth: 0, visited: &visited)))"
        }
        if attribute.isTransient {
            attribute.type = .undefined
            context.note(place, "\(described) is imported as a transient undefined attribute: values are held as dictionaries of the fields, never stored, and the fields are not checked", .mapped)
        } else {
            context.note(place, "\(described) is imported as a transformable attribute: values are dictionaries of the fields, stored through Amber's archive; the fields are not checked", .mapped)
        }
    }

    /// `one, two, three: Composite1 (none)`: a composite's fields, nested
    /// composites in parentheses, at most eight levels deep; each composite
    /// is spelled out once per note (a repeat reads "as above"), so a file
    /// nesting many composites many times cannot make the text explode.
    private static func fields(of name: String, in composites: [String: XMLNode], depth: Int, visited: inout Set<String>) -> String {
        guard let node = composites[name] else { return "not defined" }
        guard depth < 8 else { return "…" }
        guard visited.insert(name).inserted else { return "as above" }
        var names: [String] = []
        for field in node.children(named: "attribute") {
            let fieldName = field["name"] ?? "?"
            guard field["attributeType"] == "Composite", let nested = field["composite"] else {
                names.append(fieldName)
                continue
            }
            names.append("\(fieldName): \(nested) (\(fields(of: nested, in: composites, depth: depth + 1, visited: &visited)))")
        }
        return names.isEmpty ? "no fields" : "fields " + names.joined(separator: ", ")
    }

    // MARK: Transformer names

    private func storage(_ written: String?, place: String, announcingArchive: Bool) -> Storage {
        guard let written = written?.trimmingCharacters(in: .whitespaces), !written.isEmpty else {
            if announcingArchive {
                context.note(place, "no value transformer named: values are stored through Amber's archive (AmberArchive), which keeps plist-like values only",
                             .mapped)
            }
            return .archive
        }
        let (module, short) = Self.split(written)
        if Self.secureUnarchivers.contains(short) { return .archive }
        let subclasses = context.options.secureUnarchiverSubclasses
        if subclasses.contains(written) || subclasses.contains(short) {
            context.note(place, "transformer \(written) (a secure unarchiver subclass, as told) is replaced by Amber's archive, which keeps plist-like values only",
                         .mapped)
            return .archive
        }
        if Self.insecureUnarchivers.contains(short) {
            context.note(place, "transformer \(written) is replaced by Amber's archive, which decodes plist-like values only, never arbitrary classes",
                         .mapped)
            return .archive
        }
        if let registered = context.scope.transformers[written]?.item { return .transformer(name: written, registered: registered) }
        let registered = context.scope.transformers[short]?.item
        if let module {
            // A registered name is an identifier, so a dotted name can only be found by its short name.
            context.note(place, "transformer \(written) read as \(short), module \(module)" + (registered == nil ? " (no transformer of that name is registered yet)" : ""),
                         .renamed)
        }
        return .transformer(name: short, registered: registered)
    }

    // MARK: Class names

    private func classChoice(_ written: String?, place: String) -> ClassChoice {
        guard let written = written?.trimmingCharacters(in: .whitespaces), !written.isEmpty else { return .none }
        var text = written
        while text.hasSuffix("?") || text.hasSuffix("!") { text.removeLast() }
        if text.hasPrefix("[") && text.hasSuffix("]") {
            return .meaning(Self.isDictionaryLiteral(text) ? .builtin(.dictionary) : .builtin(.array), written: written)
        }
        let base = text.split(separator: "<", maxSplits: 1).first.map(String.init) ?? text
        let (module, short) = Self.split(base)
        if let meaning = Self.foundationClasses[short] { return .meaning(meaning, written: written) }
        // Amber's own class names (`Boolean`, `URI`, `PropertyList`), as a JSON model would write them.
        if base == ValueClass.propertyListName { return .meaning(.plist, written: written) }
        if let builtin = ValueClass(rawValue: base), builtin != .custom { return .meaning(.builtin(builtin), written: written) }
        // Generic arguments are not part of a class's name here (`Box<Int>` is a `Box`).
        if context.scope.resolve(base) != nil && Identifier.isValid(base) { return .known(name: base) }
        if module != nil && context.scope.resolve(short) != nil {
            context.note(place, "class \(written) read as \(short), module \(module ?? "")", .renamed)
            return .known(name: short)
        }
        return .unknown(written: written)
    }

    /// A set class becomes Array, and says so.
    private func arrayForSet(_ written: String, place: String) -> String {
        context.note(place, "class \(written): Amber has no set values; values are arrays", .mapped)
        return ValueClass.array.rawValue
    }

    /// A class Amber checks more loosely than Core Data would (NSNumber: any plist-like value) is said so.
    private func noteLooserClass(_ written: String, place: String) {
        guard written != ValueClass.propertyListName else { return }
        context.note(place, "class \(written) has no Amber class of its own: values are checked as plist-like (numbers, but also strings, arrays, …)",
                     .mapped)
    }

    /// Stored through the default archive: the value class must be plist-like.
    private func archived(_ attribute: inout AttributeDescription, choice: ClassChoice, place: String) {
        switch choice {
        case .none:
            break
        case .meaning(.plist, let written):
            noteLooserClass(written, place: place)
        case .meaning(.builtin(let builtin), let written) where builtin == .uri || builtin == .decimal:
            // URLs and decimals are not plist-like; Amber has attribute types that store them exactly.
            let type: AttributeType = builtin == .uri ? .uri : .decimal
            attribute.type = type
            context.note(place, "a Transformable of class \(written) is imported as a \(type) attribute (Amber's archive keeps plist-like values only)",
                         .mapped)
        case .meaning(.builtin(let builtin), _):
            attribute.valueClassName = builtin.rawValue
        case .meaning(.set, let written):
            attribute.valueClassName = arrayForSet(written, place: place)
        case .known(let name):
            attribute.valueClassName = name
            context.note(place, "value class \(name) is not plist-like, so Amber's archive cannot store it: name a transformer from \(name) to a storable class (transformer in the JSON model, or valueTransformerName in Xcode)",
                         .mapped)
        case .unknown(let written):
            context.note(place, uncheckedClass(written), .mapped)
        }
    }

    /// Stored through a named transformer: the value class is what the transformer takes.
    private func transformed(_ choice: ClassChoice, transformer: String, registered: Transformer?, place: String) -> String? {
        switch choice {
        case .none:
            return nil
        case .meaning(.plist, let written):
            noteLooserClass(written, place: place)
            return nil
        case .meaning(.builtin(let builtin), _):
            return builtin.rawValue
        case .meaning(.set, let written):
            return arrayForSet(written, place: place)
        case .known(let name):
            return name
        case .unknown(let written):
            guard let registered else {
                context.note(place, uncheckedClass(written), .mapped)
                return nil
            }
            context.note(place, "class \(written) is not a value class Amber knows; values are of the class transformer \(transformer) takes, \(registered.inputClass)",
                         .mapped)
            return registered.inputClass
        }
    }

    /// An Undefined attribute (transient, in Core Data as in Amber): its
    /// `customClassName`, when Amber knows the class, becomes its value class.
    func undefined(_ attribute: inout AttributeDescription, node: XMLNode, place: String) {
        if node["valueTransformerName"] != nil {
            context.note(place, "valueTransformerName is not kept on an Undefined attribute: it is never stored", .notHonoured)
        }
        switch classChoice(node["customClassName"], place: place) {
        case .none, .meaning(.plist, _):
            break
        case .meaning(.builtin(let builtin), _):
            attribute.valueClassName = builtin.rawValue
        case .meaning(.set, let written):
            attribute.valueClassName = arrayForSet(written, place: place)
        case .known(let name):
            attribute.valueClassName = name
        case .unknown(let written):
            context.note(place, "class \(written) is not a value class Amber knows, so the attribute holds any value", .mapped)
        }
    }

    /// A transient Transformable is never stored, so Amber holds it as a transient undefined attribute.
    private func transient(_ attribute: inout AttributeDescription, transformer: String?, choice: ClassChoice, place: String) {
        attribute.type = .undefined
        attribute.transformerNames = []
        var message = "a transient Transformable is imported as a transient undefined attribute (never stored, so no transformer runs)"
        if let transformer { message += "; transformer \(transformer) is not used" }
        switch choice {
        case .none, .meaning(.plist, _):
            message += "; it holds any value"
        case .meaning(.builtin(let builtin), _):
            attribute.valueClassName = builtin.rawValue
        case .meaning(.set, let written):
            attribute.valueClassName = ValueClass.array.rawValue
            message += "; class \(written): Amber has no set values, so values are arrays"
        case .known(let name):
            attribute.valueClassName = name
        case .unknown(let written):
            message += "; class \(written) is not a value class Amber knows, so it holds any value"
        }
        context.note(place, message, .mapped)
    }

    private func uncheckedClass(_ written: String) -> String {
        "values are not checked against class \(written), which Amber does not know; they must be plist-like (Amber's archive). "
            + "To check them, declare a value class and a transformer for it (Swift, C or a plugin) and name both in the JSON model"
    }

    // MARK: Name forms

    /// `MyApp.ColorTransformer` → (`MyApp`, `ColorTransformer`); a name without a module → (nil, name).
    static func split(_ name: String) -> (module: String?, short: String) {
        guard let dot = name.lastIndex(of: ".") else { return (nil, name) }
        let short = String(name[name.index(after: dot)...])
        return short.isEmpty ? (nil, name) : (String(name[..<dot]), short)
    }

    /// Whether `[K: V]` (a dictionary) rather than `[X]` (an array): a colon outside nested brackets.
    static func isDictionaryLiteral(_ text: String) -> Bool {
        var depth = 0
        for character in text {
            switch character {
            case "[", "<", "(": depth += 1
            case "]", ">", ")": depth -= 1
            case ":" where depth == 1: return true
            default: break
            }
        }
        return false
    }
}
