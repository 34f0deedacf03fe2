import AmberValues

/// The bytes of `count` values in one buffer, for the array forms of the
/// byte path (``CheckedTransformer/forward(_:into:stride:lengths:)``): each `stride` bytes
/// after the previous (a C array of structs), or one after another with
/// their `lengths` (blobs, opaque values of any size). The layout is checked
/// against the buffer when made; the values' sizes are checked by the
/// transformer, value by value.
public struct ByteValues {
    /// The buffer holding the values.
    public let bytes: UnsafeRawBufferPointer
    /// How many values it holds.
    public let count: Int
    let stride: Int
    let lengths: UnsafeBufferPointer<Int>?

    /// `count` values of `stride` bytes each, back to back in `bytes`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` if they do not fit in `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer, count: Int, stride: Int) throws(AmberError) {
        let (total, overflow) = count.multipliedReportingOverflow(by: stride)
        guard count >= 0, stride >= 0, !overflow, total <= bytes.count else {
            throw .invalidValue(place: "input", expected: "\(count) values of \(stride) bytes within \(bytes.count) bytes",
                                given: overflow || count < 0 || stride < 0 ? "a count or stride out of range" : "\(total) bytes")
        }
        self.bytes = bytes
        self.count = count
        self.stride = stride
        self.lengths = nil
    }

    /// One value per entry of `lengths`, one after another in `bytes`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` if a
    ///   length is negative or they add up to more than `bytes` holds.
    public init(_ bytes: UnsafeRawBufferPointer, lengths: UnsafeBufferPointer<Int>) throws(AmberError) {
        var total = 0
        for (index, length) in lengths.enumerated() {
            guard length >= 0, length <= bytes.count - total else {
                throw .invalidValue(place: "input lengths[\(index)]", expected: "a length within the \(bytes.count) bytes given",
                                    given: "\(UInt(bitPattern: length)) bytes after \(total)")
            }
            total += length
        }
        self.bytes = bytes
        self.count = lengths.count
        self.stride = 0
        self.lengths = lengths
    }

    /// Calls `body` with each value's index and bytes, in order.
    @inline(__always)
    func forEach(_ body: (Int, UnsafeRawBufferPointer) throws(AmberError) -> Void) throws(AmberError) {
        var offset = 0
        for index in 0..<count {
            let length = lengths?[index] ?? stride
            try body(index, UnsafeRawBufferPointer(start: bytes.baseAddress.map { $0 + offset }, count: length))
            offset += length
        }
    }
}

extension CheckedTransformer {
    /// The array form of ``forward(bytes:into:)``: converts every value of
    /// `input` forward with the same checks, one call each, into `output`,
    /// and records in `lengths` (if given, room for `input.count`) how many
    /// bytes each result has. With a `stride`, result `i` starts at
    /// `i × stride` and has `stride` bytes of room; with `stride` 0 the
    /// results are packed, each after the previous, with the rest of
    /// `output` as its room.
    ///
    /// - Throws: ``/AmberValues/AmberError/transformerFailed(place:transformer:source:message:)``
    ///   naming `Transformer, element i` for the first value that fails
    ///   (results before it are written, nothing after it is called);
    ///   ``/AmberValues/AmberError/invalidValue(place:expected:given:)`` if the output
    ///   buffer or `lengths` cannot hold `input.count` results.
    public func forward(_ input: ByteValues, into output: UnsafeMutableRawBufferPointer, stride: Int = 0,
                        lengths: UnsafeMutableBufferPointer<Int>? = nil) throws(AmberError)
    {
        try convert(input, into: output, stride: stride, lengths: lengths, reverse: false)
    }

    /// ``forward(_:into:stride:lengths:)`` in the other direction.
    public func reverse(_ input: ByteValues, into output: UnsafeMutableRawBufferPointer, stride: Int = 0,
                        lengths: UnsafeMutableBufferPointer<Int>? = nil) throws(AmberError)
    {
        try convert(input, into: output, stride: stride, lengths: lengths, reverse: true)
    }

    private func convert(_ input: ByteValues, into output: UnsafeMutableRawBufferPointer, stride: Int,
                         lengths: UnsafeMutableBufferPointer<Int>?, reverse: Bool) throws(AmberError)
    {
        let (room, overflow) = input.count.multipliedReportingOverflow(by: stride)
        guard stride >= 0, !overflow, room <= output.count else {
            throw .invalidValue(place: "\(name) output", expected: "room for \(input.count) results of \(stride) bytes",
                                given: "\(output.count) bytes")
        }
        if let lengths, lengths.count < input.count {
            throw .invalidValue(place: "\(name) lengths", expected: "room for \(input.count) lengths", given: "\(lengths.count)")
        }
        var offset = 0
        try input.forEach { (index, bytes) throws(AmberError) in
            let start = stride > 0 ? index * stride : offset
            let target = UnsafeMutableRawBufferPointer(start: output.baseAddress.map { $0 + start },
                                                       count: stride > 0 ? stride : output.count - offset)
            let written: Int
            do throws(TransformerFailure) {
                written = reverse ? try bound.reverse(bytes: bytes, into: target) : try bound.forward(bytes: bytes, into: target)
            } catch {
                throw error.error(at: "\(name), element \(index)")
            }
            lengths?[index] = written
            offset += written
        }
    }
}
