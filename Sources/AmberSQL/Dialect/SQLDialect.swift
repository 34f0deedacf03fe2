import AmberModel
import AmberValues

/// The parts of Amber's SQL that differ between databases, each named once.
///
/// Everything else a SQL store writes lives in this target and is shared by
/// every SQL store: the predicate compiler (``PredicateCompiler``), fetch
/// queries (``FetchQuery``), derived values, batch assignments and the table
/// layout with its statements (``TableMapping``). A SQL store supplies one
/// dialect and runs the statements through its own driver; it binds values
/// and reads columns itself, since that is its driver's business.
///
/// Parameters are always written `?`, in binding order. A database that
/// numbers them (PostgreSQL's `$1`) renumbers the text when it prepares it:
/// shared SQL never holds a `?` anywhere else, because values only ever
/// travel as parameters and identifiers are quoted by ``quote(_:)``.
package protocol SQLDialect: Sendable {
    /// The database's name, for messages ("SQLite").
    var name: String { get }

    // MARK: Layout

    /// The declared type of a column holding values of `type`.
    func columnType(_ type: AttributeType) -> String
    /// The definition of the `_pk` column: a 64-bit integer primary key.
    var primaryKeyDefinition: String { get }
    /// What follows a join table's column list (SQLite: `WITHOUT ROWID`, so
    /// the rows live in the primary key's B-tree).
    var joinTableOptions: String { get }
    /// Whether foreign keys are declared inside CREATE TABLE (SQLite, which
    /// cannot add them later and checks them only when used) rather than
    /// added once every table exists (PostgreSQL, which checks that the
    /// table referred to exists: two tables may refer to each other).
    var declaresForeignKeysInTable: Bool { get }
    /// The most parameters one statement may bind (multi-row inserts are sized by it).
    var maximumParameters: Int { get }

    // MARK: Comparisons

    /// `sql` folded per row for case- (flag 1) and diacritic-insensitive
    /// (flag 2) comparison, as ``foldConstant(_:flags:)`` folds constants.
    func fold(_ sql: String, flags: Int64) -> String
    /// A constant folded exactly as ``fold(_:flags:)`` folds a column, so the two compare.
    func foldConstant(_ text: String, flags: Int64) -> String
    /// A condition: `sql` (of any type, an extended attribute) holds text.
    func isText(_ sql: String) -> String
    /// Extended attribute `sql` folded per row for case (flag 1) and
    /// diacritics (flag 2) where it holds text, as it was otherwise. `sql`
    /// appears three times (a caller repeats its bindings so).
    func foldExtended(_ sql: String, flags: Int64) -> String
    /// `fragment` (a constant or a column) in the form an extended
    /// attribute's values take in `sql`, so the two compare: numbers before
    /// text, numbers by value, text by its bytes, as SQLite orders values.
    func extendedOperand(_ fragment: SQLFragment) -> SQLFragment
    /// Extended attribute `sql` as text, for text operators (`CONTAINS`,
    /// `LIKE`, …): its value if that is text, else NULL (so `3 BEGINSWITH
    /// '3'` is false, as in memory); with `sql` twice (a caller repeats its bindings so).
    func extendedText(_ sql: String) -> String
    /// The inequality operator under which NULL differs from every value
    /// (SQLite's `IS NOT`, the standard's `IS DISTINCT FROM`).
    var distinctFrom: String { get }
    /// A condition: `sql` is false or NULL.
    func isNotTrue(_ sql: String) -> String
    /// A condition: text `haystack` contains text `needle`.
    func contains(_ haystack: String, _ needle: String) -> String
    /// Core Data's LIKE (`*` any run, `?` one character, `\` escapes) on
    /// `sql`: the condition, with one parameter, and the pattern to bind there.
    func like(_ sql: String, pattern: String) -> (sql: String, pattern: String)
    /// A condition: `sql` matches the regular expression bound to the one
    /// parameter, as a whole, with `options` (case and diacritics).
    func matches(_ sql: String, options: ComparisonOptions) -> String

    // MARK: Values

    /// A stored decimal compared by its number alone, exactly (12.30 equals 12.3).
    func exactDecimal(_ sql: String) -> String
    /// A stored decimal as an approximate number, for ordering.
    func approximateDecimal(_ sql: String) -> String
    /// Extended attribute `name` (a checked key: letters, digits, `_`) read
    /// from the JSON column `column`, comparable as the dialect stores it.
    func extendedValue(_ column: String, name: String) -> String
    /// A subquery yielding the keys bound to its one parameter, as ``keyList(_:)`` makes them.
    var keyListSubquery: String { get }
    /// Keys as one parameter, for ``keyListSubquery``: one statement whatever their number.
    func keyList(_ keys: [Int64]) -> Value
    /// What follows an ORDER BY term: its direction, with NULLs first when
    /// ascending and last when descending, as ``/AmberStore/SortValue`` orders them.
    func direction(ascending: Bool) -> String
    /// A parameter where the database cannot infer its type from its place
    /// (a SELECT list), holding a value of column type `columnType`.
    func typedParameter(columnType: String) -> String
    /// The two parameters of `LIMIT ? OFFSET ?` for a fetch's limit (nil: none) and offset.
    func limitParameters(limit: Int?, offset: Int) -> [Value]

    // MARK: Derived values and batch changes

    /// The current time, as dates are stored.
    var now: String { get }
    /// `sql` in upper or lower case.
    func changeCase(_ sql: String, upper: Bool) -> String
    /// The sum of a floating column over the rows of `from` (0.0 over none).
    func floatingSum(_ column: String) -> String
    /// Exact decimal arithmetic (`op` is `+`, `-` or `*`) keeping the scale
    /// decimal arithmetic gives, or NULL where the result is not exact.
    func decimalArithmetic(_ op: String, _ left: String, _ right: String) -> String
}

extension SQLDialect {
    /// Where extended values are of SQL's own types (SQLite's dynamic ones): a CASE on the type.
    package func foldExtended(_ sql: String, flags: Int64) -> String {
        "CASE WHEN \(isText(sql)) THEN \(fold(sql, flags: flags)) ELSE \(sql) END"
    }

    /// Where extended values are of SQL's own types, constants and columns compare as they are.
    package func extendedOperand(_ fragment: SQLFragment) -> SQLFragment { fragment }

    package func extendedText(_ sql: String) -> String { "CASE WHEN \(isText(sql)) THEN \(sql) END" }
}
