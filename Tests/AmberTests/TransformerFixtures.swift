import Foundation
import Synchronization
@testable import Amber
@testable import AmberModel
@testable import AmberSQLiteStore
@testable import AmberTransformers
@testable import AmberValues

/// Counts calls, so tests can prove when transformers run.
final class CallCounter: Sendable {
    private let counts = Mutex<(forward: Int, reverse: Int)>((0, 0))
    var forward: Int { counts.withLock { $0.forward } }
    var reverse: Int { counts.withLock { $0.reverse } }
    func countForward() { counts.withLock { $0.forward += 1 } }
    func countReverse() { counts.withLock { $0.reverse += 1 } }
    func reset() { counts.withLock { $0 = (0, 0) } }
}

/// How a test transformer misbehaves, switchable while a test runs.
final class Behaviour: Sendable {
    enum Mode: Sendable { case honest, throwing, wrongClass, wrongSize }
    private let current = Mutex(Mode.honest)
    var mode: Mode {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String { "the test asked it to fail" }
}

/// A registry with `Color { float r, g, b, a }` and `ColorToData` (Color ↔ 16-byte Binary),
/// whose calls are counted and whose behaviour a test can switch.
func colorRegistry(counter: CallCounter = CallCounter(), behaviour: Behaviour = Behaviour()) throws -> Registry {
    let registry = Registry()
    try registry.declare(.structure(name: "Color", fields: ["r", "g", "b", "a"].map { FieldDescription($0, .float) }))
    try registry.register(Transformer(
        name: "ColorToData", from: "Color", to: "Binary", source: "test",
        forward: { value in
            counter.countForward()
            guard case .custom(let color) = value else { return .null }
            switch behaviour.mode {
            case .honest: return .binary(color.bytes)
            case .throwing: throw TestFailure()
            case .wrongClass: return .string("not bytes")
            case .wrongSize: return .binary(color.bytes)
            }
        },
        reverse: { value in
            counter.countReverse()
            guard case .binary(let data) = value else { return .null }
            switch behaviour.mode {
            case .honest: return .custom(CustomValue(className: "Color", bytes: data))
            case .throwing: throw TestFailure()
            case .wrongClass: return .string("not a colour")
            case .wrongSize: return .custom(CustomValue(className: "Color", bytes: data.prefix(8)))
            }
        }))
    return registry
}

func color(_ r: Float, _ g: Float, _ b: Float, _ a: Float, in registry: Registry) throws -> Value {
    guard let colorClass = registry.structClass(named: "Color") else { throw TestFailure() }
    return try colorClass.value(["r": .float(r), "g": .float(g), "b": .float(b), "a": .float(a)])
}

/// A Book with a cover colour stored through ColorToData, with the given policies.
func coverModel(_ registry: Registry, decode: AttributeDescription.DecodePolicy = .lazy,
                encode: AttributeDescription.EncodePolicy = .onSave) throws -> Model
{
    try Model(ModelDescription {
        EntityDescription("Book") {
            Attribute.string("title").required()
            Attribute.transformable("cover", valueClass: "Color", transformers: ["ColorToData"]).decode(decode).encode(encode)
        }
    }, registry: registry)
}
