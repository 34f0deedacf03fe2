import Foundation

/// A value of a custom value class: the class's name and the value's bytes.
/// For a struct class the bytes are the C struct exactly as the platform's C
/// compiler lays it out (``StructClass/size`` bytes).
public struct CustomValue: Sendable, Hashable {
    /// The value class's name.
    public let className: String
    /// The raw bytes.
    public let bytes: Data

    /// A value of class `className` holding `bytes` (checked against the class when used).
    public init(className: String, bytes: Data) {
        self.className = className
        self.bytes = bytes
    }
}
