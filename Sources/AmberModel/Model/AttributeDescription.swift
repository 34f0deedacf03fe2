import AmberTransformers
import AmberValues
import Foundation

/// An attribute as written in a model, before binding: a plain value you
/// build with the static constructors and modifiers, or load from JSON.
///
/// ```swift
/// Attribute.string("title").required().length(1...200).indexed()
/// ```
public struct AttributeDescription: Sendable, Hashable {
    /// The attribute's name, unique within its entity.
    public var name: String
    /// The attribute's type.
    public var type: AttributeType
    /// Whether nil is allowed at save (Core Data's default: true).
    public var isOptional = true
    /// The value a newly inserted object starts with (nil: starts as null).
    public var defaultValue: Value?
    /// Transient attributes are tracked in the context but never stored.
    public var isTransient = false
    /// Whether the store keeps an index on this attribute.
    public var isIndexed = false
    /// Rules checked at save.
    public var validation = Validation()
    /// Free-form key/value pairs for the program's own use.
    public var userInfo: [String: String] = [:]
    /// The class of the attribute's values (transformable and undefined
    /// attributes); nil means plist-like values for transformable attributes
    /// and any value for undefined ones.
    public var valueClassName: String?
    /// The transformer chain from the value class to a storable class, first
    /// link first. Empty on a transformable attribute means the default archive.
    public var transformerNames: [String] = []
    /// When stored values are decoded.
    public var decodePolicy: DecodePolicy = .lazy
    /// When values are encoded for storage.
    public var encodePolicy: EncodePolicy = .onSave
    /// For a transient attribute with transformers: the persistent attribute
    /// that stores its encoded form (Core Data's "shadow" attribute).
    public var storageAttribute: String?
    /// For a derived attribute: the expression its value is computed from at
    /// save (see ``Derivation``); callers cannot set it.
    public var derivation: String?
    /// For a computed attribute: the registered function and the attributes
    /// it computes the value from (see ``computed(by:from:)``).
    public var computation: Computation?
    /// The attribute's name in the previous version of the model, when it was
    /// renamed: migration carries the old column's values over.
    public var renamingIdentifier: String?
    /// Any text: changing it changes the model's version hash (see
    /// ``EntityDescription/versionHashModifier``).
    public var versionHashModifier: String?
    /// Core Data's "Allows External Storage" (binary and transformable
    /// attributes): in a store Core Data made, the column holds a marker
    /// byte, then the bytes (1) or the name of a file beside the store (2).
    /// An Amber store keeps the bytes in its row either way.
    public var allowsExternalStorage = false

    /// A computed attribute's function and sources.
    public struct Computation: Sendable, Hashable {
        /// The name of a ``/AmberTransformers/ComputeFunction`` (or of a transformer, for one source) registered in the binding registry.
        public var function: String
        /// The names of the entity's attributes whose values the function receives, in order.
        public var sources: [String]

        /// `function` over `sources`.
        public init(function: String, sources: [String]) {
            self.function = function
            self.sources = sources
        }
    }

    /// An attribute of `type` named `name`, optional, with no default and no rules.
    public init(_ name: String, _ type: AttributeType) {
        self.name = name
        self.type = type
    }

    /// Validation rules, checked for every inserted or changed object at save.
    public struct Validation: Sendable, Hashable {
        /// The smallest allowed value (numbers, decimals, dates).
        public var minValue: Value?
        /// The largest allowed value (numbers, decimals, dates).
        public var maxValue: Value?
        /// The fewest characters (strings) or bytes (binary).
        public var minLength: Int?
        /// The most characters (strings) or bytes (binary).
        public var maxLength: Int?
        /// A regular expression the whole string must match.
        public var pattern: String?

        /// No rules.
        public init() {}

        var isEmpty: Bool { self == Validation() }
    }

    /// When a stored value is decoded through its transformers.
    public enum DecodePolicy: String, Sendable, Hashable {
        /// On first read, then cached (the default): objects fetched and never read cost nothing.
        case lazy
        /// When the object is fetched.
        case eager
    }

    /// When a value is encoded through its transformers.
    public enum EncodePolicy: String, Sendable, Hashable {
        /// At save (the default): repeated sets cost nothing.
        case onSave
        /// On every set, so an encoding error surfaces at the set.
        case immediate
    }
}

// MARK: - Modifiers

extension AttributeDescription {
    /// Nil is not allowed at save.
    public func required() -> Self { with { $0.isOptional = false } }
    /// Nil is allowed at save (the default).
    public func optional() -> Self { with { $0.isOptional = true } }
    /// New objects start with `value`.
    public func defaultValue(_ value: Value) -> Self { with { $0.defaultValue = value } }
    /// Tracked in the context, never stored.
    public func transient() -> Self { with { $0.isTransient = true } }
    /// The store keeps an index on this attribute.
    public func indexed() -> Self { with { $0.isIndexed = true } }
    /// Marks the attribute as Core Data's "Allows External Storage" (see ``allowsExternalStorage``).
    public func externalStorage() -> Self { with { $0.allowsExternalStorage = true } }
    /// Values must lie between `minimum` and `maximum`, inclusive (numbers, decimals, dates).
    public func range(_ minimum: Value, _ maximum: Value) -> Self {
        with { $0.validation.minValue = minimum; $0.validation.maxValue = maximum }
    }
    /// Values must be at least `minimum`.
    public func min(_ minimum: Value) -> Self { with { $0.validation.minValue = minimum } }
    /// Values must be at most `maximum`.
    public func max(_ maximum: Value) -> Self { with { $0.validation.maxValue = maximum } }
    /// Strings (in characters) or binary (in bytes) must have a length in `range`.
    public func length(_ range: ClosedRange<Int>) -> Self {
        with { $0.validation.minLength = range.lowerBound; $0.validation.maxLength = range.upperBound }
    }
    /// Strings (in characters) or binary (in bytes) must have at least `minimum`.
    public func length(atLeast minimum: Int) -> Self { with { $0.validation.minLength = minimum } }
    /// Strings (in characters) or binary (in bytes) must have at most `maximum`.
    public func length(atMost maximum: Int) -> Self { with { $0.validation.maxLength = maximum } }
    /// The whole string must match the regular expression `pattern`.
    public func pattern(_ pattern: String) -> Self { with { $0.validation.pattern = pattern } }
    /// Adds a user-info entry.
    public func userInfo(_ key: String, _ value: String) -> Self { with { $0.userInfo[key] = value } }
    /// Decode stored values lazily (on first read, the default) or eagerly (at fetch).
    public func decode(_ policy: DecodePolicy) -> Self { with { $0.decodePolicy = policy } }
    /// Encode values at save (the default) or immediately on every set.
    public func encode(_ policy: EncodePolicy) -> Self { with { $0.encodePolicy = policy } }
    /// Computed by the store at save from `expression` (``Derivation``: `canonical:(title)`,
    /// `author.name`, `books.@count`, `now()`, …); read-only to callers.
    public func derived(_ expression: String) -> Self { with { $0.derivation = expression } }
    /// Makes the attribute computed: transient, its value the result of the
    /// function registered as `function` over the values of `sources` (the
    /// entity's attributes), computed on first read, cached, and computed
    /// again after a source changes; callers cannot set it. A transformer
    /// registered as `function` serves too, for one source: its forward
    /// direction computes the value.
    public func computed(by function: String, from sources: String...) -> Self {
        with {
            $0.isTransient = true
            $0.computation = Computation(function: function, sources: sources)
        }
    }
    /// Marks the attribute as the one called `oldName` in the previous model version.
    public func renamed(from oldName: String) -> Self { with { $0.renamingIdentifier = oldName } }
    /// Keeps this transient attribute's encoded form in the persistent attribute `storage`.
    public func stored(in storage: String) -> Self { with { $0.storageAttribute = storage } }

    private func with(_ change: (inout Self) -> Void) -> Self {
        var copy = self
        change(&copy)
        return copy
    }
}


// MARK: - Constructors, one per type

/// Constructors for attribute descriptions, one per type, for model
/// builders: `Attribute.string("title").required()`. Each returns an
/// ``AttributeDescription``; binding the model turns it into an ``Attribute``.
/// (A leading-dot `.string(…)` on its own line would continue the line above.)
extension Attribute {
    /// A 16-bit integer attribute.
    public static func integer16(_ name: String) -> AttributeDescription { AttributeDescription(name, .integer16) }
    /// A 32-bit integer attribute.
    public static func integer32(_ name: String) -> AttributeDescription { AttributeDescription(name, .integer32) }
    /// A 64-bit integer attribute.
    public static func integer64(_ name: String) -> AttributeDescription { AttributeDescription(name, .integer64) }
    /// A decimal attribute (exact base-10).
    public static func decimal(_ name: String) -> AttributeDescription { AttributeDescription(name, .decimal) }
    /// A double-precision attribute.
    public static func double(_ name: String) -> AttributeDescription { AttributeDescription(name, .double) }
    /// A single-precision attribute.
    public static func float(_ name: String) -> AttributeDescription { AttributeDescription(name, .float) }
    /// A string attribute.
    public static func string(_ name: String) -> AttributeDescription { AttributeDescription(name, .string) }
    /// A Boolean attribute.
    public static func boolean(_ name: String) -> AttributeDescription { AttributeDescription(name, .boolean) }
    /// A date attribute.
    public static func date(_ name: String) -> AttributeDescription { AttributeDescription(name, .date) }
    /// A binary (bytes) attribute.
    public static func binary(_ name: String) -> AttributeDescription { AttributeDescription(name, .binary) }
    /// A UUID attribute.
    public static func uuid(_ name: String) -> AttributeDescription { AttributeDescription(name, .uuid) }
    /// A URI attribute.
    public static func uri(_ name: String) -> AttributeDescription { AttributeDescription(name, .uri) }
    /// A transformable attribute: values of `valueClass` stored through the
    /// `transformers` chain (none: plist-like values through the default archive).
    public static func transformable(_ name: String, valueClass: String? = nil,
                                     transformers: [String] = []) -> AttributeDescription
    {
        var attribute = AttributeDescription(name, .transformable)
        attribute.valueClassName = valueClass
        attribute.transformerNames = transformers
        return attribute
    }
    /// A transient attribute of any value class (or only `valueClass`), never stored;
    /// with `transformers` and ``AttributeDescription/stored(in:)``, kept in sync with a persistent attribute.
    public static func undefined(_ name: String, valueClass: String? = nil,
                                 transformers: [String] = []) -> AttributeDescription
    {
        var attribute = AttributeDescription(name, .undefined)
        attribute.isTransient = true
        attribute.valueClassName = valueClass
        attribute.transformerNames = transformers
        return attribute
    }
}

