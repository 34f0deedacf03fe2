import AmberTransformers

/// Something the Xcode importer wants the model's author to know: a feature
/// of the Xcode model that Amber does not honour, something it imported in
/// another form, or a name it read differently. Notes are warnings: the
/// imported model is complete without them, but may behave differently from
/// the Core Data one in the way each note says.
public struct XcodeImportNote: Sendable, Hashable, CustomStringConvertible {
    /// What kind of difference a note reports.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Amber has no such feature; the model keeps nothing of it, or keeps
        /// it without acting on it (configurations, fetched properties, external
        /// binary storage, options of fetch requests).
        case notHonoured
        /// Imported in another form that Amber has (a composite as a
        /// transformable dictionary, a relationship without inverse as a
        /// one-way relationship, a value class Amber cannot check as plist-like values).
        case mapped
        /// A class or transformer name read differently from how it is
        /// written (a module-qualified name read as its short name).
        case renamed
        /// An element the importer does not know (a newer Xcode's); skipped.
        case unknownElement
        /// An XML attribute the importer does not know (a newer Xcode's); skipped.
        case unknownAttribute
    }

    /// Where: `Tag.color`, `Tag`, `templates.byName`, `configuration Cloud`, `model`.
    public let place: String
    /// What Amber does differently, in a sentence.
    public let message: String
    /// The kind of difference.
    public let kind: Kind

    /// A note about `place`.
    public init(place: String, message: String, kind: Kind) {
        self.place = place
        self.message = message
        self.kind = kind
    }

    /// `Tag.color: …`.
    public var description: String { "\(place): \(message)" }

    /// The same note at several places, as a reader wants it: once.
    public struct Group: Sendable, Hashable, CustomStringConvertible {
        public let message: String
        public let kind: Kind
        /// Where, in the order the notes came.
        public let places: [String]

        /// `Tag.color: …` for one place; `…, at 3 places: A.x, B.y, C.z` for several.
        public var description: String {
            places.count == 1 ? "\(places[0]): \(message)" : "\(message), at \(places.count) places: \(places.joined(separator: ", "))"
        }
    }

    /// `notes` with each message given once, with its places, in the order each first came.
    public static func grouped(_ notes: [XcodeImportNote]) -> [Group] {
        var order: [String] = [], byMessage: [String: (kind: Kind, places: [String])] = [:]
        for note in notes {
            if byMessage[note.message] == nil { order.append(note.message) }
            byMessage[note.message, default: (note.kind, [])].places.append(note.place)
        }
        return order.compactMap { message in byMessage[message].map { Group(message: message, kind: $0.kind, places: $0.places) } }
    }
}

/// Choices for reading an Xcode data model.
public struct XcodeImportOptions: Sendable {
    /// The registry whose value classes and transformers decide whether a
    /// name the Xcode model uses is known (the model is bound against a
    /// registry later; use the same one).
    public var registry: Registry
    /// Names of value transformers that are subclasses of
    /// `NSSecureUnarchiveFromDataTransformer` in the app the model comes
    /// from: Amber stores such attributes through its own archive, as it
    /// does for `NSSecureUnarchiveFromData`. Module-qualified or short names.
    public var secureUnarchiverSubclasses: Set<String>

    /// Options with `registry` (the shared one unless told otherwise) and
    /// the transformer names that are secure unarchiver subclasses.
    public init(registry: Registry = .shared, secureUnarchiverSubclasses: Set<String> = []) {
        self.registry = registry
        self.secureUnarchiverSubclasses = secureUnarchiverSubclasses
    }
}
