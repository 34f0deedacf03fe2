import AmberTransformers
import AmberValues
import Foundation

/// The default transformer's archive format, from untrusted bytes (a store
/// another program wrote): decoded or refused; what decodes re-encodes to an
/// archive that decodes to the same value.
enum ArchiveHarness {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let value = try? PropertyListArchive.decode(Data(bytes)) else { return }
        let encoded: Data
        do {
            encoded = try PropertyListArchive.encode(value)
        } catch {
            fatalError("a decoded archive does not encode again: \(error)")
        }
        do {
            let again = try PropertyListArchive.encode(try PropertyListArchive.decode(encoded))
            guard again == encoded else { fatalError("an archive does not decode to the value it encodes: \(value)") }
        } catch {
            fatalError("an archive Amber wrote does not decode: \(error)")
        }
    }
}
