import AmberTransformers
import AmberValues
import Foundation

/// A Core Data model from Xcode, read into an Amber model description.
///
/// Reads the `contents` file that Xcode keeps inside a `.xcdatamodel`
/// folder. Everything Amber honours is mapped; everything it does not, or
/// maps to another form, is listed in ``notes``, each with its place. The
/// model is not bound yet: bind it with ``Model/init(_:registry:)`` (using
/// the registry of ``XcodeImportOptions/registry``), which checks names,
/// transformers and expressions and reports every problem at once.
///
/// ```swift
/// let imported = try XcodeModelImport(contentsOf: URL(fileURLWithPath: "Notes.xcdatamodeld"))
/// for note in imported.notes { print("note: \(note)") }
/// let model = try Model(imported.model)
/// ```
public struct XcodeModelImport: Sendable {
    /// The imported model.
    public let model: ModelDescription
    /// What Amber does differently from the Xcode model, in document order.
    public let notes: [XcodeImportNote]

    /// Imports the model at `url`: a `.xcdatamodeld` bundle (its current
    /// version), a `.xcdatamodel` folder, or a `contents` (XML) file.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   naming the file, the line and the element being read, for a file
    ///   that cannot be read, malformed XML, or a model Amber cannot import
    ///   (an unknown attribute type, a missing name).
    public init(contentsOf url: URL, options: XcodeImportOptions = XcodeImportOptions()) throws(AmberError) {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
        if exists && isDirectory.boolValue && url.pathExtension == XcodeModelBundle.bundleExtension {
            self = try XcodeModelBundle(contentsOf: url, options: options).current
            return
        }
        let file = exists && isDirectory.boolValue ? url.appendingPathComponent("contents") : url
        try self.init(xml: try Self.read(file), file: file.path, options: options)
    }

    /// Imports version `version` (with or without `.xcdatamodel`) of the
    /// `.xcdatamodeld` bundle at `url`, whichever version is current; the
    /// other versions are not read.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a bundle without that version (naming the versions it has) or a
    ///   version that does not import.
    public init(contentsOf url: URL, version: String, options: XcodeImportOptions = XcodeImportOptions()) throws(AmberError) {
        let folders = try XcodeModelBundle.versionFolders(in: url)
        let wanted = XcodeModelBundle.versionName(version)
        guard let folder = folders.first(where: { $0.name == wanted }) else {
            let names = folders.map(\.name)
            throw .invalidXcodeModel(file: url.path, line: 0, element: "model",
                                     message: "no version \"\(wanted)\" (the bundle has \(names.joined(separator: ", ")))"
                                        + AmberError.hint(nearestName(to: wanted, in: names)))
        }
        try self.init(contentsOf: folder.url, options: options)
    }

    /// Imports the model in `data`, the text of a `contents` file; `file`
    /// names it in errors.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   as ``init(contentsOf:options:)`` does.
    public init(xml data: Data, file: String = "contents", options: XcodeImportOptions = XcodeImportOptions()) throws(AmberError) {
        if let refusal = ModelLimits.refusal(bytes: data.count) { throw .invalidXcodeModel(file: file, line: 0, element: "model", message: refusal) }
        let root = try XMLTree.parse(data, file: file)
        let context = XcodeReadContext(file: file, options: options)
        var model = try XcodeModelReader(context).read(root)
        Self.screenFetchedProperties(of: &model, context: context, registry: options.registry)
        self.model = model
        self.notes = context.notes
    }

    /// Leaves out, each with a note, the fetched properties that would not
    /// bind (a predicate Amber does not read, a variable it does not fill):
    /// the rest of the model imports as it would without them. Checked on
    /// the model bound without its fetched properties; a model that does not
    /// bind at all keeps them, for binding to report with the rest.
    private static func screenFetchedProperties(of model: inout ModelDescription, context: XcodeReadContext, registry: Registry) {
        guard model.entities.contains(where: { !$0.fetchedProperties.isEmpty }) else { return }
        var bare = model
        for index in bare.entities.indices { bare.entities[index].fetchedProperties = [] }
        guard let bound = try? Model(bare, registry: registry) else { return }
        let byName = Dictionary(uniqueKeysWithValues: bound.entities.map { ($0.name, $0) })
        for index in model.entities.indices {
            let entityName = model.entities[index].name
            model.entities[index].fetchedProperties.removeAll { property in
                var problems: [ModelProblem] = []
                guard Model.bind(property, of: bound.entities[index], entities: bound.entities, byName: byName, problems: &problems) == nil else {
                    return false
                }
                context.note("\(entityName).\(property.name)",
                             "fetched property not imported: " + problems.map(\.message).joined(separator: "; "), .notHonoured)
                return true
            }
        }
    }

    /// This import with `note` after its own.
    package func noting(_ note: XcodeImportNote) -> XcodeModelImport {
        XcodeModelImport(model: model, notes: notes + [note])
    }

    private init(model: ModelDescription, notes: [XcodeImportNote]) {
        (self.model, self.notes) = (model, notes)
    }

    /// The bytes of `file`, or an error naming it.
    static func read(_ file: URL) throws(AmberError) -> Data {
        if let refusal = ModelLimits.refusal(fileAt: file) { throw .invalidXcodeModel(file: file.path, line: 0, element: "model", message: refusal) }
        do {
            return try Data(contentsOf: file)
        } catch {
            throw .invalidXcodeModel(file: file.path, line: 0, element: "model",
                                     message: "cannot read the file: \(error.localizedDescription)")
        }
    }
}

/// Every version of a `.xcdatamodeld` bundle, and which one is current.
///
/// Xcode keeps one `.xcdatamodel` folder per model version in the bundle and
/// names the current one in the bundle's `.xccurrentversion` property list.
public struct XcodeModelBundle: Sendable {
    /// One version of the model.
    public struct Version: Sendable {
        /// The version's name: its folder's name without `.xcdatamodel` (`Notes 2`).
        public let name: String
        /// The version, imported.
        public let imported: XcodeModelImport
    }

    /// The extension of a model bundle.
    static let bundleExtension = "xcdatamodeld"
    /// The extension of one version's folder.
    static let versionExtension = "xcdatamodel"
    /// The property list naming the current version, and its key.
    static let currentVersionFile = ".xccurrentversion"
    static let currentVersionKey = "_XCCurrentVersionName"

    /// Every version, in name order (numbers compared as numbers: `Notes 2` before `Notes 10`).
    public let versions: [Version]
    /// The name of the current version (as ``Version/name``).
    public let currentVersionName: String

    /// The current version.
    public var current: XcodeModelImport {
        // The initializer made sure the current version is among the versions.
        versions.first { $0.name == currentVersionName }?.imported ?? versions[0].imported
    }

    /// The version named `name` (with or without `.xcdatamodel`).
    public func version(named name: String) -> XcodeModelImport? {
        let wanted = Self.versionName(name)
        return versions.first { $0.name == wanted }?.imported
    }

    /// Reads every version of the bundle at `url` and its current version's name.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a bundle without versions, a version that does not import, or a
    ///   current version that cannot be told: `.xccurrentversion` missing or
    ///   unreadable while there are several versions, or naming none of them.
    public init(contentsOf url: URL, options: XcodeImportOptions = XcodeImportOptions()) throws(AmberError) {
        var versions: [Version] = []
        for folder in try Self.versionFolders(in: url) {
            versions.append(Version(name: folder.name, imported: try XcodeModelImport(contentsOf: folder.url, options: options)))
        }
        self.versions = versions
        self.currentVersionName = try Self.currentVersion(in: url, among: versions.map(\.name))
    }

    /// The version folders of the bundle at `url`, by version name (numbers
    /// compared as numbers), with their names.
    static func versionFolders(in url: URL) throws(AmberError) -> [(name: String, url: URL)] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path)
                .filter { $0.hasSuffix("." + versionExtension) }
        } catch {
            throw .invalidXcodeModel(file: url.path, line: 0, element: "model",
                                     message: "cannot read the bundle: \(error.localizedDescription)")
        }
        guard !names.isEmpty else {
            throw .invalidXcodeModel(file: url.path, line: 0, element: "model",
                                     message: "the bundle holds no .\(versionExtension) version")
        }
        // By version name, so `Notes` comes before `Notes 2` (a space sorts before the extension's dot).
        let folders = names.map { (name: versionName($0), url: url.appendingPathComponent($0)) }
        return folders.sorted { first, second in
            let order = first.name.compare(second.name, options: [.numeric])
            return order == .orderedSame ? first.name < second.name : order == .orderedAscending
        }
    }

    /// `Notes 2.xcdatamodel` → `Notes 2`.
    static func versionName(_ text: String) -> String {
        let suffix = "." + versionExtension
        return text.hasSuffix(suffix) ? String(text.dropLast(suffix.count)) : text
    }

    /// The current version's name, from the bundle's `.xccurrentversion`.
    private static func currentVersion(in bundle: URL, among names: [String]) throws(AmberError) -> String {
        let file = bundle.appendingPathComponent(currentVersionFile)
        func failure(_ message: String) -> AmberError {
            .invalidXcodeModel(file: file.path, line: 0, element: currentVersionKey, message: message)
        }
        guard FileManager.default.fileExists(atPath: file.path) else {
            // One version needs no pointer; several do.
            if names.count == 1 { return names[0] }
            throw failure("missing: the bundle has \(names.count) versions (\(names.joined(separator: ", "))) and no \(currentVersionFile) to say which is current")
        }
        let data = try XcodeModelImport.read(file)
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw failure("not a property list: \(error.localizedDescription)")
        }
        guard let dictionary = plist as? [String: Any], let value = dictionary[currentVersionKey] as? String else {
            throw failure("the property list has no string \(currentVersionKey)")
        }
        let name = versionName(value)
        guard names.contains(name) else {
            throw failure("names version \"\(name)\", which the bundle does not hold" + AmberError.hint(nearestName(to: name, in: names)))
        }
        return name
    }
}
