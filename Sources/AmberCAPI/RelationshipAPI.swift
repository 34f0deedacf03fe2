import Amber
import AmberHeaders
import Foundation

// MARK: Declaring and describing relationships

/// Delete rules by their C constants.
private let deleteRules: [Int32: RelationshipDescription.DeleteRule] = [
    Int32(AMBER_DELETE_NULLIFY): .nullify, Int32(AMBER_DELETE_CASCADE): .cascade, Int32(AMBER_DELETE_DENY): .deny,
    Int32(AMBER_DELETE_NO_ACTION): .noAction,
]

private let knownRelationshipFlags = UInt32(AMBER_RELATIONSHIP_TO_MANY | AMBER_RELATIONSHIP_ORDERED | AMBER_RELATIONSHIP_REQUIRED
    | AMBER_RELATIONSHIP_ONE_WAY)

/// A count from a spec: -1 is "none"; other negatives are refused.
private func specCount(_ value: Int64, _ parameter: String) throws(CAPIError) -> Int? {
    if value == -1 { return nil }
    guard value >= 0, value <= Int64(Int32.max) else {
        throw CAPIError(AMBER_E_INVALID_VALUE, "\(parameter) is \(value); give a count, or -1 for none", origin: parameter)
    }
    return Int(value)
}

@c @implementation
public func amber_model_builder_add_relationship(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?,
                                                 _ spec: UnsafePointer<amber_relationship_spec>?) -> amber_status
{
    api { () throws(CAPIError) in
        let spec = try sized(spec, "spec", initializer: "AMBER_RELATIONSHIP_SPEC_INIT",
                             minimum: MemoryLayout<amber_relationship_spec>.stride, zero: amber_relationship_spec())
        let relationshipName = try name(spec.name, "spec->name")
        guard spec.flags & ~knownRelationshipFlags == 0 else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "spec->flags: unknown flags \(spec.flags & ~knownRelationshipFlags)", origin: relationshipName)
        }
        guard let rule = deleteRules[spec.delete_rule] else {
            throw CAPIError(AMBER_E_INVALID_VALUE, "spec->delete_rule: unknown delete rule \(spec.delete_rule)", origin: relationshipName)
        }
        let flags = Int(spec.flags)
        var relationship = RelationshipDescription(relationshipName, destination: try name(spec.destination, "spec->destination"),
                                                   inverse: try optionalName(spec.inverse, "spec->inverse"),
                                                   toMany: flags & AMBER_RELATIONSHIP_TO_MANY != 0)
        relationship.isOrdered = flags & AMBER_RELATIONSHIP_ORDERED != 0
        relationship.isOptional = flags & AMBER_RELATIONSHIP_REQUIRED == 0
        // One-way keeps a given inverse, so binding reports the contradiction rather than hiding it.
        relationship.isOneWay = flags & AMBER_RELATIONSHIP_ONE_WAY != 0
        relationship.deleteRule = rule
        relationship.minCount = try specCount(spec.min_count, "spec->min_count")
        relationship.maxCount = try specCount(spec.max_count, "spec->max_count")
        try withEntity(builder, entity) { entity in entity.relationships.append(relationship) }
    }
}

@c @implementation
public func amber_entity_relationship(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ entity: OpaquePointer?,
                                      _ name: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        let relationshipName = try AmberCAPI.name(name, "name")
        let relationship = try core { () throws(AmberError) in try wrapper.entity.relationship(named: relationshipName) }
        result.pointee = wrapper.handle(for: relationship)
    }
}

@c @implementation
public func amber_entity_relationship_count(_ out: UnsafeMutablePointer<Int>?, _ entity: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        result.pointee = wrapper.entity.relationships.count
    }
}

@c @implementation
public func amber_entity_relationship_at(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ entity: OpaquePointer?, _ index: Int) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        let relationships = wrapper.entity.relationships
        guard index >= 0, index < relationships.count else {
            throw CAPIError(AMBER_E_NOT_FOUND, "\(wrapper.entity.name) has \(relationships.count) relationships; index \(index) is past them",
                            origin: wrapper.entity.name)
        }
        result.pointee = wrapper.handle(for: relationships[index])
    }
}

@c @implementation
public func amber_relationship_describe(_ out: UnsafeMutablePointer<amber_relationship_spec>?, _ relationship: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        _ = try sized(UnsafePointer(result), "out", initializer: "AMBER_RELATIONSHIP_SPEC_INIT",
                      minimum: MemoryLayout<amber_relationship_spec>.stride, zero: amber_relationship_spec())
        let wrapper: CRelationship = try Handles.resolve(relationship, as: .relationship, "relationship")
        let r = wrapper.relationship
        var flags = 0
        if r.isToMany { flags |= AMBER_RELATIONSHIP_TO_MANY }
        if r.isOrdered { flags |= AMBER_RELATIONSHIP_ORDERED }
        if !r.isOptional { flags |= AMBER_RELATIONSHIP_REQUIRED }
        if r.inverseName == nil { flags |= AMBER_RELATIONSHIP_ONE_WAY }
        result.pointee.name = UnsafePointer(wrapper.cName)
        result.pointee.destination = UnsafePointer(wrapper.cDestination)
        result.pointee.inverse = wrapper.cInverse.map { UnsafePointer($0) }
        result.pointee.flags = UInt32(flags)
        result.pointee.delete_rule = deleteRules.first { $0.value == r.deleteRule }?.key ?? Int32(AMBER_DELETE_NULLIFY)
        result.pointee.min_count = r.minCount.map(Int64.init) ?? -1
        result.pointee.max_count = r.maxCount.map(Int64.init) ?? -1
    }
}

// MARK: Following and changing relationships

/// An object handle and a relationship handle, on the object's thread.
private func resolve(_ object: OpaquePointer?, _ relationship: OpaquePointer?) throws(CAPIError) -> (CObject, Relationship) {
    let target = try Handles.object(object)
    let wrapper: CRelationship = try Handles.resolve(relationship, as: .relationship, "relationship")
    return (target, wrapper.relationship)
}

/// The object behind another object handle (NULL: none); the core checks it shares the context.
private func other(_ handle: OpaquePointer?, _ parameter: String) throws(CAPIError) -> ManagedObject? {
    guard handle != nil else { return nil }
    return try Handles.object(handle, parameter).object
}

@c @implementation
public func amber_object_get_object(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ object: OpaquePointer?,
                                    _ relationship: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let (target, handle) = try resolve(object, relationship)
        let destination = try core { () throws(AmberError) in try target.object.object(for: handle) }
        result.pointee = destination.map { target.context.handle(for: $0) } ?? nil
    }
}

@c @implementation
public func amber_object_set_object(_ object: OpaquePointer?, _ relationship: OpaquePointer?, _ destination: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let (target, handle) = try resolve(object, relationship)
        let end = try other(destination, "destination")
        try core { () throws(AmberError) in try target.object.setObject(end, for: handle) }
    }
}

@c @implementation
public func amber_object_count_objects(_ out: UnsafeMutablePointer<Int>?, _ object: OpaquePointer?, _ relationship: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let (target, handle) = try resolve(object, relationship)
        result.pointee = try core { () throws(AmberError) in try target.object.count(of: handle) }
    }
}

@c @implementation
public func amber_object_objects(_ out_objects: UnsafeMutablePointer<UnsafeMutablePointer<OpaquePointer?>?>?,
                                 _ out_count: UnsafeMutablePointer<Int>?, _ object: OpaquePointer?,
                                 _ relationship: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let objectsOut = try require(out_objects, "out_objects"), countOut = try require(out_count, "out_count")
        let (target, handle) = try resolve(object, relationship)
        let members = try core { () throws(AmberError) in try target.object.objects(for: handle) }
        objectsOut.pointee = try handleArray(members, target.context)
        countOut.pointee = members.count
    }
}

@c @implementation
public func amber_object_fetched_objects(_ out_objects: UnsafeMutablePointer<UnsafeMutablePointer<OpaquePointer?>?>?,
                                         _ out_count: UnsafeMutablePointer<Int>?, _ object: OpaquePointer?,
                                         _ property: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let objectsOut = try require(out_objects, "out_objects"), countOut = try require(out_count, "out_count")
        let target = try Handles.object(object)
        let key = try name(property, "name")
        let found = try core { () throws(AmberError) in try target.object.fetchedObjects(forKey: key) }
        objectsOut.pointee = try handleArray(found, target.context)
        countOut.pointee = found.count
    }
}

/// Adds or removes a member of a to-many relationship.
private func changeMembers(_ object: OpaquePointer?, _ relationship: OpaquePointer?, _ member: OpaquePointer?, adding: Bool) -> amber_status {
    api { () throws(CAPIError) in
        let (target, handle) = try resolve(object, relationship)
        guard let end = try other(member, "member") else { throw .null("member") }
        try core { () throws(AmberError) in
            if adding { try target.object.add(end, to: handle) } else { try target.object.remove(end, from: handle) }
        }
    }
}

@c @implementation
public func amber_object_add_object(_ object: OpaquePointer?, _ relationship: OpaquePointer?, _ member: OpaquePointer?) -> amber_status {
    changeMembers(object, relationship, member, adding: true)
}

@c @implementation
public func amber_object_remove_object(_ object: OpaquePointer?, _ relationship: OpaquePointer?, _ member: OpaquePointer?) -> amber_status {
    changeMembers(object, relationship, member, adding: false)
}

@c @implementation
public func amber_object_set_objects(_ object: OpaquePointer?, _ relationship: OpaquePointer?, _ members: UnsafePointer<OpaquePointer?>?,
                                     _ count: Int) -> amber_status
{
    api { () throws(CAPIError) in
        let (target, handle) = try resolve(object, relationship)
        let total = try AmberCAPI.count(count, "count")
        guard total == 0 || members != nil else { throw .null("members") }
        var objects: [ManagedObject] = []
        for index in 0..<total {
            guard let member = try other(members?[index], "members[\(index)]") else { throw .null("members[\(index)]") }
            objects.append(member)
        }
        try core { () throws(AmberError) in try target.object.setObjects(objects, for: handle) }
    }
}

// MARK: Inheritance

@c @implementation
public func amber_model_builder_set_parent(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?, _ parent: UnsafePointer<CChar>?,
                                           _ abstract: Int32) -> amber_status
{
    api { () throws(CAPIError) in
        let parentName = try optionalName(parent, "parent")
        try withEntity(builder, entity) { entity in
            entity.parent = parentName
            entity.isAbstract = abstract != 0
        }
    }
}

@c @implementation
public func amber_entity_parent(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ entity: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        guard let parent = wrapper.entity.parentIndex else {
            result.pointee = nil
            return
        }
        guard let model = wrapper.model else { throw CAPIError(AMBER_E_INVALID_HANDLE, "entity: its model was freed", origin: "entity") }
        result.pointee = try model.handle(for: model.model.entities[parent])
    }
}

@c @implementation
public func amber_entity_subentity_count(_ out: UnsafeMutablePointer<Int>?, _ entity: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        result.pointee = wrapper.entity.subentityIndices.count - 1
    }
}
