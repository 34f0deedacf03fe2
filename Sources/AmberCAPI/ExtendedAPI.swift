import Amber
import AmberHeaders
import Foundation

// MARK: Extended attributes

@c @implementation
public func amber_model_builder_set_extensible(_ builder: OpaquePointer?, _ entity: UnsafePointer<CChar>?, _ extensible: Int32) -> amber_status {
    api { () throws(CAPIError) in
        try withEntity(builder, entity) { entity in entity.isExtensible = extensible != 0 }
    }
}

@c @implementation
public func amber_entity_is_extensible(_ out: UnsafeMutablePointer<Int32>?, _ entity: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let wrapper: CEntity = try Handles.resolve(entity, as: .entity, "entity")
        result.pointee = wrapper.entity.isExtensible ? 1 : 0
    }
}

@c @implementation
public func amber_object_extended_keys(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ out_count: UnsafeMutablePointer<Int>?,
                                       _ object: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out"), count = try require(out_count, "out_count")
        let target = try Handles.object(object)
        let keys = try core { () throws(AmberError) in try target.object.extendedKeys() }
        // Keys are identifiers, so NUL separates them unambiguously.
        result.pointee = keys.isEmpty ? nil : try mallocString(keys.joined(separator: "\0")).0
        count.pointee = keys.count
    }
}
