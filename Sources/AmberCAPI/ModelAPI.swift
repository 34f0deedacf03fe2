import Amber
import AmberHeaders
import Foundation

@c @implementation
public func amber_model_from_json(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ json: UnsafePointer<CChar>?, _ length: Int,
                                  _ registry: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        guard let json else { throw .null("json") }
        let target = try Handles.registry(registry)
        let data = Data(bytes: json, count: try count(length, "length"))
        let model = try core { () throws(AmberError) in try Model(ModelDescription(json: data), registry: target) }
        result.pointee = Handles.make(CModel(model), kind: .model)
    }
}

@c @implementation
public func amber_model_from_file(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ path: UnsafePointer<CChar>?,
                                  _ registry: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let file = try name(path, "path")
        let target = try Handles.registry(registry)
        let model = try core { () throws(AmberError) in
            try Model(ModelDescription(contentsOf: URL(fileURLWithPath: file)), registry: target)
        }
        result.pointee = Handles.make(CModel(model), kind: .model)
    }
}

@c @implementation
public func amber_model_from_xcode(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ out_notes: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                   _ path: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ registry: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let file = try name(path, "path")
        let named = try version.map { (text) throws(CAPIError) in try name(text, "version") }
        let target = try Handles.registry(registry)
        let (model, notes) = try core { () throws(AmberError) in
            let url = URL(fileURLWithPath: file), options = XcodeImportOptions(registry: target)
            let imported: XcodeModelImport
            if let named {
                imported = try XcodeModelImport(contentsOf: url, version: named, options: options)
            } else {
                imported = try XcodeModelImport(contentsOf: url, options: options)
            }
            return (try Model(imported.model, registry: target), XcodeImportNote.grouped(imported.notes).map(\.description))
        }
        if let out_notes { out_notes.pointee = try mallocString(notes.joined(separator: "\n")).0 }
        result.pointee = Handles.make(CModel(model), kind: .model)
    }
}

@c @implementation
public func amber_model_to_json(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_length: UnsafeMutablePointer<Int>?,
                                _ model: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), length = try require(out_length, "out_length")
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        let (text, count) = try mallocString(wrapper.model.description.jsonText(pretty: true))
        result.pointee = text
        length.pointee = count
    }
}

@c @implementation
public func amber_model_free(_ model: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        wrapper.releaseOwnedHandles()
        try Handles.release(model, as: .model, "model")
    }
}

@c @implementation
public func amber_model_entity(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ model: OpaquePointer?,
                               _ name: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        let entityName = try AmberCAPI.name(name, "name")
        let entity = try core { () throws(AmberError) in try wrapper.model.entity(named: entityName) }
        result.pointee = try wrapper.handle(for: entity)
    }
}

@c @implementation
public func amber_entity_attribute(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ entity: OpaquePointer?,
                                   _ name: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        let attributeName = try AmberCAPI.name(name, "name")
        let attribute = try core { () throws(AmberError) in try wrapper.entity.attribute(named: attributeName) }
        result.pointee = wrapper.handle(for: attribute)
    }
}

@c @implementation
public func amber_entity_name(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ entity: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        result.pointee = UnsafePointer(wrapper.cName)
    }
}

@c @implementation
public func amber_entity_attribute_count(_ out: UnsafeMutablePointer<Int>?, _ entity: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        result.pointee = wrapper.entity.attributes.count
    }
}

@c @implementation
public func amber_entity_attribute_at(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ entity: OpaquePointer?, _ index: Int) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        guard index >= 0, index < wrapper.entity.attributes.count else {
            throw CAPIError(AMBER_E_NOT_FOUND, "\(wrapper.entity.name) has \(wrapper.entity.attributes.count) attributes; index \(index) is past them",
                            origin: wrapper.entity.name)
        }
        result.pointee = wrapper.handle(for: wrapper.entity.attributes[index])
    }
}

@c @implementation
public func amber_attribute_name(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ attribute: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CAttribute = try Handles.resolve(attribute, as: .attribute, "attribute")
        result.pointee = UnsafePointer(wrapper.cName)
    }
}

/// Attribute types to their C constants (the inverse of `attributeTypes`).
private let attributeTypeCodes: [AttributeType: Int] = Dictionary(uniqueKeysWithValues: attributeTypes.map { ($0.value, $0.key) })

@c @implementation
public func amber_attribute_type(_ out: UnsafeMutablePointer<Int32>?, _ attribute: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CAttribute = try Handles.resolve(attribute, as: .attribute, "attribute")
        guard let code = attributeTypeCodes[wrapper.attribute.type] else {
            throw CAPIError(AMBER_E_INTERNAL, "\(wrapper.attribute): type \(wrapper.attribute.type) has no C constant")
        }
        result.pointee = Int32(code)
    }
}

@c @implementation
public func amber_attribute_value_class(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ attribute: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CAttribute = try Handles.resolve(attribute, as: .attribute, "attribute")
        result.pointee = wrapper.cValueClass.map { UnsafePointer($0) }
    }
}

@c @implementation
public func amber_attribute_derivation(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ attribute: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CAttribute = try Handles.resolve(attribute, as: .attribute, "attribute")
        result.pointee = wrapper.cDerivation.map { UnsafePointer($0) }
    }
}

@c @implementation
public func amber_attribute_computation(_ out_function: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                        _ out_sources: UnsafeMutablePointer<UnsafePointer<UnsafePointer<CChar>?>?>?,
                                        _ out_source_count: UnsafeMutablePointer<Int>?, _ attribute: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let function = try require(out_function, "out_function"), count = try require(out_source_count, "out_source_count")
        let wrapper: CAttribute = try Handles.resolve(attribute, as: .attribute, "attribute")
        function.pointee = wrapper.cFunction.map { UnsafePointer($0) }
        out_sources?.pointee = UnsafePointer(wrapper.cSources)
        count.pointee = wrapper.attribute.computation?.sources.count ?? 0
    }
}

@c @implementation
public func amber_model_struct_layout(_ out_size: UnsafeMutablePointer<Int>?, _ out_alignment: UnsafeMutablePointer<Int>?,
                                      _ out_fields: UnsafeMutablePointer<amber_field_info>?,
                                      _ out_field_count: UnsafeMutablePointer<Int>?, _ capacity: Int, _ model: OpaquePointer?,
                                      _ name: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper: CModel = try Handles.resolve(model, as: .model, "model")
        let className = try AmberCAPI.name(name, "name")
        guard let layout = wrapper.model.structClass(named: className) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "\(className): no such struct class in the model", origin: className)
        }
        try describe(layout, strings: wrapper.strings, size: out_size, alignment: out_alignment, fields: out_fields,
                     fieldCount: out_field_count, capacity: capacity)
    }
}

// MARK: Building models in code

@c @implementation
public func amber_model_builder_new(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> amber_status {
    api { () throws(CAPIError) in try require(out, "out").pointee = Handles.make(CBuilder(), kind: .builder) }
}

@c @implementation
public func amber_model_builder_free(_ builder: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in try Handles.release(builder, as: .builder, "builder") }
}

/// Runs `change` on the entity named `entity` of the builder's model.
func withEntity(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                        _ change: (inout EntityDescription) throws(CAPIError) -> Void) throws(CAPIError)
{
    let wrapper: CBuilder = try Handles.resolve(builder, as: .builder, "builder")
    let entityName = try name(entity, "entity")
    try wrapper.description.withLock { (description) throws(CAPIError) in
        guard let index = description.entities.firstIndex(where: { $0.name == entityName }) else {
            throw CAPIError(AMBER_E_NOT_FOUND, "\(entityName): no such entity in the builder (add it first)", origin: entityName)
        }
        try change(&description.entities[index])
    }
}

/// A list of `count` names.
func names(_ list: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ parameter: String) throws(CAPIError) -> [String] {
    let checked = try AmberCAPI.count(count, "count")
    guard checked == 0 || list != nil else { throw .null(parameter) }
    var result: [String] = []
    for i in 0..<checked { result.append(try name(list?[i], "\(parameter)[\(i)]")) }
    return result
}

@c @implementation
public func amber_model_builder_add_entity(_ builder: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CBuilder = try Handles.resolve(builder, as: .builder, "builder")
        let entityName = try AmberCAPI.name(name, "name")
        wrapper.description.withLock { $0.entities.append(EntityDescription(entityName)) }
    }
}

/// Attribute types by their C constants.
private let attributeTypes: [Int: AttributeType] = [
    AMBER_TYPE_INTEGER16: .integer16, AMBER_TYPE_INTEGER32: .integer32, AMBER_TYPE_INTEGER64: .integer64,
    AMBER_TYPE_DECIMAL: .decimal, AMBER_TYPE_DOUBLE: .double, AMBER_TYPE_FLOAT: .float, AMBER_TYPE_STRING: .string,
    AMBER_TYPE_BOOLEAN: .boolean, AMBER_TYPE_DATE: .date, AMBER_TYPE_BINARY: .binary, AMBER_TYPE_UUID: .uuid,
    AMBER_TYPE_URI: .uri, AMBER_TYPE_TRANSFORMABLE: .transformable, AMBER_TYPE_UNDEFINED: .undefined,
]

@c @implementation
public func amber_model_builder_add_attribute(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                                              _ spec: UnsafePointer<amber_attribute_spec>?) -> amber_status
{
    api { () throws(CAPIError) in
        // The struct as ABI 1 published it ends with `storage`: later fields are optional.
        let published = (MemoryLayout<amber_attribute_spec>.offset(of: \amber_attribute_spec.storage) ?? 0)
            + MemoryLayout<UnsafePointer<CChar>?>.size
        let spec = try sized(spec, "spec", initializer: "AMBER_ATTRIBUTE_SPEC_INIT", minimum: published,
                             zero: amber_attribute_spec())
        let attributeName = try name(spec.name, "spec->name")
        guard let type = attributeTypes[Int(spec.type)] else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "spec->type: unknown attribute type \(spec.type)", origin: attributeName)
        }
        var attribute = AttributeDescription(attributeName, type)
        let flags = Int(spec.flags)
        // As for relationships: a flag this version does not know is refused, never ignored.
        let known = AMBER_ATTRIBUTE_REQUIRED | AMBER_ATTRIBUTE_TRANSIENT | AMBER_ATTRIBUTE_INDEXED | AMBER_ATTRIBUTE_DECODE_EAGER
            | AMBER_ATTRIBUTE_ENCODE_IMMEDIATE | AMBER_ATTRIBUTE_EXTERNAL_STORAGE
        guard flags & ~Int(known) == 0 else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "spec->flags: unknown flags \(flags & ~Int(known))", origin: attributeName)
        }
        attribute.isOptional = flags & AMBER_ATTRIBUTE_REQUIRED == 0
        attribute.isTransient = flags & AMBER_ATTRIBUTE_TRANSIENT != 0
        attribute.isIndexed = flags & AMBER_ATTRIBUTE_INDEXED != 0
        attribute.allowsExternalStorage = flags & AMBER_ATTRIBUTE_EXTERNAL_STORAGE != 0
        attribute.decodePolicy = flags & AMBER_ATTRIBUTE_DECODE_EAGER != 0 ? .eager : .lazy
        attribute.encodePolicy = flags & AMBER_ATTRIBUTE_ENCODE_IMMEDIATE != 0 ? .immediate : .onSave
        if spec.default_value != nil { attribute.defaultValue = try CValue.read(spec.default_value, "spec->default_value") }
        if spec.min_value != nil { attribute.validation.minValue = try CValue.read(spec.min_value, "spec->min_value") }
        if spec.max_value != nil { attribute.validation.maxValue = try CValue.read(spec.max_value, "spec->max_value") }
        if spec.min_length > 0 { attribute.validation.minLength = Int(spec.min_length) }
        if spec.max_length > 0 { attribute.validation.maxLength = Int(spec.max_length) }
        attribute.validation.pattern = try optionalName(spec.pattern, "spec->pattern")
        attribute.valueClassName = try optionalName(spec.value_class, "spec->value_class")
        attribute.transformerNames = try names(spec.transformers, spec.transformer_count, "spec->transformers")
        attribute.storageAttribute = try optionalName(spec.storage, "spec->storage")
        attribute.derivation = try optionalName(spec.derived, "spec->derived")
        if let function = try optionalName(spec.computed_by, "spec->computed_by") {
            attribute.isTransient = true
            attribute.computation = AttributeDescription.Computation(function: function,
                                                                     sources: try names(spec.sources, spec.source_count, "spec->sources"))
        }
        try withEntity(builder, entity) { entity in entity.attributes.append(attribute) }
    }
}

/// Appends a list of attribute names (an index or a constraint) to the entity's `lists`.
private func addAttributeList(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                              _ attributes: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                              to lists: WritableKeyPath<EntityDescription, [[String]]>) -> amber_status
{
    api { () throws(CAPIError) in
        let list = try names(attributes, count, "attributes")
        try withEntity(builder, entity) { entity in entity[keyPath: lists].append(list) }
    }
}

@c @implementation
public func amber_model_builder_add_index(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                                          _ attributes: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int) -> amber_status
{
    addAttributeList(builder, entity, attributes, count, to: \.indexes)
}

@c @implementation
public func amber_model_builder_add_unique(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                                           _ attributes: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int) -> amber_status
{
    addAttributeList(builder, entity, attributes, count, to: \.uniquenessConstraints)
}

@c @implementation
public func amber_model_builder_set_user_info(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                                              _ attribute: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                                              _ value: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let attributeName = try optionalName(attribute, "attribute")
        let entry = try name(key, "key"), text = try name(value, "value")
        try withEntity(builder, entity) { (entity) throws(CAPIError) in
            guard let attributeName else {
                entity.userInfo[entry] = text
                return
            }
            guard let index = entity.attributes.firstIndex(where: { $0.name == attributeName }) else {
                throw CAPIError(AMBER_E_NOT_FOUND, "\(entity.name).\(attributeName): no such attribute in the builder",
                                origin: "\(entity.name).\(attributeName)")
            }
            entity.attributes[index].userInfo[entry] = text
        }
    }
}

@c @implementation
public func amber_model_builder_declare_struct(_ builder: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                               _ fields: UnsafePointer<amber_field>?, _ field_count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let wrapper: CBuilder = try Handles.resolve(builder, as: .builder, "builder")
        let className = try AmberCAPI.name(name, "name")
        let declared = try fieldDescriptions(fields, field_count)
        wrapper.description.withLock { $0.valueClasses.append(.structure(name: className, fields: declared)) }
    }
}

@c @implementation
public func amber_model_builder_declare_opaque(_ builder: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ fixed_size: Int) -> amber_status {
    api { () throws(CAPIError) in
        let wrapper: CBuilder = try Handles.resolve(builder, as: .builder, "builder")
        let className = try AmberCAPI.name(name, "name")
        wrapper.description.withLock { $0.valueClasses.append(.opaque(name: className, size: fixed_size == 0 ? nil : fixed_size)) }
    }
}

@c @implementation
public func amber_model_builder_bind(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ builder: OpaquePointer?,
                                     _ registry: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CBuilder = try Handles.resolve(builder, as: .builder, "builder")
        let target = try Handles.registry(registry)
        let description = wrapper.description.withLock { $0 }
        let model = try core { () throws(AmberError) in try Model(description, registry: target) }
        result.pointee = Handles.make(CModel(model), kind: .model)
    }
}
