import AmberTransformers
import AmberValues
import Foundation

// The JSON model file format. Its schema is documented in docs/model-json.md;
// keep the two in step.

extension ModelDescription {
    /// Reads a model from JSON text.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidJSON(path:message:)`` naming the JSON path
    ///   of the first problem (`$.entities[0].attributes[2].type`), with the
    ///   nearest known word for a misspelled key or type.
    public init(json: Data) throws(AmberError) {
        if let refusal = ModelLimits.refusal(bytes: json.count) { throw .invalidJSON(path: "$", message: refusal) }
        let root = try JSONValue.parse(json)
        let reader = JSONReader(root, path: "$")
        try reader.allowOnly(["format", "valueClasses", "entities", "templates"])
        if let format = try reader.optionalString("format"), format != "amber-model/1" {
            throw .invalidJSON(path: "$.format", message: "unsupported format \"\(format)\" (this version reads amber-model/1)")
        }
        let entities = try reader.array("entities")
        guard entities.count <= ModelLimits.entities else {
            throw .invalidJSON(path: "$.entities", message: "\(entities.count) entities; a model may have at most \(ModelLimits.entities)")
        }
        self.entities = try entities.map { (entity: JSONReader) throws(AmberError) in
            try EntityDescription(json: entity)
        }
        self.valueClasses = try reader.optionalArray("valueClasses")?.map { (item: JSONReader) throws(AmberError) in
            try ValueClassDescription(json: item)
        } ?? []
        self.templates = try reader.optionalArray("templates")?.map { (item: JSONReader) throws(AmberError) in
            try FetchTemplateDescription(json: item)
        } ?? []
    }

    /// Reads a model from a JSON file.
    public init(contentsOf url: URL) throws(AmberError) {
        let data: Data
        if let refusal = ModelLimits.refusal(fileAt: url) { throw .invalidJSON(path: url.path, message: refusal) }
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw .invalidJSON(path: url.path, message: "cannot read the file: \(error.localizedDescription)")
        }
        try self.init(json: data)
    }

    /// The model as JSON text in the model file format, keys sorted, so equal
    /// models give equal text.
    public func jsonText(pretty: Bool = false) -> String {
        let entities = entities.map { entity -> JSONValue in
            var object: [String: JSONValue] = [
                "name": .string(entity.name),
                "attributes": .array(entity.attributes.map(\.json)),
            ]
            if !entity.relationships.isEmpty { object["relationships"] = .array(entity.relationships.map(\.json)) }
            if let parent = entity.parent { object["parent"] = .string(parent) }
            if entity.isAbstract { object["abstract"] = .bool(true) }
            if entity.isExtensible { object["extensible"] = .bool(true) }
            if !entity.indexes.isEmpty { object["indexes"] = .array(entity.indexes.map { .array($0.map(JSONValue.string)) }) }
            if !entity.uniquenessConstraints.isEmpty {
                object["uniquenessConstraints"] = .array(entity.uniquenessConstraints.map { .array($0.map(JSONValue.string)) })
            }
            if !entity.userInfo.isEmpty { object["userInfo"] = .object(entity.userInfo.mapValues(JSONValue.string)) }
            if let v = entity.renamingIdentifier { object["renamingIdentifier"] = .string(v) }
            if let v = entity.versionHashModifier { object["versionHashModifier"] = .string(v) }
            if !entity.fetchedProperties.isEmpty { object["fetchedProperties"] = .array(entity.fetchedProperties.map(\.json)) }
            return .object(object)
        }
        var root: [String: JSONValue] = ["format": .string("amber-model/1"), "entities": .array(entities)]
        if !valueClasses.isEmpty { root["valueClasses"] = .array(valueClasses.map(\.json)) }
        if !templates.isEmpty { root["templates"] = .array(templates.map(\.json)) }
        return JSONValue.object(root).text(pretty: pretty)
    }
}

extension EntityDescription {
    init(json reader: JSONReader) throws(AmberError) {
        try reader.allowOnly(["name", "parent", "abstract", "extensible", "attributes", "relationships", "indexes", "uniquenessConstraints", "userInfo",
                              "renamingIdentifier", "versionHashModifier", "fetchedProperties"])
        self.init(try reader.string("name"))
        self.parent = try reader.optionalString("parent")
        self.isAbstract = try reader.optionalBool("abstract") ?? false
        self.isExtensible = try reader.optionalBool("extensible") ?? false
        self.attributes = try reader.optionalArray("attributes")?.map { (attribute: JSONReader) throws(AmberError) in
            try AttributeDescription(json: attribute)
        } ?? []
        self.relationships = try reader.optionalArray("relationships")?.map { (relationship: JSONReader) throws(AmberError) in
            try RelationshipDescription(json: relationship)
        } ?? []
        self.indexes = try reader.optionalArray("indexes")?.map { (list: JSONReader) throws(AmberError) in try list.stringList() } ?? []
        self.uniquenessConstraints = try reader.optionalArray("uniquenessConstraints")?.map {
            (list: JSONReader) throws(AmberError) in try list.stringList()
        } ?? []
        self.userInfo = try reader.optionalStringMap("userInfo") ?? [:]
        self.renamingIdentifier = try reader.optionalString("renamingIdentifier")
        self.versionHashModifier = try reader.optionalString("versionHashModifier")
        self.fetchedProperties = try reader.optionalArray("fetchedProperties")?.map { (item: JSONReader) throws(AmberError) in
            try FetchedPropertyDescription(json: item)
        } ?? []
    }
}

extension AttributeDescription {
    private static let keys = ["name", "type", "optional", "default", "transient", "indexed", "minValue", "maxValue",
                               "minLength", "maxLength", "pattern", "userInfo", "valueClass", "transformer", "decode",
                               "encode", "storage", "derived", "computed", "renamingIdentifier", "versionHashModifier", "externalStorage"]

    init(json reader: JSONReader) throws(AmberError) {
        try reader.allowOnly(Self.keys)
        let name = try reader.string("name")
        let typeName = try reader.string("type")
        guard let type = AttributeType(name: typeName) else {
            throw .invalidJSON(path: reader.path + ".type", message: "unknown attribute type \"\(typeName)\""
                + AmberError.hint(nearestName(to: typeName, in: AttributeType.allCases.map(\.rawValue))))
        }
        self.init(name, type)
        isOptional = try reader.optionalBool("optional") ?? true
        if let computed = try reader.optionalObject("computed") {
            try computed.allowOnly(["function", "from"])
            computation = Computation(function: try computed.string("function"), sources: try computed.array("from").map {
                (source: JSONReader) throws(AmberError) in try source.string()
            })
        }
        // A computed attribute is transient unless the file says otherwise (binding then says why not).
        isTransient = try reader.optionalBool("transient") ?? (computation != nil)
        isIndexed = try reader.optionalBool("indexed") ?? false
        allowsExternalStorage = try reader.optionalBool("externalStorage") ?? false
        defaultValue = try reader.optionalValue("default", as: type)
        validation.minValue = try reader.optionalValue("minValue", as: type)
        validation.maxValue = try reader.optionalValue("maxValue", as: type)
        validation.minLength = try reader.optionalInt("minLength")
        validation.maxLength = try reader.optionalInt("maxLength")
        validation.pattern = try reader.optionalString("pattern")
        userInfo = try reader.optionalStringMap("userInfo") ?? [:]
        renamingIdentifier = try reader.optionalString("renamingIdentifier")
        versionHashModifier = try reader.optionalString("versionHashModifier")
        valueClassName = try reader.optionalString("valueClass")
        transformerNames = try reader.optionalStringOrList("transformer") ?? []
        storageAttribute = try reader.optionalString("storage")
        derivation = try reader.optionalString("derived")
        if let text = try reader.optionalString("decode") {
            guard let policy = DecodePolicy(rawValue: text) else {
                throw .invalidJSON(path: reader.path + ".decode", message: "expected \"lazy\" or \"eager\", found \"\(text)\"")
            }
            decodePolicy = policy
        }
        if let text = try reader.optionalString("encode") {
            guard let policy = EncodePolicy(rawValue: text) else {
                throw .invalidJSON(path: reader.path + ".encode", message: "expected \"onSave\" or \"immediate\", found \"\(text)\"")
            }
            encodePolicy = policy
        }
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "type": .string(type.rawValue)]
        if !isOptional { object["optional"] = .bool(false) }
        if isTransient { object["transient"] = .bool(true) }
        if isIndexed { object["indexed"] = .bool(true) }
        if allowsExternalStorage { object["externalStorage"] = .bool(true) }
        if let defaultValue { object["default"] = JSONValue(defaultValue) }
        if let v = validation.minValue { object["minValue"] = JSONValue(v) }
        if let v = validation.maxValue { object["maxValue"] = JSONValue(v) }
        if let v = validation.minLength { object["minLength"] = .int(Int64(v)) }
        if let v = validation.maxLength { object["maxLength"] = .int(Int64(v)) }
        if let v = validation.pattern { object["pattern"] = .string(v) }
        if !userInfo.isEmpty { object["userInfo"] = .object(userInfo.mapValues(JSONValue.string)) }
        if let renamingIdentifier { object["renamingIdentifier"] = .string(renamingIdentifier) }
        if let versionHashModifier { object["versionHashModifier"] = .string(versionHashModifier) }
        if let valueClassName { object["valueClass"] = .string(valueClassName) }
        if !transformerNames.isEmpty { object["transformer"] = .array(transformerNames.map(JSONValue.string)) }
        if let storageAttribute { object["storage"] = .string(storageAttribute) }
        if let derivation { object["derived"] = .string(derivation) }
        if let computation {
            object["computed"] = .object(["function": .string(computation.function), "from": .array(computation.sources.map(JSONValue.string))])
        }
        if decodePolicy != .lazy { object["decode"] = .string(decodePolicy.rawValue) }
        if encodePolicy != .onSave { object["encode"] = .string(encodePolicy.rawValue) }
        return .object(object)
    }
}

extension RelationshipDescription {
    private static let keys = ["name", "destination", "inverse", "toMany", "ordered", "optional", "deleteRule", "minCount",
                               "maxCount", "oneWay", "userInfo", "renamingIdentifier", "versionHashModifier"]

    init(json reader: JSONReader) throws(AmberError) {
        try reader.allowOnly(Self.keys)
        self.init(try reader.string("name"), destination: try reader.string("destination"),
                  inverse: try reader.optionalString("inverse"), toMany: try reader.optionalBool("toMany") ?? false)
        isOrdered = try reader.optionalBool("ordered") ?? false
        isOptional = try reader.optionalBool("optional") ?? true
        isOneWay = try reader.optionalBool("oneWay") ?? false
        minCount = try reader.optionalInt("minCount")
        maxCount = try reader.optionalInt("maxCount")
        userInfo = try reader.optionalStringMap("userInfo") ?? [:]
        renamingIdentifier = try reader.optionalString("renamingIdentifier")
        versionHashModifier = try reader.optionalString("versionHashModifier")
        if let text = try reader.optionalString("deleteRule") {
            guard let rule = DeleteRule(rawValue: text) else {
                throw .invalidJSON(path: reader.path + ".deleteRule", message: "unknown delete rule \"\(text)\""
                    + AmberError.hint(nearestName(to: text, in: DeleteRule.allCases.map(\.rawValue))))
            }
            deleteRule = rule
        }
    }

    var json: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "destination": .string(destination)]
        if let inverse { object["inverse"] = .string(inverse) }
        if isToMany { object["toMany"] = .bool(true) }
        if isOrdered { object["ordered"] = .bool(true) }
        if !isOptional { object["optional"] = .bool(false) }
        if isOneWay { object["oneWay"] = .bool(true) }
        if deleteRule != .nullify { object["deleteRule"] = .string(deleteRule.rawValue) }
        if let minCount { object["minCount"] = .int(Int64(minCount)) }
        if let maxCount { object["maxCount"] = .int(Int64(maxCount)) }
        if !userInfo.isEmpty { object["userInfo"] = .object(userInfo.mapValues(JSONValue.string)) }
        if let renamingIdentifier { object["renamingIdentifier"] = .string(renamingIdentifier) }
        if let versionHashModifier { object["versionHashModifier"] = .string(versionHashModifier) }
        return .object(object)
    }
}

extension FetchTemplateDescription {
    init(json reader: JSONReader) throws(AmberError) {
        try reader.allowOnly(["name", "entity", "predicate", "sort", "limit"])
        self.init(try reader.string("name"), entity: try reader.string("entity"), where: try reader.optionalString("predicate"),
                  sortedBy: try SortKey.list(json: reader), limit: try reader.optionalInt("limit"))
    }

    var json: JSONValue { SortKey.requestJSON(name: name, entity: entityName, predicate: predicate, sortKeys: sortKeys, limit: limit) }
}

extension FetchedPropertyDescription {
    init(json reader: JSONReader) throws(AmberError) {
        try reader.allowOnly(["name", "entity", "predicate", "sort", "limit", "userInfo"])
        self.init(try reader.string("name"), entity: try reader.string("entity"), where: try reader.optionalString("predicate"),
                  sortedBy: try SortKey.list(json: reader), limit: try reader.optionalInt("limit"),
                  userInfo: try reader.optionalStringMap("userInfo") ?? [:])
    }

    var json: JSONValue {
        guard case .object(var object) = SortKey.requestJSON(name: name, entity: entityName, predicate: predicate, sortKeys: sortKeys, limit: limit)
        else { return .null }
        if !userInfo.isEmpty { object["userInfo"] = .object(userInfo.mapValues(JSONValue.string)) }
        return .object(object)
    }
}

extension SortKey {
    /// The `sort` list of a template or fetched property.
    static func list(json reader: JSONReader) throws(AmberError) -> [SortKey] {
        try reader.optionalArray("sort")?.map { (key: JSONReader) throws(AmberError) -> SortKey in
            try key.allowOnly(["key", "ascending", "caseInsensitive"])
            return SortKey(try key.string("key"), ascending: try key.optionalBool("ascending") ?? true,
                           caseInsensitive: try key.optionalBool("caseInsensitive") ?? false)
        } ?? []
    }

    /// The JSON of a named request (a template or fetched property): name, entity, predicate, sort, limit.
    static func requestJSON(name: String, entity: String, predicate: String?, sortKeys: [SortKey], limit: Int?) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "entity": .string(entity)]
        if let predicate { object["predicate"] = .string(predicate) }
        if !sortKeys.isEmpty {
            object["sort"] = .array(sortKeys.map { key in
                var item: [String: JSONValue] = ["key": .string(key.key)]
                if !key.ascending { item["ascending"] = .bool(false) }
                if key.caseInsensitive { item["caseInsensitive"] = .bool(true) }
                return .object(item)
            })
        }
        if let limit { object["limit"] = .int(Int64(limit)) }
        return .object(object)
    }
}

extension ValueClassDescription {
    init(json reader: JSONReader) throws(AmberError) {
        try reader.allowOnly(["name", "kind", "fields", "size"])
        let name = try reader.string("name")
        switch try reader.string("kind") {
        case "struct":
            let fields = try reader.array("fields").map { (field: JSONReader) throws(AmberError) -> FieldDescription in
                try field.allowOnly(["name", "type"])
                let typeName = try field.string("type")
                return FieldDescription(try field.string("name"), FieldType.scalar(named: typeName) ?? .structure(typeName))
            }
            self = .structure(name: name, fields: fields)
        case "opaque":
            self = .opaque(name: name, size: try reader.optionalInt("size"))
        case let other:
            throw .invalidJSON(path: reader.path + ".kind", message: "expected \"struct\" or \"opaque\", found \"\(other)\"")
        }
    }

    var json: JSONValue {
        switch self {
        case .structure(let name, let fields):
            return .object(["name": .string(name), "kind": .string("struct"), "fields": .array(fields.map {
                .object(["name": .string($0.name), "type": .string($0.type.description)])
            })])
        case .opaque(let name, let size):
            var object: [String: JSONValue] = ["name": .string(name), "kind": .string("opaque")]
            if let size { object["size"] = .int(Int64(size)) }
            return .object(object)
        }
    }
}

extension JSONValue {
    /// The JSON form of a value in a model file and in `amber query --json`.
    init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = d.isFinite ? .double(d) : .string(String(d))
        case .float(let f): self = f.isFinite ? .double(Double(f)) : .string(String(f))
        case .string(let s): self = .string(s)
        case .binary(let d): self = .string(d.base64EncodedString())
        // A date ISO 8601 cannot write (a bound beyond the years 1 to 9999) is seconds since 1970.
        case .date(let d): self = DateText.format(d).map(JSONValue.string) ?? .double(d.timeIntervalSince1970)
        case .decimal(let d): self = .string(d.description)
        case .uuid(let u): self = .string(u.uuidString)
        case .uri(let u): self = .string(u.absoluteString)
        case .objectID(let id): self = .string(id.uriRepresentation.absoluteString)
        case .array(let a): self = .array(a.map(JSONValue.init))
        case .dictionary(let d): self = .object(d.mapValues(JSONValue.init))
        case .custom(let c): self = .object(["class": .string(c.className), "base64": .string(c.bytes.base64EncodedString())])
        }
    }
}

/// Walks a JSON tree and remembers where it is, so every error names its path.
struct JSONReader {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String) {
        self.value = value
        self.path = path
    }

    private func fail(_ key: String, _ message: String) -> AmberError {
        .invalidJSON(path: key.isEmpty ? path : "\(path).\(key)", message: message)
    }

    private var object: [String: JSONValue] {
        get throws(AmberError) {
            guard case .object(let object) = value else { throw fail("", "expected an object, found \(value.kind)") }
            return object
        }
    }

    /// Rejects keys outside `known`, suggesting the nearest one (catches "optinal").
    func allowOnly(_ known: [String]) throws(AmberError) {
        for key in try object.keys.sorted() where !known.contains(key) {
            throw fail(key, "unknown key" + AmberError.hint(nearestName(to: key, in: known)))
        }
    }

    private func member(_ key: String) throws(AmberError) -> JSONValue? {
        let found = try object[key]
        if case .null = found { return nil }
        return found
    }

    func string(_ key: String) throws(AmberError) -> String {
        guard let s = try optionalString(key) else { throw fail(key, "missing (a string is required)") }
        return s
    }

    func optionalString(_ key: String) throws(AmberError) -> String? {
        guard let found = try member(key) else { return nil }
        guard case .string(let s) = found else { throw fail(key, "expected a string, found \(found.kind)") }
        return s
    }

    func optionalBool(_ key: String) throws(AmberError) -> Bool? {
        guard let found = try member(key) else { return nil }
        guard case .bool(let b) = found else { throw fail(key, "expected true or false, found \(found.kind)") }
        return b
    }

    func optionalInt(_ key: String) throws(AmberError) -> Int? {
        guard let found = try member(key) else { return nil }
        guard case .int(let i) = found, let int = Int(exactly: i) else {
            throw fail(key, "expected an integer, found \(found.kind)")
        }
        return int
    }

    func array(_ key: String) throws(AmberError) -> [JSONReader] {
        guard let list = try optionalArray(key) else { throw fail(key, "missing (an array is required)") }
        return list
    }

    func optionalArray(_ key: String) throws(AmberError) -> [JSONReader]? {
        guard let found = try member(key) else { return nil }
        guard case .array(let items) = found else { throw fail(key, "expected an array, found \(found.kind)") }
        return items.enumerated().map { JSONReader($0.element, path: "\(path).\(key)[\($0.offset)]") }
    }

    /// A string, or an array of strings (a transformer chain).
    func optionalStringOrList(_ key: String) throws(AmberError) -> [String]? {
        guard let found = try member(key) else { return nil }
        if case .string(let s) = found { return [s] }
        return try JSONReader(found, path: "\(path).\(key)").stringList(of: "transformer name")
    }

    func optionalObject(_ key: String) throws(AmberError) -> JSONReader? {
        guard let found = try member(key) else { return nil }
        guard case .object = found else { throw fail(key, "expected an object, found \(found.kind)") }
        return JSONReader(found, path: "\(path).\(key)")
    }

    /// This node as a string.
    func string() throws(AmberError) -> String {
        guard case .string(let s) = value else { throw fail("", "expected a string, found \(value.kind)") }
        return s
    }

    func optionalStringMap(_ key: String) throws(AmberError) -> [String: String]? {
        guard let found = try member(key) else { return nil }
        guard case .object(let object) = found else { throw fail(key, "expected an object, found \(found.kind)") }
        var map: [String: String] = [:]
        for (k, v) in object {
            guard case .string(let s) = v else { throw fail("\(key).\(k)", "expected a string, found \(v.kind)") }
            map[k] = s
        }
        return map
    }

    /// This node as a list of names (an index, a constraint, a transformer chain).
    func stringList(of what: String = "attribute name") throws(AmberError) -> [String] {
        guard case .array(let items) = value else { throw fail("", "expected an array of \(what)s, found \(value.kind)") }
        return try items.enumerated().map { (i, item) throws(AmberError) in
            guard case .string(let s) = item else {
                throw AmberError.invalidJSON(path: "\(path)[\(i)]", message: "expected a string (\(what)), found \(item.kind)")
            }
            return s
        }
    }

    /// A value written for an attribute of `type` (defaults, min and max).
    func optionalValue(_ key: String, as type: AttributeType) throws(AmberError) -> Value? {
        guard let found = try member(key) else { return nil }
        guard let value = Self.value(found, as: type) else {
            throw fail(key, "\(found.kind) is not a valid \(type) value (see docs/model-json.md for the forms each type takes)")
        }
        return value
    }

    private static let nonFinite: [String: Double] = ["inf": .infinity, "-inf": -.infinity, "nan": .nan]

    /// Whether `value`, written into a model file for an attribute of `type`
    /// (a default or a bound), reads back as the same value of that type: a
    /// model that binds must reopen from its own JSON. A value its type
    /// refuses anyway counts as reading back (that refusal is its problem).
    static func readsBack(_ value: Value, as type: AttributeType) -> Bool {
        guard type != .transformable, type != .undefined,
              let written = try? type.coerce(value, place: "", storing: false) else { return true }
        guard let back = Self.value(JSONValue(value), as: type),
              let read = try? type.coerce(back, place: "", storing: false)
        else { return false }
        return read.isIdentical(to: written)
    }

    private static func value(_ json: JSONValue, as type: AttributeType) -> Value? {
        switch (type, json) {
        case (.integer16, .int(let i)), (.integer32, .int(let i)), (.integer64, .int(let i)): return .int(i)
        case (.decimal, .string(let s)): return ScaledDecimal(s).map(Value.decimal)
        case (.decimal, .int(let i)): return .decimal(Decimal(i))
        // Through the shortest text of the double, so 12.99 stays 12.99.
        case (.decimal, .double(let d)): return ScaledDecimal(String(d)).map(Value.decimal)
        case (.double, .int(let i)): return .double(Double(i))
        case (.double, .double(let d)): return .double(d)
        // JSON has no infinity or NaN: they are written as Swift prints them.
        case (.double, .string(let s)): return nonFinite[s].map(Value.double)
        case (.float, .string(let s)): return nonFinite[s].map { .float(Float($0)) }
        case (.float, .int(let i)): return .float(Float(i))
        // A double beyond a Float's range would become infinity.
        case (.float, .double(let d)): return Float(d).isFinite ? .float(Float(d)) : nil
        case (.string, .string(let s)): return .string(s)
        case (.boolean, .bool(let b)): return .bool(b)
        case (.date, .string(let s)): return ValueFormat.parseISO8601(s).map(Value.date)
        case (.date, .int(let i)): return .date(Date(timeIntervalSince1970: Double(i)))
        case (.date, .double(let d)): return .date(Date(timeIntervalSince1970: d))
        case (.binary, .string(let s)): return Data(base64Encoded: s).map(Value.binary)
        case (.uuid, .string(let s)): return UUID(uuidString: s).map(Value.uuid)
        case (.uri, .string(let s)): return Value.exactURI(s).map(Value.uri)
        case (.undefined, _), (.transformable, _): return plistValue(json)
        default: return nil
        }
    }

    private static func plistValue(_ json: JSONValue) -> Value {
        switch json {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .array(let a): .array(a.map(plistValue))
        case .object(let o): .dictionary(o.mapValues(plistValue))
        }
    }
}
