import Amber
import AmberHeaders
import Foundation

/// The value a caller passed: NULL is named as the parameter, not as the attribute the value is for.
private func given(_ value: UnsafePointer<amber_value>?) throws(CAPIError) -> UnsafePointer<amber_value> {
    guard let value else { throw .null("value") }
    return value
}

/// An object and an attribute handle, checked to belong together.
@inline(__always)
private func resolve(_ object: OpaquePointer?, _ attribute: OpaquePointer?) throws(CAPIError) -> (CObject, Attribute) {
    // Without a lock on the owning thread; anything else (and every error) through the table.
    if let target = Mirror.owned(object, .object, as: CObject.self),
       let handle = Mirror.attribute(attribute, of: target.object.entity)
    {
        return (target, handle)
    }
    let (target, wrapper): (CObject, CAttribute) = try Handles.resolve(object, as: .object, "object", attribute, as: .attribute, "attribute")
    try target.context.checkThread("object")
    return (target, wrapper.attribute)
}

@c @implementation
public func amber_object_get(_ out: UnsafeMutablePointer<amber_value>?, _ object: OpaquePointer?,
                             _ attribute: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let (target, handle) = try resolve(object, attribute)
        let value = try core { () throws(AmberError) in try target.object.value(for: handle) }
        try CValue.write(value, to: result)
    }
}

@c @implementation
public func amber_object_get_named(_ out: UnsafeMutablePointer<amber_value>?, _ object: OpaquePointer?,
                                   _ attribute: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let target = try Handles.object(object)
        let key = try name(attribute, "attribute")
        let value = try core { () throws(AmberError) in try target.object.value(forKey: key) }
        try CValue.write(value, to: result)
    }
}

@c @implementation
public func amber_object_set(_ object: OpaquePointer?, _ attribute: OpaquePointer?, _ value: UnsafePointer<amber_value>?) -> amber_status {
    api { () throws(CAPIError) in
        let (target, handle) = try resolve(object, attribute)
        let newValue = try CValue.read(try given(value), handle.description)
        try core { () throws(AmberError) in try target.object.setValue(newValue, for: handle) }
    }
}

@c @implementation
public func amber_object_set_named(_ object: OpaquePointer?, _ attribute: UnsafePointer<CChar>?,
                                   _ value: UnsafePointer<amber_value>?) -> amber_status
{
    api { () throws(CAPIError) in
        let target = try Handles.object(object)
        let key = try name(attribute, "attribute")
        let entity = target.object.entity
        // An unknown name is an error before the value is read; an extensible entity's is an extended attribute.
        let handle = entity.isExtensible ? entity.existingAttribute(named: key) : try core { () throws(AmberError) in try entity.attribute(named: key) }
        let newValue = try CValue.read(try given(value), handle?.description ?? "\(entity.name).\(key)")
        try core { () throws(AmberError) in
            if let handle { try target.object.setValue(newValue, for: handle) } else { try target.object.setValue(newValue, forExtendedKey: key) }
        }
    }
}

@c @implementation
public func amber_object_uri(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_length: UnsafeMutablePointer<Int>?,
                             _ object: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), length = try require(out_length, "out_length")
        let target = try Handles.object(object)
        let (text, count) = try mallocString(target.object.objectID.uriRepresentation.absoluteString)
        result.pointee = text
        length.pointee = count
    }
}

@c @implementation
public func amber_object_entity(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ object: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let target = try Handles.object(object)
        result.pointee = try target.context.store.model.handle(for: target.object.entity)
    }
}

@c @implementation
public func amber_object_context(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ object: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        result.pointee = try Handles.object(object).context.handle
    }
}

@c @implementation
public func amber_object_state(_ out: UnsafeMutablePointer<UInt32>?, _ object: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let target = try Handles.object(object).object
        var flags = 0
        if target.isInserted { flags |= AMBER_OBJECT_INSERTED }
        if target.isUpdated { flags |= AMBER_OBJECT_UPDATED }
        if target.isDeleted { flags |= AMBER_OBJECT_DELETED }
        if target.objectID.isTemporary { flags |= AMBER_OBJECT_TEMPORARY_ID }
        result.pointee = UInt32(flags)
    }
}

@c @implementation
public func amber_object_primary_key(_ out: UnsafeMutablePointer<Int64>?, _ object: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let target = try Handles.object(object).object
        guard let key = target.objectID.primaryKey else {
            throw CAPIError(AMBER_E_UNAVAILABLE, "object \(target.objectID) is not saved yet and has no primary key", origin: "object")
        }
        result.pointee = key
    }
}

@c @implementation
public func amber_objects_release(_ objects: UnsafePointer<OpaquePointer?>?, _ count: Int) -> amber_status {
    api { () throws(CAPIError) in
        let total = try AmberCAPI.count(count, "count")
        guard total == 0 || objects != nil else { throw .null("objects") }
        let handles = UnsafeBufferPointer(start: objects, count: total)
        var targets: [(CObject, OpaquePointer)] = []
        targets.reserveCapacity(total)
        var seen = Set<ObjectIdentifier>()
        // Every handle is checked before any is released; one listed twice is released once.
        for (index, handle) in handles.enumerated() {
            guard let handle else { continue }
            let target = try Handles.object(handle, "objects[\(index)]")
            if seen.insert(ObjectIdentifier(target)).inserted { targets.append((target, handle)) }
        }
        for (target, handle) in targets { try target.context.releaseHandle(of: target, handle) }
    }
}

@c @implementation
public func amber_object_release(_ object: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let target = try Handles.object(object)
        try target.context.releaseHandle(of: target, object)
    }
}
