import AmberValues
import Foundation
import Synchronization

/// The value classes and transformers models can name.
///
/// A model binds against one registry (``shared`` unless told otherwise) and
/// keeps what it resolved, so registering more later never changes a bound
/// model. Every registry starts with the built-in transformers
/// ``Registry/archiveTransformerName``, ``Registry/jsonTransformerName`` and
/// ``Registry/utf8TransformerName``.
/// Safe to use from any thread.
public final class Registry: Sendable {
    /// The process-wide registry.
    public static let shared = Registry()

    /// The default transformer of transformable attributes that name none: a
    /// compact, versioned binary archive of plist-like values.
    public static let archiveTransformerName = "AmberArchive"
    /// Plist-like values as JSON text, readable with SQLite's JSON functions.
    public static let jsonTransformerName = "JSON"
    /// A string as its UTF-8 bytes, to feed byte transformers such as compression.
    public static let utf8TransformerName = "UTF8"

    package struct Entry<T: Sendable>: Sendable {
        package let item: T
        package let source: String
    }

    package struct Contents: Sendable {
        var classes: [String: Entry<ResolvedClass>] = [:]
        var transformers: [String: Entry<Transformer>] = [:]
        package var functions: [String: Entry<ComputeFunction>] = [:]
    }

    private let contents: Mutex<Contents>

    /// A registry holding only the built-in transformers.
    public init() {
        var initial = Contents()
        for transformer in [PropertyListArchive.transformer, JSONTransformer.transformer, UTF8Transformer.transformer] {
            initial.transformers[transformer.name] = Entry(item: transformer, source: transformer.source)
        }
        contents = Mutex(initial)
    }

    /// Declares a custom value class. Struct classes are laid out now (libffi);
    /// nested struct classes must be declared first.
    ///
    /// - Throws: ``/AmberValues/AmberError/duplicateName(kind:name:existing:refused:)`` if
    ///   the name is taken; ``/AmberValues/AmberError/invalidDeclaration(place:message:)``
    ///   for a bad name or field.
    public func declare(_ description: ValueClassDescription, source: String = "Swift") throws(AmberError) {
        try contents.withLock { (contents) throws(AmberError) in
            if let existing = contents.classes[description.name] {
                throw .duplicateName(kind: "value class", name: description.name, existing: existing.source, refused: source)
            }
            let resolved = try ValueClassResolver.resolve(description) { contents.classes[$0]?.item }
            contents.classes[description.name] = Entry(item: resolved, source: source)
        }
    }

    /// Registers `transformer` under its name. Its classes need not exist yet;
    /// binding a model that uses it checks them.
    ///
    /// With `replacing`, a transformer already registered under the name (not
    /// a built-in one) is replaced, as a notebook cell run again expects:
    /// models bound from then on use the new one, models bound before keep
    /// the one they bound.
    ///
    /// - Throws: ``/AmberValues/AmberError/duplicateName(kind:name:existing:refused:)``
    ///   naming both sources if the name is taken (by a built-in transformer
    ///   or a function, even when replacing).
    public func register(_ transformer: Transformer, replacing: Bool = false) throws(AmberError) {
        guard Identifier.isValid(transformer.name) else {
            throw .invalidDeclaration(place: "transformer \"\(transformer.name)\"", message: Identifier.rule)
        }
        try contents.withLock { (contents) throws(AmberError) in
            if let existing = contents.transformers[transformer.name], !replacing || existing.source == "built-in" {
                throw .duplicateName(kind: "transformer", name: transformer.name, existing: existing.source,
                                     refused: transformer.source)
            }
            if let existing = contents.functions[transformer.name] {
                throw .duplicateName(kind: "transformer", name: transformer.name, existing: "function from \(existing.source)",
                                     refused: transformer.source)
            }
            contents.transformers[transformer.name] = Entry(item: transformer, source: transformer.source)
        }
    }

    /// Declares `classes` and registers `transformers` all at once, or
    /// nothing at all: the first problem (a name taken, a bad declaration, a
    /// transformer naming a class that does not exist) throws and leaves the
    /// registry as it was. `check` sees each declared struct class, so a
    /// caller can compare layouts before anything is committed.
    func registerAll(classes: [ValueClassDescription], transformers: [Transformer], source: String,
                     check: (ValueClassDescription, ResolvedClass) throws(AmberError) -> Void) throws(AmberError)
    {
        try contents.withLock { (contents) throws(AmberError) in
            var staged = contents
            for description in classes {
                if let existing = staged.classes[description.name] {
                    throw .duplicateName(kind: "value class", name: description.name, existing: existing.source, refused: source)
                }
                let resolved = try ValueClassResolver.resolve(description) { staged.classes[$0]?.item }
                try check(description, resolved)
                staged.classes[description.name] = Entry(item: resolved, source: source)
            }
            let scope = ClassScope(registry: staged)
            for transformer in transformers {
                guard Identifier.isValid(transformer.name) else {
                    throw .invalidDeclaration(place: "transformer \"\(transformer.name)\"", message: Identifier.rule)
                }
                if let existing = staged.transformers[transformer.name] {
                    throw .duplicateName(kind: "transformer", name: transformer.name, existing: existing.source, refused: source)
                }
                if let existing = staged.functions[transformer.name] {
                    throw .duplicateName(kind: "transformer", name: transformer.name, existing: "function from \(existing.source)", refused: source)
                }
                for className in [transformer.inputClass, transformer.outputClass] where scope.resolve(className) == nil {
                    throw .invalidDeclaration(place: "transformer \"\(transformer.name)\"",
                                              message: "\(className): no such value class" + AmberError.hint(nearestName(to: className, in: scope.classNames)))
                }
                staged.transformers[transformer.name] = Entry(item: transformer, source: source)
            }
            contents = staged
        }
    }

    /// The struct class named `name`, if declared here.
    public func structClass(named name: String) -> StructClass? {
        if case .structure(let s)? = contents.withLock({ $0.classes[name]?.item }) { return s }
        return nil
    }

    /// The names of the transformers registered here.
    public var transformerNames: [String] { contents.withLock { $0.transformers.keys.sorted() } }

    /// A consistent copy for binding one model.
    package func snapshot() -> Contents { contents.withLock { $0 } }

    /// Changes the contents under the lock.
    func update(_ change: (inout Contents) throws(AmberError) -> Void) throws(AmberError) {
        try contents.withLock { (contents) throws(AmberError) in try change(&contents) }
    }
}

/// Turns class declarations into resolved classes.
enum ValueClassResolver {
    /// Names that built-in classes and the plist pseudo-class already use.
    static let reservedNames: Set<String> = Set(ValueClass.allCases.map(\.rawValue)).union([ValueClass.propertyListName])

    /// Resolves `description`; `lookup` finds already-declared classes (for nested structs).
    static func resolve(_ description: ValueClassDescription,
                        lookup: (String) -> ResolvedClass?) throws(AmberError) -> ResolvedClass
    {
        let name = description.name
        guard Identifier.isValid(name) else {
            throw .invalidDeclaration(place: "value class \"\(name)\"", message: Identifier.rule)
        }
        guard !reservedNames.contains(name) else {
            throw .invalidDeclaration(place: "value class \"\(name)\"", message: "the name of a built-in class")
        }
        switch description {
        case .opaque(_, let size):
            if let size, size <= 0 {
                throw .invalidDeclaration(place: name, message: "an opaque class's fixed size must be positive, given \(size)")
            }
            return .opaque(OpaqueClass(name: name, size: size))
        case .structure(_, let fields):
            var seen: Set<String> = []
            for field in fields {
                guard Identifier.isValid(field.name) else {
                    throw .invalidDeclaration(place: "\(name).\(field.name)", message: "a field name must start with a letter and use only letters, digits and _")
                }
                guard seen.insert(field.name).inserted else {
                    throw .invalidDeclaration(place: "\(name).\(field.name)", message: "duplicate field name")
                }
                if case .structure(let inner) = field.type {
                    guard case .structure? = lookup(inner) else {
                        throw .invalidDeclaration(place: "\(name).\(field.name)",
                                                  message: "\(inner): no such struct class (declare nested structs first)")
                    }
                }
            }
            guard !fields.isEmpty else { throw .invalidDeclaration(place: name, message: "a struct class needs at least one field") }
            return .structure(try StructClass(name: name, fields: fields) { inner in
                if case .structure(let s)? = lookup(inner) { return s }
                return nil
            })
        }
    }
}
