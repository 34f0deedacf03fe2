import AmberTransformers
import AmberValues
import Foundation

/// What the readers of one import share: the file (for errors), the options
/// and the registry's names, and the notes collected so far.
final class XcodeReadContext {
    let file: String
    let options: XcodeImportOptions
    /// The registry's classes and transformers, as of the start of the import.
    let scope: ClassScope
    private(set) var notes: [XcodeImportNote] = []

    init(file: String, options: XcodeImportOptions) {
        self.file = file
        self.options = options
        self.scope = ClassScope(registry: options.registry.snapshot())
    }

    /// Adds a note.
    func note(_ place: String, _ message: String, _ kind: XcodeImportNote.Kind) {
        notes.append(XcodeImportNote(place: place, message: message, kind: kind))
    }

    /// An error about `node`, naming the file, its line and the element.
    func failure(_ node: XMLNode, _ message: String) -> AmberError {
        .invalidXcodeModel(file: file, line: node.line, element: node.label, message: message)
    }

    /// The value of `node`'s required XML attribute `key`.
    func required(_ key: String, of node: XMLNode) throws(AmberError) -> String {
        guard let value = node[key], !value.isEmpty else { throw failure(node, "missing \(key)=\"…\"") }
        return value
    }

    /// A YES/NO attribute; absent means NO, as Xcode writes only YES.
    func flag(_ key: String, of node: XMLNode) throws(AmberError) -> Bool {
        switch node[key] {
        case nil, "NO", "no", "false", "0": return false
        case "YES", "yes", "true", "1": return true
        case let other?: throw failure(node, "\(key)=\"\(other)\": expected YES or NO")
        }
    }

    /// A whole-number attribute (counts, limits), or nil when absent.
    func integer(_ key: String, of node: XMLNode) throws(AmberError) -> Int? {
        guard let text = node[key] else { return nil }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw failure(node, "\(key)=\"\(text)\": expected a whole number")
        }
        return value
    }

    /// Notes every XML attribute of `node` that is neither `handled` nor
    /// `ignored` (editor and code-generation settings); a newer Xcode's
    /// additions thus surface as notes, never as failures.
    func screenAttributes(of node: XMLNode, place: String, handled: Set<String>, ignored: Set<String> = []) {
        for key in node.attributes.keys.sorted() where !handled.contains(key) && !ignored.contains(key) && key != "name" {
            note(place, "unknown XML attribute \(key)=\"\(node.attributes[key] ?? "")\" on <\(node.name)> ignored (from a newer Xcode?)",
                 .unknownAttribute)
        }
    }

    /// Notes a child element the reader does not know.
    func unknownElement(_ child: XMLNode, in place: String) {
        note(place, "unknown element <\(child.label)> (line \(child.line)) ignored (from a newer Xcode?)", .unknownElement)
    }

    /// The entries of a `<userInfo>` child of `node` (several are merged; a later key wins).
    func userInfo(of node: XMLNode, place: String) throws(AmberError) -> [String: String] {
        var entries: [String: String] = [:]
        for info in node.children(named: "userInfo") {
            for entry in info.children {
                guard entry.name == "entry" else {
                    unknownElement(entry, in: place)
                    continue
                }
                entries[try required("key", of: entry)] = entry["value"] ?? ""
            }
        }
        return entries
    }
}

/// Names of XML attributes that only concern Xcode's editor, code generation
/// or tools; docs/xcode-models.md lists them as ignored by design.
enum XcodeIgnored {
    static let model: Set<String> = ["type", "documentVersion", "lastSavedToolsVersion", "systemVersion", "minimumToolsVersion",
                                     "sourceLanguage", "userDefinedModelVersionIdentifier", "macOSVersion", "iOSVersion",
                                     "watchOSVersion", "tvOSVersion", "usedWithSwiftData"]
    static let entity: Set<String> = ["representedClassName", "syncable", "codeGenerationType"]
    static let attribute: Set<String> = ["syncable", "usesScalarValueType"]
    /// `inverseEntity` repeats what the inverse relationship's own entity says.
    static let relationship: Set<String> = ["syncable", "inverseEntity"]
}
