import AmberModel
import AmberSQL
import AmberValues

/// SQLite's words for what differs between SQL databases. Where SQLite has
/// no built-in that keeps Amber's rules (folding as Foundation folds,
/// decimals exactly, extended values from their JSON column, regular
/// expressions), it calls the functions ``SQLFunctions`` registers on every
/// connection.
struct SQLiteDialect: SQLDialect {
    var name: String { "SQLite" }

    // MARK: Layout

    /// The declared type gives each column its affinity. Decimals are TEXT so
    /// no digit is lost; dates are REAL seconds since 2001-01-01 UTC (Core
    /// Data's reference date), which round-trips `Date` bit for bit.
    func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float, .date: "REAL"
        case .string, .decimal, .uri: "TEXT"
        case .binary, .uuid, .transformable, .undefined, .objectID: "BLOB"
        }
    }

    /// The rowid itself: a key lookup is one B-tree seek.
    var primaryKeyDefinition: String { "INTEGER PRIMARY KEY" }
    var joinTableOptions: String { "WITHOUT ROWID" }
    var declaresForeignKeysInTable: Bool { true }
    /// SQLite puts NULLs first in ascending order, last in descending, as SortValue does.
    func direction(ascending: Bool) -> String { ascending ? " ASC" : " DESC" }
    /// The lowest limit a SQLite build has (SQLITE_MAX_VARIABLE_NUMBER before 3.32).
    var maximumParameters: Int { 999 }

    // MARK: Comparisons

    func fold(_ sql: String, flags: Int64) -> String { "amber_fold(\(sql), \(flags))" }
    func foldConstant(_ text: String, flags: Int64) -> String { TextFolding.fold(text, flags: flags) }
    func isText(_ sql: String) -> String { "typeof(\(sql)) = 'text'" }
    var distinctFrom: String { "IS NOT" }
    /// `IS NOT 1` nests one level in SQLite's parser where `NOT coalesce(…)` takes two
    /// (deep predicates meet the parser's depth limit).
    func isNotTrue(_ sql: String) -> String { "\(sql) IS NOT 1" }
    func contains(_ haystack: String, _ needle: String) -> String { "instr(\(haystack), \(needle)) > 0" }

    /// GLOB: case-sensitive as Core Data's LIKE without `[c]` (folding is done on both sides).
    func like(_ sql: String, pattern: String) -> (sql: String, pattern: String) {
        // A literal *, ? or [ is a one-character class in GLOB.
        ("\(sql) GLOB ?", LikePattern.written(pattern, anyRun: "*", oneCharacter: "?", escaping: ["*", "?", "["]) { "[\($0)]" })
    }

    func matches(_ sql: String, options: ComparisonOptions) -> String { "amber_matches(\(sql), ?, \(options.rawValue))" }

    // MARK: Values

    func exactDecimal(_ sql: String) -> String { "amber_decimal(\(sql))" }
    func approximateDecimal(_ sql: String) -> String { "CAST(\(sql) AS REAL)" }
    func extendedValue(_ column: String, name: String) -> String { "amber_extended(\(column), '\(name)')" }
    var keyListSubquery: String { "SELECT value FROM json_each(?)" }
    func keyList(_ keys: [Int64]) -> Value { .string(SQLiteStore.jsonArray(keys)) }
    /// SQLite's values carry their own types.
    func typedParameter(columnType: String) -> String { "?" }
    /// A negative limit is none.
    func limitParameters(limit: Int?, offset: Int) -> [Value] { [.int(Int64(limit ?? -1)), .int(Int64(offset))] }

    // MARK: Derived values and batch changes

    var now: String { "amber_now()" }
    func changeCase(_ sql: String, upper: Bool) -> String { "amber_case(\(sql), \(upper ? 1 : 0))" }
    /// `total` is 0.0 over no rows, where `sum` is NULL.
    func floatingSum(_ column: String) -> String { "total(\(column))" }
    func decimalArithmetic(_ op: String, _ left: String, _ right: String) -> String {
        "amber_decimal_arithmetic('\(op)', \(left), \(right))"
    }
}
