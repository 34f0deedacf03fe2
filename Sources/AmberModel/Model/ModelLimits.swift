import AmberValues
import Foundation

/// How large a model may be, checked before its text is parsed, so a huge or
/// hostile file is refused with a message instead of growing memory many
/// times its size. Real models are kilobytes (the largest here, with
/// hundreds of entities, under one megabyte).
public enum ModelLimits {
    /// The most bytes a model file (JSON, or an Xcode model's `contents`) may have: 64 MiB.
    public static let fileBytes = 64 << 20
    /// The most entities a model may declare: 65,536.
    public static let entities = 1 << 16

    /// Why text of `count` bytes is refused, or nil when it is within ``fileBytes``.
    static func refusal(bytes count: Int) -> String? {
        count > fileBytes ? "the model is \(count) bytes; a model file may have at most \(fileBytes) (64 MiB)" : nil
    }

    /// Why the file at `url` is refused for its size (told before it is read), or nil.
    static func refusal(fileAt url: URL) -> String? {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber else { return nil }
        return refusal(bytes: size.intValue)
    }
}
