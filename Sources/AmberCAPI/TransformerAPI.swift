import Amber
import AmberHeaders
import Foundation

/// A transformer handle: the checked transformer and its class names as C strings.
final class CTransformer: Sendable {
    let transformer: CheckedTransformer
    let strings = CStringPool()
    init(_ transformer: CheckedTransformer) { self.transformer = transformer }
}

@c @implementation
public func amber_registry_transformer(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ registry: OpaquePointer?,
                                       _ name: UnsafePointer<CChar>?) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let target = try Handles.registry(registry)
        let transformerName = try AmberCAPI.name(name, "name")
        let transformer = try core { () throws(AmberError) in try target.transformer(named: transformerName) }
        result.pointee = Handles.make(CTransformer(transformer), kind: .transformer)
    }
}

@c @implementation
public func amber_transformer_free(_ transformer: OpaquePointer?) -> amber_status {
    api { () throws(CAPIError) in try Handles.release(transformer, as: .transformer, "transformer") }
}

@c @implementation
public func amber_transformer_classes(_ out_input_class: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                      _ out_input_size: UnsafeMutablePointer<Int>?,
                                      _ out_output_class: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                      _ out_output_size: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?) -> amber_status
{
    api { () throws(CAPIError) in
        try Handles.withShared(transformer, as: .transformer, "transformer") { (wrapper: CTransformer) in
            let checked = wrapper.transformer
            out_input_class?.pointee = wrapper.strings.cString(checked.inputClass)
            out_input_size?.pointee = checked.inputSize ?? 0
            out_output_class?.pointee = wrapper.strings.cString(checked.outputClass)
            out_output_size?.pointee = checked.outputSize ?? 0
        }
    }
}

/// One value through a transformer handle, either way.
private func transform(_ out: UnsafeMutablePointer<amber_value>?, _ transformer: OpaquePointer?,
                       _ input: UnsafePointer<amber_value>?, reverse: Bool) -> amber_status
{
    api { () throws(CAPIError) in
        let result = try require(out, "out")
        let value = try CValue.read(input, "input")
        let converted = try Handles.withShared(transformer, as: .transformer, "transformer") { (wrapper: CTransformer) throws(CAPIError) in
            try core { () throws(AmberError) in
                reverse ? try wrapper.transformer.reverse(value) : try wrapper.transformer.forward(value)
            }
        }
        try CValue.write(converted, to: result)
    }
}

@c @implementation
public func amber_transformer_forward(_ out: UnsafeMutablePointer<amber_value>?, _ transformer: OpaquePointer?,
                                      _ input: UnsafePointer<amber_value>?) -> amber_status
{
    transform(out, transformer, input, reverse: false)
}

@c @implementation
public func amber_transformer_reverse(_ out: UnsafeMutablePointer<amber_value>?, _ transformer: OpaquePointer?,
                                      _ input: UnsafePointer<amber_value>?) -> amber_status
{
    transform(out, transformer, input, reverse: true)
}

/// Bytes through a transformer handle, either way.
private func transformBytes(_ out_length: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?,
                            _ input: UnsafeRawPointer?, _ input_length: Int, _ output: UnsafeMutableRawPointer?,
                            _ output_capacity: Int, reverse: Bool) -> amber_status
{
    api { () throws(CAPIError) in
        let lengthOut = try require(out_length, "out_length")
        lengthOut.pointee = try Handles.withShared(transformer, as: .transformer, "transformer") {
            (wrapper: CTransformer) throws(CAPIError) in
            let inputCount = try count(input_length, "input_length"), capacity = try count(output_capacity, "output_capacity")
            guard inputCount == 0 || input != nil else { throw .null("input") }
            guard capacity == 0 || output != nil else { throw .null("output") }
            let source = UnsafeRawBufferPointer(start: input, count: inputCount)
            let target = UnsafeMutableRawBufferPointer(start: output, count: capacity)
            return try core { () throws(AmberError) in
                reverse ? try wrapper.transformer.reverse(bytes: source, into: target)
                        : try wrapper.transformer.forward(bytes: source, into: target)
            }
        }
    }
}

@c @implementation
public func amber_transformer_forward_bytes(_ out_length: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?,
                                            _ input: UnsafeRawPointer?, _ input_length: Int, _ output: UnsafeMutableRawPointer?,
                                            _ output_capacity: Int) -> amber_status
{
    transformBytes(out_length, transformer, input, input_length, output, output_capacity, reverse: false)
}

@c @implementation
public func amber_transformer_reverse_bytes(_ out_length: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?,
                                            _ input: UnsafeRawPointer?, _ input_length: Int, _ output: UnsafeMutableRawPointer?,
                                            _ output_capacity: Int) -> amber_status
{
    transformBytes(out_length, transformer, input, input_length, output, output_capacity, reverse: true)
}

// MARK: Many values per call

/// `count` values' bytes through a transformer handle, either way: the C
/// buffers checked and laid over ``ByteValues``, then the Swift array form.
private func transformByteArray(_ out_lengths: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?, _ count: Int,
                                _ input: UnsafeRawPointer?, _ input_size: Int, _ input_stride: Int,
                                _ input_lengths: UnsafePointer<Int>?, _ output: UnsafeMutableRawPointer?, _ output_size: Int,
                                _ output_stride: Int, reverse: Bool) -> amber_status
{
    api { () throws(CAPIError) in
        try Handles.withShared(transformer, as: .transformer, "transformer") { (wrapper: CTransformer) throws(CAPIError) in
            let values = try AmberCAPI.count(count, "count")
            let inputSize = try AmberCAPI.count(input_size, "input_size"), outputSize = try AmberCAPI.count(output_size, "output_size")
            let inputStride = try AmberCAPI.count(input_stride, "input_stride"), outputStride = try AmberCAPI.count(output_stride, "output_stride")
            guard inputSize == 0 || input != nil else { throw .null("input") }
            guard outputSize == 0 || output != nil else { throw .null("output") }
            let source = UnsafeRawBufferPointer(start: input, count: inputSize)
            let layout: ByteValues
            if let input_lengths {
                guard inputStride == 0 else {
                    throw CAPIError(AMBER_E_INVALID_VALUE, "input_stride (\(inputStride)) and input_lengths are both set; give one",
                                    origin: "input_stride")
                }
                layout = try core { () throws(AmberError) in try ByteValues(source, lengths: UnsafeBufferPointer(start: input_lengths, count: values)) }
            } else {
                layout = try core { () throws(AmberError) in try ByteValues(source, count: values, stride: inputStride) }
            }
            let target = UnsafeMutableRawBufferPointer(start: output, count: outputSize)
            let lengths = out_lengths.map { UnsafeMutableBufferPointer(start: $0, count: values) }
            try core { () throws(AmberError) in
                if reverse {
                    try wrapper.transformer.reverse(layout, into: target, stride: outputStride, lengths: lengths)
                } else {
                    try wrapper.transformer.forward(layout, into: target, stride: outputStride, lengths: lengths)
                }
            }
        }
    }
}

@c @implementation
public func amber_transformer_forward_bytes_array(_ out_lengths: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?,
                                                  _ count: Int, _ input: UnsafeRawPointer?, _ input_size: Int, _ input_stride: Int,
                                                  _ input_lengths: UnsafePointer<Int>?, _ output: UnsafeMutableRawPointer?,
                                                  _ output_size: Int, _ output_stride: Int) -> amber_status
{
    transformByteArray(out_lengths, transformer, count, input, input_size, input_stride, input_lengths, output, output_size,
                       output_stride, reverse: false)
}

@c @implementation
public func amber_transformer_reverse_bytes_array(_ out_lengths: UnsafeMutablePointer<Int>?, _ transformer: OpaquePointer?,
                                                  _ count: Int, _ input: UnsafeRawPointer?, _ input_size: Int, _ input_stride: Int,
                                                  _ input_lengths: UnsafePointer<Int>?, _ output: UnsafeMutableRawPointer?,
                                                  _ output_size: Int, _ output_stride: Int) -> amber_status
{
    transformByteArray(out_lengths, transformer, count, input, input_size, input_stride, input_lengths, output, output_size,
                       output_stride, reverse: true)
}
