import AmberModel
import AmberValues

/// SQL text with its parameters in order. Values only ever travel as
/// parameters; the text holds quoted identifiers, operators and `?`.
package struct SQLFragment {
    package var sql: String
    package var bindings: [Value] = []
    /// The attribute type the fragment yields, when it is a column (`.objectID`: a primary or foreign key).
    package var type: AttributeType?
    /// The key path it reads, for errors (`Book.author.name`).
    package var name: String?
    /// Folding its values already had: a `canonical:` derived attribute is
    /// folded for case and diacritics, so `[c]`, `[d]` and `[cd]` fold only the other side.
    package var folded: ComparisonOptions = []
    /// Whether its values may be of any type (an extended attribute): folding touches only text.
    package var mixed = false

    package init(sql: String, bindings: [Value] = [], type: AttributeType? = nil, name: String? = nil) {
        (self.sql, self.bindings, self.type, self.name) = (sql, bindings, type, name)
    }

    /// The fragment folded by `dialect` for `flags`; a mixed one only where it is text, so a
    /// number stays a number (its SQL then appears three times, and its bindings with it).
    package func folded(_ flags: Int64, by dialect: any SQLDialect) -> SQLFragment {
        guard mixed else { return SQLFragment(sql: dialect.fold(sql, flags: flags), bindings: bindings, type: type, name: name) }
        var folded = SQLFragment(sql: dialect.foldExtended(sql, flags: flags), bindings: bindings + bindings + bindings, type: type, name: name)
        folded.mixed = true
        return folded
    }
}
