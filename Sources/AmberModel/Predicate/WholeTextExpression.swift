import Foundation

/// `MATCHES` as Amber defines it, for every store and for predicates
/// evaluated in memory: the pattern must match the whole text, `[c]` ignores
/// case, and `[d]` compares the text and the pattern with their marks removed.
package struct WholeTextExpression {
    private let regex: NSRegularExpression
    private let foldsMarks: Bool

    /// The expression for `pattern` with `options`; nil if `pattern` is not a valid regular expression.
    package init?(_ pattern: String, options: ComparisonOptions) {
        // The pattern alone must be valid: wrapped, "a)|(b" would compile and escape the anchors.
        guard (try? NSRegularExpression(pattern: pattern)) != nil else { return nil }
        foldsMarks = options.contains(.diacriticInsensitive)
        let folded = TextFolding.fold(pattern, flags: options.intersection(.diacriticInsensitive).rawValue)
        guard let regex = try? NSRegularExpression(pattern: "^(?:\(folded))$",
                                                   options: options.contains(.caseInsensitive) ? [.caseInsensitive] : [])
        else { return nil }
        self.regex = regex
    }

    /// Whether the whole of `text` matches.
    package func matches(_ text: String) -> Bool {
        let subject = foldsMarks ? TextFolding.fold(text, flags: ComparisonOptions.diacriticInsensitive.rawValue) : text
        return regex.firstMatch(in: subject, range: NSRange(subject.startIndex..., in: subject)) != nil
    }
}
