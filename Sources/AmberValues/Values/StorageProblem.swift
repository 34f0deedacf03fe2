import Foundation

extension Value {
    /// Why this value cannot be stored and read back exactly by every binding
    /// (nil: it can): a date outside ``DateText/range``, here or inside an
    /// array or dictionary, or, inside one, a NaN or infinity when
    /// `itemsAsJSON` (JSON, the form arrays and dictionaries take across the
    /// C API, holds neither). A NaN at the top is the attribute's concern:
    /// stored, it is refused; transient, it is kept.
    package func storageProblem(itemsAsJSON: Bool = true) -> String? {
        switch self {
        case .date(let d): return DateText.problem(d)
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let problem = item.itemProblem(itemsAsJSON) { return "item \(index): \(problem)" }
            }
            return nil
        case .dictionary(let items):
            for key in items.keys.sorted() {
                if let problem = items[key]?.itemProblem(itemsAsJSON) { return "key \"\(key)\": \(problem)" }
            }
            return nil
        default: return nil
        }
    }

    private func itemProblem(_ asJSON: Bool) -> String? {
        let number: Double? = switch self {
        case .double(let d): d
        case .float(let f): Double(f)
        default: nil
        }
        if asJSON, let number, !number.isFinite {
            return "JSON, which carries arrays and dictionaries across the C API, cannot hold \(self)"
        }
        return storageProblem(itemsAsJSON: asJSON)
    }

    /// Whether this is a Double or Float NaN, which SQLite cannot keep (it stores NULL).
    package var isNaN: Bool {
        switch self {
        case .double(let d): d.isNaN
        case .float(let f): f.isNaN
        default: false
        }
    }
}
