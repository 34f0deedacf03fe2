import Amber

/// Model logic for Shelf objects, kept apart from the generated `Shelf` class.
final class LabelledShelf: Shelf {
    override func validateForInsert() throws {
        if try label.isEmpty { throw ValidationError(key: "label", "must not be empty") }
    }

    override func willSave() throws {
        // A shelf's label says how many items it holds; set here, it is saved in the same transaction.
        guard let base = try label.split(separator: " (").first.map(String.init) else { return }  // empty: validation refuses it
        let labelled = "\(base) (\(try items.count))"
        if try label != labelled { try set(label: labelled) }
    }
}
