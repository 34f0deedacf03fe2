import AmberModel
import AmberSQL
import AmberValues

/// PostgreSQL's words for what differs between SQL databases: its own types
/// (`numeric` keeps a decimal's scale, `uuid`, `bytea`; dates as
/// `double precision` seconds since 2001, exact), standard NULL-safe comparisons, `LIKE` with an escape,
/// regular expressions with `~`, and `unaccent` (the extension the store
/// creates) for diacritic-insensitive comparisons.
///
/// Columns are folded by the server (`lower`, `unaccent`) and constants by
/// ``TextFolding`` before they are bound: the two agree for the Latin,
/// Greek and Cyrillic letters; a character whose folding differs between
/// Foundation and the server's locale (the Turkish dotless i, ß) may
/// compare differently than on SQLite.
package struct PostgreSQLDialect: SQLDialect {
    package init() {}

    package var name: String { "PostgreSQL" }

    // MARK: Layout

    package func columnType(_ type: AttributeType) -> String { Self.column(type).type }

    /// The column type values of `type` are stored in, and that type's OID
    /// (how a result names it): one table, so the two never disagree.
    package static func column(_ type: AttributeType) -> (type: String, oid: UInt32) {
        switch type {
        case .integer16: ("smallint", 21)
        case .integer32: ("integer", 23)
        case .integer64: ("bigint", 20)
        case .boolean: ("boolean", 16)
        case .double: ("double precision", 701)
        case .float: ("real", 700)
        // Seconds since 2001-01-01 UTC, as Amber's dates are (and SQLite's store keeps them):
        // exact for every Date, where timestamptz would round to the microsecond.
        case .date: ("double precision", 701)
        // Bytewise, as SQLite compares text and as live queries place rows, whatever the database's locale.
        case .string, .uri: ("text COLLATE \"C\"", 25)
        case .decimal: ("numeric", 1700)
        case .uuid: ("uuid", 2950)
        case .binary, .transformable, .undefined, .objectID: ("bytea", 17)
        }
    }

    package var primaryKeyDefinition: String { "bigint PRIMARY KEY" }
    package var joinTableOptions: String { "" }
    package var declaresForeignKeysInTable: Bool { false }
    /// PostgreSQL puts NULLs last in ascending order: said otherwise, to order as SQLite and SortValue do.
    package func direction(ascending: Bool) -> String { ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST" }
    /// The protocol's limit: parameter numbers are 16-bit.
    package var maximumParameters: Int { 65_535 }

    /// Why `numeric` would not give decimal text `text` back as written
    /// (it keeps the scale, but writes no exponent and no negative zero);
    /// nil when it would.
    package static func numericRefusal(_ text: String) -> String? {
        if text.uppercased().contains("E+") { return "\(text), whose exponent numeric would write out (write it without one)" }
        if text.hasPrefix("-"), !text.contains(where: { ("1"..."9").contains($0) }) {
            return "\(text), a negative zero, which numeric keeps as \(text.dropFirst())"
        }
        return nil
    }

    // MARK: Comparisons

    package func fold(_ sql: String, flags: Int64) -> String {
        var folded = sql
        if flags & ComparisonOptions.diacriticInsensitive.rawValue != 0 { folded = "unaccent(\(folded))" }
        // Text columns sort by bytes (COLLATE "C"), whose lower() folds ASCII only: fold by the database's own
        // rules, then compare and sort the folded text by its bytes again.
        if flags & ComparisonOptions.caseInsensitive.rawValue != 0 { folded = "lower((\(folded)) COLLATE \"default\") COLLATE \"C\"" }
        return folded
    }

    package func foldConstant(_ text: String, flags: Int64) -> String { TextFolding.fold(text, flags: flags) }
    package func isText(_ sql: String) -> String { "(\(sql)).k = 2" }

    package func foldExtended(_ sql: String, flags: Int64) -> String {
        "CASE WHEN (\(sql)).k = 2 THEN ROW(2, 0, \(fold("(\(sql)).t", flags: flags)))::amber_value ELSE \(sql) END"
    }

    /// A constant or column as an `amber_value`: numbers (Booleans as 0 and 1, dates as seconds) of kind 1, text of kind 2.
    package func extendedOperand(_ fragment: SQLFragment) -> SQLFragment {
        func number(_ sql: String, _ bindings: [Value]) -> SQLFragment { SQLFragment(sql: "ROW(1, (\(sql))::numeric, '')::amber_value", bindings: bindings) }
        func text(_ sql: String, _ bindings: [Value]) -> SQLFragment { SQLFragment(sql: "ROW(2, 0, (\(sql))::text)::amber_value", bindings: bindings) }
        if fragment.sql == "?", fragment.bindings.count == 1 {
            switch fragment.bindings[0] {
            case .int, .double, .float, .decimal: return number("?", fragment.bindings)
            case .bool(let flag): return number("?", [.int(flag ? 1 : 0)])
            case .date(let date): return number("?", [.double(date.timeIntervalSinceReferenceDate)])
            case .null: return SQLFragment(sql: "NULL::amber_value")
            default: return text("?", fragment.bindings)
            }
        }
        switch fragment.type {
        case .integer16?, .integer32?, .integer64?, .double?, .float?, .decimal?, .date?: return number(fragment.sql, fragment.bindings)
        case .boolean?: return number("(\(fragment.sql))::int", fragment.bindings)
        default: return text(fragment.sql, fragment.bindings)
        }
    }

    /// Its text where it holds text, NULL otherwise (a number matches no text operator).
    package func extendedText(_ sql: String) -> String { "CASE WHEN (\(sql)).k = 2 THEN (\(sql)).t END" }
    package var distinctFrom: String { "IS DISTINCT FROM" }
    package func isNotTrue(_ sql: String) -> String { "\(sql) IS NOT TRUE" }
    package func contains(_ haystack: String, _ needle: String) -> String { "strpos(\(haystack), \(needle)) > 0" }

    /// `LIKE` with `\` as its escape: `*` becomes `%`, `?` `_`, and a
    /// literal `%`, `_` or `\` is escaped.
    package func like(_ sql: String, pattern: String) -> (sql: String, pattern: String) {
        ("\(sql) LIKE ? ESCAPE '\\'", LikePattern.written(pattern, anyRun: "%", oneCharacter: "_", escaping: ["%", "_", "\\"]) { "\\\($0)" })
    }

    /// The whole text must match, as Core Data's MATCHES: the pattern is anchored.
    package func matches(_ sql: String, options: ComparisonOptions) -> String {
        let diacritics = options.contains(.diacriticInsensitive)
        let subject = diacritics ? "unaccent(\(sql))" : sql
        let pattern = diacritics ? "unaccent(?)" : "?"
        let caseInsensitive = options.contains(.caseInsensitive)
        return "(\(subject))\(caseInsensitive ? " COLLATE \"default\" ~*" : " ~") ('^(?:' || \(pattern) || ')$')"
    }

    // MARK: Values

    /// `numeric` compares numbers, whatever their scale.
    package func exactDecimal(_ sql: String) -> String { "(\(sql))::numeric" }
    /// `numeric` orders exactly; nothing to approximate.
    package func approximateDecimal(_ sql: String) -> String { sql }
    /// An `amber_value` (``PGExtendedValues``), NULL where the key is absent.
    package func extendedValue(_ column: String, name: String) -> String { "amber_extended(\(column), '\(name)')" }
    package var keyListSubquery: String { "SELECT unnest(?::bigint[])" }
    package func keyList(_ keys: [Int64]) -> Value { .string("{" + keys.map(String.init).joined(separator: ",") + "}") }
    package func typedParameter(columnType: String) -> String { "?::\(columnType)" }
    /// A NULL limit is none.
    package func limitParameters(limit: Int?, offset: Int) -> [Value] { [limit.map { .int(Int64($0)) } ?? .null, .int(Int64(offset))] }

    // MARK: Derived values and batch changes

    /// Now as dates are stored: seconds since 2001-01-01 UTC.
    package var now: String { "(extract(epoch FROM clock_timestamp())::double precision - 978307200)" }
    package func changeCase(_ sql: String, upper: Bool) -> String { "\(upper ? "upper" : "lower")((\(sql)) COLLATE \"default\")" }
    package func floatingSum(_ column: String) -> String { "coalesce(sum(\(column)), 0)::double precision" }
    /// `numeric` arithmetic is exact and keeps the scale decimal arithmetic gives.
    package func decimalArithmetic(_ op: String, _ left: String, _ right: String) -> String { "(\(left) \(op) \(right))" }
}
