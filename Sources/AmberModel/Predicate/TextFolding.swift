import Foundation

/// Folding for case- and diacritic-insensitive comparison, as Amber defines
/// it (Foundation's folding): constants are folded with it before they are
/// bound, and a dialect folds columns to match.
package enum TextFolding {
    /// `text` folded for `flags` (a ``ComparisonOptions`` raw value): lower
    /// case with `.caseInsensitive`, without marks with `.diacriticInsensitive`.
    package static func fold(_ text: String, flags: Int64) -> String {
        var options: String.CompareOptions = []
        if flags & ComparisonOptions.caseInsensitive.rawValue != 0 { options.insert(.caseInsensitive) }
        if flags & ComparisonOptions.diacriticInsensitive.rawValue != 0 { options.insert(.diacriticInsensitive) }
        return options.isEmpty ? text : text.folding(options: options, locale: nil)
    }
}
