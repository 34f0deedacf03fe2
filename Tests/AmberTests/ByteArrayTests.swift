import Foundation
import Testing
@testable import Amber
@testable import AmberTransformers
@testable import AmberValues

/// The array form of the byte path (CheckedTransformer.forward(_:into:stride:lengths:)):
/// the results of one call per value, and errors naming the element.
@Suite struct ByteArrayTests {
    /// The colour plugin (forward_bytes) and the Swift test transformer
    /// (value functions only): many values in one call give what one call
    /// per value gives, both ways, strided and packed.
    @Test func manyValuesGiveWhatOneCallEachGives() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plugin = Registry()
        try plugin.loadPlugin(at: try samplePlugin("Color", "color.c", in: directory))
        var generator = SplitMix64(seed: 7)
        let count = 300
        var colors: [UInt8] = []
        for _ in 0..<count {
            colors += BytePathTests.colorBytes(.random(in: -1e6...1e6, using: &generator), .random(in: 0...1, using: &generator),
                                               -0.0, .random(in: -1...1, using: &generator))
        }
        for transformer in [try plugin.transformer(named: "ColorToData"), try colorRegistry().transformer(named: "ColorToData")] {
            // One call per value.
            var expected = [UInt8](repeating: 0, count: 16 * count)
            for index in 0..<count {
                let written = try colors[index * 16..<(index + 1) * 16].withUnsafeBytes { input in
                    try expected[index * 16..<(index + 1) * 16].withUnsafeMutableBytes { try transformer.forward(bytes: input, into: $0) }
                }
                #expect(written == 16)
            }
            // One call for all, strided (the output slots of 20 bytes leave 4 untouched each) and packed.
            var strided = [UInt8](repeating: 0xAA, count: 20 * count), packed = [UInt8](repeating: 0, count: 16 * count)
            var lengths = [Int](repeating: -1, count: count)
            try colors.withUnsafeBytes { input in
                let values = try ByteValues(input, count: count, stride: 16)
                try strided.withUnsafeMutableBytes { output in
                    try lengths.withUnsafeMutableBufferPointer { try transformer.forward(values, into: output, stride: 20, lengths: $0) }
                }
                try packed.withUnsafeMutableBytes { try transformer.forward(values, into: $0) }
            }
            #expect(lengths == [Int](repeating: 16, count: count))
            #expect(packed == expected)
            #expect((0..<count).allSatisfy { Array(strided[$0 * 20..<$0 * 20 + 16]) == Array(expected[$0 * 16..<($0 + 1) * 16]) })
            #expect((0..<count).allSatisfy { strided[$0 * 20 + 16..<($0 + 1) * 20].allSatisfy { $0 == 0xAA } })
            // And back, the stored forms given by their lengths.
            var back = [UInt8](repeating: 0, count: 16 * count)
            try expected.withUnsafeBytes { input in
                try lengths.withUnsafeBufferPointer { given in
                    let values = try ByteValues(input, lengths: given)
                    try back.withUnsafeMutableBytes { try transformer.reverse(values, into: $0, stride: 16) }
                }
            }
            #expect(back == colors)
        }
    }

    @Test func theFirstFailingElementIsNamedAndNothingAfterItRuns() throws {
        let counter = CallCounter(), behaviour = Behaviour()
        let transformer = try colorRegistry(counter: counter, behaviour: behaviour).transformer(named: "ColorToData")
        var output = [UInt8](repeating: 0, count: 64)
        var lengths = [Int](repeating: -1, count: 4)
        // Element 2 is 8 bytes where a Color has 16.
        let sizes = [16, 16, 8, 16]
        let input = [UInt8](repeating: 1, count: sizes.reduce(0, +))
        let error = amberError {
            try input.withUnsafeBytes { bytes in
                try sizes.withUnsafeBufferPointer { given in
                    try output.withUnsafeMutableBytes { out in
                        try lengths.withUnsafeMutableBufferPointer {
                            try transformer.forward(try ByteValues(bytes, lengths: given), into: out, stride: 16, lengths: $0)
                        }
                    }
                }
            }
        }
        guard case .transformerFailed(let place, let name, _, let message) = error else {
            Issue.record("expected transformerFailed, got \(String(describing: error))")
            return
        }
        #expect(place == "ColorToData, element 2" && name == "ColorToData")
        #expect(message.contains("forward was given 8 bytes, but Color values have 16"))
        #expect(lengths == [16, 16, -1, -1] && counter.forward == 2)

        // The transformer's own failure names its element too.
        behaviour.mode = .throwing
        #expect(amberError {
            try [UInt8](repeating: 0, count: 32).withUnsafeBytes { bytes in
                try output.withUnsafeMutableBytes { try transformer.forward(try ByteValues(bytes, count: 2, stride: 16), into: $0, stride: 16) }
            }
        }?.description.hasPrefix("ColorToData, element 0: transformer \"ColorToData\"") == true)
    }

    @Test func layoutsThatDoNotFitAreRefused() throws {
        let transformer = try colorRegistry().transformer(named: "ColorToData")
        let input = [UInt8](repeating: 0, count: 32)
        var output = [UInt8](repeating: 0, count: 32)
        try input.withUnsafeBytes { bytes in
            #expect(amberError { _ = try ByteValues(bytes, count: 3, stride: 16) } != nil)
            #expect(amberError { _ = try ByteValues(bytes, count: .max, stride: 16) } != nil)
            #expect(amberError { _ = try ByteValues(bytes, count: 1, stride: -1) } != nil)
            #expect(amberError { _ = try [16, 17].withUnsafeBufferPointer { try ByteValues(bytes, lengths: $0) } } != nil)
            #expect(amberError { _ = try [-1].withUnsafeBufferPointer { try ByteValues(bytes, lengths: $0) } } != nil)
            let two = try ByteValues(bytes, count: 2, stride: 16)
            try output.withUnsafeMutableBytes { out in
                guard case .invalidValue(let place, _, _) = amberError({ try transformer.forward(two, into: out, stride: 17) }) else {
                    Issue.record("two results of 17 bytes do not fit in 32")
                    return
                }
                #expect(place == "ColorToData output")
                var one = [0]
                #expect(amberError { try one.withUnsafeMutableBufferPointer { try transformer.forward(two, into: out, stride: 16, lengths: $0) } }
                    != nil)
                // Nothing to convert: nothing is called, nothing is refused.
                try transformer.forward(try ByteValues(bytes, count: 0, stride: 16), into: out, stride: 16)
            }
        }
    }
}
