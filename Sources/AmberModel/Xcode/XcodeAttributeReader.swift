import AmberTransformers
import AmberValues
import Foundation

/// Reads one `<attribute>` element into an attribute description: its type,
/// flags, default, validation rules and derivation. Transformable and
/// composite attributes are finished by ``XcodeTransformableReader``.
struct XcodeAttributeReader {
    let context: XcodeReadContext
    /// The model's `<composite>` elements by name.
    let composites: [String: XMLNode]

    /// Xcode's type names and the Amber types they become. `ObjectID` and
    /// `Composite` are handled on their own.
    static let types: [String: AttributeType] = [
        "String": .string, "Boolean": .boolean, "Integer 16": .integer16, "Integer 32": .integer32, "Integer 64": .integer64,
        "Decimal": .decimal, "Double": .double, "Float": .float, "Date": .date, "Binary": .binary, "UUID": .uuid, "URI": .uri,
        "Transformable": .transformable, "Undefined": .undefined,
    ]

    static let handled: Set<String> = [
        "attributeType", "optional", "transient", "indexed", "defaultValueString", "defaultDateTimeInterval",
        "minValueString", "maxValueString", "minDateTimeInterval", "maxDateTimeInterval", "regularExpressionString",
        "derived", "derivationExpression", "valueTransformerName", "customClassName", "composite", "elementID",
        "versionHashModifier", "allowsExternalBinaryDataStorage", "spotlightIndexingEnabled", "storedInTruthFile",
        "allowsCloudEncryption", "preserveAfterDeletion",
    ]

    /// Settings Amber does not act on, and what to say about each when it is YES.
    static let unhonouredFlags: [(key: String, message: String)] = [
        ("spotlightIndexingEnabled", "spotlightIndexingEnabled: Amber does not index for Spotlight"),
        ("storedInTruthFile", "storedInTruthFile: Amber keeps every stored attribute in the store's tables"),
        ("allowsCloudEncryption", "allowsCloudEncryption: Amber does not sync with CloudKit; encrypt with a transformer (such as the AES-GCM plugin) instead"),
        ("preserveAfterDeletion", "preserveAfterDeletion: Amber keeps no persistent history"),
    ]

    /// The attribute `node` declares in `entity`, or nil when Amber has no
    /// counterpart (an ObjectID attribute, with a note).
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for a missing name, an unknown type, or a value that does not parse.
    func read(_ node: XMLNode, entity: String) throws(AmberError) -> AttributeDescription? {
        let name = try context.required("name", of: node)
        let place = "\(entity).\(name)"
        context.screenAttributes(of: node, place: place, handled: Self.handled, ignored: XcodeIgnored.attribute)
        for child in node.children where child.name != "userInfo" { context.unknownElement(child, in: place) }

        let typeName = node["attributeType"] ?? "Undefined"
        let isComposite = typeName == "Composite"
        if typeName == "ObjectID" {
            context.note(place, "type ObjectID is not an Amber attribute type (point at objects with a relationship); the attribute is not imported",
                         .notHonoured)
            return nil
        }
        guard let type = isComposite ? .transformable : Self.types[typeName] else {
            throw context.failure(node, "unknown attributeType \"\(typeName)\""
                + AmberError.hint(nearestName(to: typeName, in: Self.types.keys.sorted() + ["ObjectID", "Composite"])))
        }
        var attribute = AttributeDescription(name, type)
        attribute.isOptional = try context.flag("optional", of: node)
        attribute.isTransient = try context.flag("transient", of: node)
        attribute.isIndexed = try context.flag("indexed", of: node)
        attribute.userInfo = try context.userInfo(of: node, place: place)
        attribute.renamingIdentifier = node["elementID"]
        attribute.versionHashModifier = node["versionHashModifier"]
        // Core Data acts on it for Binary and Transformable attributes only, and so does Amber.
        if try context.flag("allowsExternalBinaryDataStorage", of: node), type == .binary || type == .transformable {
            attribute.allowsExternalStorage = true
            context.note(place, "allowsExternalBinaryDataStorage: kept for stores Core Data made (their marker byte and external files); "
                + "an Amber store keeps the bytes in its row", .mapped)
        }
        for (key, message) in Self.unhonouredFlags {
            if try context.flag(key, of: node) { context.note(place, message, .notHonoured) }
        }

        let transformables = XcodeTransformableReader(context: context)
        if isComposite {
            transformables.composite(&attribute, node: node, place: place, composites: composites)
        } else if type == .transformable {
            transformables.transformable(&attribute, node: node, place: place)
        } else if type == .undefined {
            transformables.undefined(&attribute, node: node, place: place)
        } else if node["valueTransformerName"] != nil || node["customClassName"] != nil {
            context.note(place, "valueTransformerName and customClassName apply to Transformable attributes; ignored on \(typeName)", .notHonoured)
        }

        try readDefault(into: &attribute, node: node, place: place)
        try readValidation(into: &attribute, node: node, place: place)
        try readDerivation(into: &attribute, node: node, place: place)
        return attribute
    }

    // MARK: Defaults and validation

    private func readDefault(into attribute: inout AttributeDescription, node: XMLNode, place: String) throws(AmberError) {
        if let seconds = node["defaultDateTimeInterval"] {
            attribute.defaultValue = try dateValue(seconds, key: "defaultDateTimeInterval", node: node)
        }
        guard let text = node["defaultValueString"] else { return }
        switch attribute.type {
        case .transformable, .undefined, .binary:
            context.note(place, "defaultValueString \"\(text)\" is not kept: Amber takes no default for \(attribute.type) attributes from Xcode",
                         .notHonoured)
        default:
            // Xcode saves what does not fit (a shipped model has "NO" on an integer): the model imports without that default.
            do throws(AmberError) {
                attribute.defaultValue = try value(text, as: attribute.type, key: "defaultValueString", node: node)
            } catch {
                context.note(place, "defaultValueString \"\(text)\" (line \(node.line)) is not a value of type \(attribute.type): not kept, so the attribute has no default",
                             .notHonoured)
            }
        }
    }

    private func readValidation(into attribute: inout AttributeDescription, node: XMLNode, place: String) throws(AmberError) {
        let type = attribute.type
        for (key, isMinimum) in [("minValueString", true), ("maxValueString", false)] {
            guard let text = node[key] else { continue }
            if type == .string || type == .binary {
                // Xcode's minimum and maximum of a string or binary attribute are lengths.
                guard let length = Int(text.trimmingCharacters(in: .whitespaces)) else {
                    throw context.failure(node, "\(key)=\"\(text)\": expected a whole number (a length)")
                }
                if isMinimum { attribute.validation.minLength = length } else { attribute.validation.maxLength = length }
            } else if type.isNumeric {
                let bound = try value(text, as: type, key: key, node: node)
                if isMinimum { attribute.validation.minValue = bound } else { attribute.validation.maxValue = bound }
            } else {
                context.note(place, "\(key) \"\(text)\" is not kept: Amber bounds numbers, dates, and lengths of strings and binary", .notHonoured)
            }
        }
        for (key, isMinimum) in [("minDateTimeInterval", true), ("maxDateTimeInterval", false)] {
            guard let text = node[key] else { continue }
            let bound = try dateValue(text, key: key, node: node)
            if isMinimum { attribute.validation.minValue = bound } else { attribute.validation.maxValue = bound }
        }
        attribute.validation.pattern = node["regularExpressionString"]
    }

    private func readDerivation(into attribute: inout AttributeDescription, node: XMLNode, place: String) throws(AmberError) {
        guard try context.flag("derived", of: node) else {
            if node["derivationExpression"] != nil {
                context.note(place, "derivationExpression without derived=\"YES\" is not kept", .notHonoured)
            }
            return
        }
        attribute.derivation = try context.required("derivationExpression", of: node)
        // The store computes a derived value, so Amber takes no default, bounds or required flag for it.
        if attribute.defaultValue != nil || !attribute.validation.isEmpty || !attribute.isOptional {
            context.note(place, "a derived attribute's default, validation rules and required flag are not kept: the store computes its value",
                         .notHonoured)
            attribute.defaultValue = nil
            attribute.validation = AttributeDescription.Validation()
            attribute.isOptional = true
        }
    }

    // MARK: Values

    /// `text` as a value of `type`; `key` and `node` name it in an error.
    private func value(_ text: String, as type: AttributeType, key: String, node: XMLNode) throws(AmberError) -> Value {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parsed: Value? = switch type {
        case .integer16, .integer32, .integer64:
            // In the width's range, so the error has the line rather than coming at bind.
            (Int64(trimmed) ?? Double(trimmed).flatMap { Int64(exactly: $0) })
                .filter { type.integerRange?.contains($0) ?? true }.map(Value.int)
        case .decimal: ScaledDecimal(trimmed).map(Value.decimal)
        case .double: Double(trimmed).filter(\.isFinite).map(Value.double)
        case .float: Float(trimmed).filter(\.isFinite).map(Value.float)
        case .boolean: ["YES": true, "NO": false, "true": true, "false": false, "1": true, "0": false][trimmed].map(Value.bool)
        case .string: .string(text)
        case .date: Double(trimmed).filter(\.isFinite).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .uuid: UUID(uuidString: trimmed).map(Value.uuid)
        case .uri: Value.exactURI(trimmed).map(Value.uri)
        case .binary, .transformable, .undefined, .objectID: nil
        }
        guard let parsed else {
            throw context.failure(node, "\(key)=\"\(text)\" is not a valid \(type) value")
        }
        return parsed
    }

    /// Seconds since 2001-01-01 UTC (Core Data's reference date, Amber's too) as a date.
    private func dateValue(_ text: String, key: String, node: XMLNode) throws(AmberError) -> Value {
        guard let seconds = Double(text.trimmingCharacters(in: .whitespaces)), seconds.isFinite else {
            throw context.failure(node, "\(key)=\"\(text)\": expected seconds since 2001-01-01")
        }
        return .date(Date(timeIntervalSinceReferenceDate: seconds))
    }
}

private extension Optional {
    /// Self when it satisfies `condition`, else nil. (`Value` is nil-literal expressible,
    /// so a ternary with `nil` in a closure would make `.null` rather than no value.)
    func filter(_ condition: (Wrapped) -> Bool) -> Wrapped? {
        guard let value = self, condition(value) else { return nil }
        return value
    }
}
