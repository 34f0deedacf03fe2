import AmberTransformers
import AmberValues
import Foundation

/// A keyed archive (what Core Data's secure unarchiver stores), from
/// untrusted bytes (a store another program wrote): read or refused; a
/// plist-like value it reads (a URL is not one) is one Amber's own archive
/// keeps, reading back the same.
enum KeyedArchiveHarness {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let value = try? KeyedArchive(Data(bytes)).rootValue(), value.isPropertyList else { return }
        do {
            let again = try PropertyListArchive.decode(PropertyListArchive.encode(value))
            guard again == value else { fatalError("a keyed archive's value does not keep in Amber's archive: \(value)") }
        } catch {
            fatalError("a keyed archive's value is not one Amber's archive keeps: \(error)")
        }
    }
}
