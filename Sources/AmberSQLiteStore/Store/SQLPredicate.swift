import AmberModel
import AmberTransformers
import AmberValues
import Foundation

/// SQL text with its parameters in order. Values only ever travel as
/// parameters; the text holds quoted identifiers, operators and `?`.
struct SQLFragment {
    var sql: String
    var bindings: [Value] = []
    /// The attribute type the fragment yields, when it is a column.
    var type: AttributeType?

    static func + (lhs: SQLFragment, rhs: SQLFragment) -> SQLFragment {
        SQLFragment(sql: lhs.sql + rhs.sql, bindings: lhs.bindings + rhs.bindings)
    }
}

/// Compiles a predicate for one entity into an SQL condition.
struct PredicateCompiler {
    let entity: Entity

    func compile(_ node: PredicateNode) throws(AmberError) -> SQLFragment {
        switch node {
        case .constant(let truth):
            return SQLFragment(sql: truth ? "1" : "0")
        case .not(let inner):
            let fragment = try compile(inner)
            // NULL-safe: NOT over a comparison with a NULL column is true, as in Core Data.
            return SQLFragment(sql: "NOT coalesce((\(fragment.sql)), 0)", bindings: fragment.bindings)
        case .and(let a, let b):
            return try join(a, "AND", b)
        case .or(let a, let b):
            return try join(a, "OR", b)
        case .comparison(let comparison):
            return try compile(comparison)
        }
    }

    /// `a AND b AND c …` as one flat list: the parser builds left-deep chains,
    /// and nesting them in SQL would hit SQLite's parser depth limit.
    private func join(_ a: PredicateNode, _ word: String, _ b: PredicateNode) throws(AmberError) -> SQLFragment {
        var operands = [b]
        var left = a
        while true {
            switch (left, word) {
            case (.and(let x, let y), "AND"), (.or(let x, let y), "OR"):
                operands.append(y)
                left = x
                continue
            default:
                operands.append(left)
            }
            break
        }
        var sql: [String] = []
        var bindings: [Value] = []
        for operand in operands.reversed() {
            let fragment = try compile(operand)
            sql.append("(\(fragment.sql))")
            bindings += fragment.bindings
        }
        return SQLFragment(sql: sql.joined(separator: " \(word) "), bindings: bindings)
    }

    private func compile(_ c: Comparison) throws(AmberError) -> SQLFragment {
        // Put a key path on the left where the operator allows it, so constants are coerced to its type.
        var c = c
        c.options = Self.effectiveOptions(c)
        if case .value = c.lhs, !isValue(c.rhs), let swapped = c.op.swapped {
            (c.lhs, c.rhs, c.op) = (c.rhs, c.lhs, swapped)
        }
        if case .keyPath(let name, let position) = c.lhs {
            let lhs = try attribute(name, position)
            if let codec = lhs.codec { return try compileEncoded(c, lhs, codec) }
        }
        let lhsType = try type(of: c.lhs)
        switch c.op {
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            return try compileOrdering(c, lhsType: lhsType)
        case .beginsWith, .endsWith, .contains:
            let (l, r) = try stringOperands(c, lhsType: lhsType)
            switch c.op {
            case .beginsWith: return SQLFragment(sql: "substr(\(l.sql), 1, length(\(r.sql))) = \(r.sql)",
                                                 bindings: l.bindings + r.bindings + r.bindings)
            case .endsWith: return SQLFragment(sql: "substr(\(l.sql), length(\(l.sql)) - length(\(r.sql)) + 1) = \(r.sql)",
                                               bindings: l.bindings + l.bindings + r.bindings + r.bindings)
            default: return SQLFragment(sql: "instr(\(l.sql), \(r.sql)) > 0", bindings: l.bindings + r.bindings)
            }
        case .like:
            guard case .value(.string(let pattern), _) = c.rhs else {
                throw .invalidPredicate(position: c.rhs.position, message: "LIKE needs a string pattern on its right")
            }
            let l = try stringOperands(c, lhsType: lhsType).0
            return SQLFragment(sql: "\(l.sql) GLOB ?", bindings: l.bindings + [.string(Self.glob(fromLike: fold(pattern, c.options)))])
        case .matches:
            guard case .value(.string(let pattern), _) = c.rhs else {
                throw .invalidPredicate(position: c.rhs.position, message: "MATCHES needs a regular expression string on its right")
            }
            guard (try? NSRegularExpression(pattern: pattern)) != nil else {
                throw .invalidPredicate(position: c.rhs.position, message: "\"\(pattern)\" is not a valid regular expression")
            }
            let l = try operand(c.lhs, as: nil)
            try requireString(l, c.lhs, "MATCHES")
            return SQLFragment(sql: "amber_matches(\(l.sql), ?, \(c.options.rawValue))", bindings: l.bindings + [.string(pattern)])
        case .in:
            let items = try listItems(c.rhs, "IN")
            guard !items.isEmpty else { return SQLFragment(sql: "0") }
            var l = try operand(c.lhs, as: nil)
            var fragments = try items.map { (item) throws(AmberError) in try operand(item, as: lhsType) }
            if !c.options.isEmpty {
                l = wrapFold(l, c.options)
                fragments = fragments.map { wrapFold($0, c.options) }
            }
            return SQLFragment(sql: "\(l.sql) IN (\(fragments.map(\.sql).joined(separator: ", ")))",
                               bindings: l.bindings + fragments.flatMap(\.bindings))
        case .between:
            let items = try listItems(c.rhs, "BETWEEN")
            guard items.count == 2 else {
                throw .invalidPredicate(position: c.rhs.position, message: "BETWEEN needs {low, high}, given \(items.count) values")
            }
            let l = numeric(try operand(c.lhs, as: nil))
            let low = numeric(try operand(items[0], as: lhsType)), high = numeric(try operand(items[1], as: lhsType))
            return SQLFragment(sql: "\(l.sql) BETWEEN \(low.sql) AND \(high.sql)", bindings: l.bindings + low.bindings + high.bindings)
        }
    }

    private func compileOrdering(_ c: Comparison, lhsType: AttributeType?) throws(AmberError) -> SQLFragment {
        if case .this = c.lhs { return try compileSelf(c) }
        let lhsIsNull = if case .value(.null, _) = c.lhs { true } else { false }
        let rhsIsNull = if case .value(.null, _) = c.rhs { true } else { false }
        if lhsIsNull || rhsIsNull {
            let other = try operand(lhsIsNull ? c.rhs : c.lhs, as: nil)
            switch c.op {
            case .equal: return SQLFragment(sql: "\(other.sql) IS NULL", bindings: other.bindings)
            case .notEqual: return SQLFragment(sql: "\(other.sql) IS NOT NULL", bindings: other.bindings)
            default: return SQLFragment(sql: "0") // Nothing is less or greater than nil.
            }
        }
        var l = try operand(c.lhs, as: nil)
        var r = try operand(c.rhs, as: lhsType)
        if !c.options.isEmpty {
            try requireString(l, c.lhs, c.op.rawValue)
            (l, r) = (wrapFold(l, c.options), wrapFold(r, c.options))
        }
        let isOrdering = c.op != .equal && c.op != .notEqual
        if isOrdering { (l, r) = (numeric(l), numeric(r)) }
        // `IS NOT` keeps objects whose value is nil in a != result, as comparing objects in memory would.
        let sqlOperator = c.op == .notEqual ? "IS NOT" : c.op == .equal ? "=" : c.op.rawValue
        return SQLFragment(sql: "\(l.sql) \(sqlOperator) \(r.sql)", bindings: l.bindings + r.bindings)
    }

    /// A transformable attribute compares by its stored form: each constant is
    /// checked against the value class and encoded through the chain, so only
    /// equality (`==`, `!=`, `IN`) means anything.
    private func compileEncoded(_ c: Comparison, _ attribute: Attribute, _ codec: Codec) throws(AmberError) -> SQLFragment {
        let column = quote(attribute.name)
        func encode(_ operand: Operand) throws(AmberError) -> Value {
            guard case .value(let value, let position) = operand else {
                throw .invalidPredicate(position: operand.position, message: "\(attribute) is transformed; compare it with values, not with attributes")
            }
            do throws(AmberError) {
                let checked = try attribute.check(value)
                do throws(TransformerFailure) {
                    return try codec.encode(checked)
                } catch {
                    throw error.error(at: "\(attribute)")
                }
            } catch {
                throw .invalidPredicate(position: position, message: "\(error)")
            }
        }
        switch c.op {
        case .equal, .notEqual:
            let value = try encode(c.rhs)
            if value.isNull { return SQLFragment(sql: "\(column) IS \(c.op == .equal ? "" : "NOT ")NULL") }
            return SQLFragment(sql: "\(column) \(c.op == .equal ? "=" : "IS NOT") ?", bindings: [value])
        case .in:
            let values = try listItems(c.rhs, "IN").map { (item) throws(AmberError) in try encode(item) }
            guard !values.isEmpty else { return SQLFragment(sql: "0") }
            return SQLFragment(sql: "\(column) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))",
                               bindings: values)
        default:
            throw .invalidPredicate(position: c.position,
                                    message: "\(attribute) is transformed; only ==, != and IN can compare its stored form")
        }
    }

    /// [c] against a constant with no cased character (digits, punctuation)
    /// changes nothing: folding case never creates, removes or splits such
    /// characters. Dropping it lets SQLite compare bytes instead of calling
    /// amber_fold on every row. [d] is kept: it can remove marks between them.
    static func effectiveOptions(_ c: Comparison) -> ComparisonOptions {
        guard c.options == .caseInsensitive else { return c.options }
        let constants: [Value]
        switch c.rhs {
        case .value(let value, _): constants = [value]
        case .list(let items, _): constants = items.compactMap { if case .value(let v, _) = $0 { v } else { nil } }
        default: return c.options
        }
        let uncased = constants.allSatisfy { value in
            guard case .string(let text) = value else { return false }
            return text.lowercased() == text && text.uppercased() == text
        }
        return uncased ? [] : c.options
    }

    /// `SELF == %@` / `SELF != %@` with an object ID.
    private func compileSelf(_ c: Comparison) throws(AmberError) -> SQLFragment {
        guard c.op == .equal || c.op == .notEqual, case .value(let value, let position) = c.rhs else {
            throw .invalidPredicate(position: c.position, message: "SELF can only be compared with == or != to an object ID")
        }
        guard case .objectID(let id) = value else {
            throw .invalidPredicate(position: position, message: "SELF is compared with an object ID, given \(value.valueClass) \(value)")
        }
        guard id.entityName == entity.name, let pk = id.primaryKey else { return SQLFragment(sql: c.op == .equal ? "0" : "1") }
        return SQLFragment(sql: c.op == .equal ? "_pk = ?" : "_pk <> ?", bindings: [.int(pk)])
    }

    // MARK: Operands

    private func isValue(_ operand: Operand) -> Bool {
        if case .value = operand { return true }
        return false
    }

    /// The attribute type of a key path operand; nil for constants.
    private func type(of operand: Operand) throws(AmberError) -> AttributeType? {
        if case .keyPath(let name, let position) = operand { return try attribute(name, position).type }
        return nil
    }

    private func attribute(_ name: String, _ position: Int) throws(AmberError) -> Attribute {
        if name.contains(".") {
            throw .invalidPredicate(position: position, message: "\(name): key paths through relationships are not supported yet")
        }
        let attribute: Attribute
        do throws(AmberError) {
            attribute = try entity.attribute(named: name)
        } catch {
            throw .invalidPredicate(position: position, message: "\(error)")
        }
        guard !attribute.isTransient else {
            throw .invalidPredicate(position: position, message: "\(attribute) is transient: it is not stored, so a fetch cannot test it")
        }
        return attribute
    }

    /// SQL for an operand. A constant compared with an attribute of `type` is
    /// converted to that type first (an error names both when it cannot be).
    private func operand(_ operand: Operand, as type: AttributeType?) throws(AmberError) -> SQLFragment {
        switch operand {
        case .keyPath(let name, let position):
            let attribute = try attribute(name, position)
            return SQLFragment(sql: quote(attribute.name), type: attribute.type)
        case .this:
            return SQLFragment(sql: "_pk", type: .objectID)
        case .value(let value, let position):
            guard let type, type != .objectID else { return SQLFragment(sql: "?", bindings: [value]) }
            var candidate = value
            // A literal like 12.99 means the decimal 12.99, not its binary approximation.
            if type == .decimal, case .double(let d) = value, let decimal = ValueFormat.parseDecimal(String(d)) {
                candidate = .decimal(decimal)
            }
            do throws(AmberError) {
                return SQLFragment(sql: "?", bindings: [try type.coerce(candidate, place: "")], type: type)
            } catch {
                throw .invalidPredicate(position: position, message: "cannot compare a \(type) attribute with \(value.valueClass) \(value)")
            }
        case .list(_, let position):
            throw .invalidPredicate(position: position, message: "a list {…} is only allowed after IN or BETWEEN")
        }
    }

    private func listItems(_ operand: Operand, _ op: String) throws(AmberError) -> [Operand] {
        switch operand {
        case .list(let items, _): return items
        case .value(.array(let values), let position): return values.map { .value($0, position: position) }
        default: throw .invalidPredicate(position: operand.position, message: "\(op) needs a list {…} or an array argument")
        }
    }

    private func stringOperands(_ c: Comparison, lhsType: AttributeType?) throws(AmberError) -> (SQLFragment, SQLFragment) {
        var l = try operand(c.lhs, as: nil)
        try requireString(l, c.lhs, c.op.rawValue)
        var r = try operand(c.rhs, as: lhsType)
        if case .value(let v, let position) = c.rhs, !(v.valueClass == .string) {
            throw .invalidPredicate(position: position, message: "\(c.op.rawValue) needs a string, given \(v.valueClass) \(v)")
        }
        if !c.options.isEmpty { (l, r) = (wrapFold(l, c.options), wrapFold(r, c.options)) }
        return (l, r)
    }

    private func requireString(_ fragment: SQLFragment, _ operand: Operand, _ op: String) throws(AmberError) {
        if let type = fragment.type, type != .string {
            throw .invalidPredicate(position: operand.position, message: "\(op) needs a string attribute; \(entity.name).\(fragment.sql.trimmingCharacters(in: ["\""])) is \(type)")
        }
    }

    /// Case/diacritic folding: constants are folded here, columns by `amber_fold` per row.
    private func wrapFold(_ fragment: SQLFragment, _ options: ComparisonOptions) -> SQLFragment {
        if fragment.sql == "?", fragment.bindings.count == 1, case .string(let s) = fragment.bindings[0] {
            return SQLFragment(sql: "?", bindings: [.string(fold(s, options))], type: .string)
        }
        return SQLFragment(sql: "amber_fold(\(fragment.sql), \(options.rawValue))", bindings: fragment.bindings, type: fragment.type)
    }

    private func fold(_ s: String, _ options: ComparisonOptions) -> String {
        SQLFunctions.fold(s, flags: options.rawValue)
    }

    /// Decimals are stored as exact text; ordering compares them as numbers.
    private func numeric(_ fragment: SQLFragment) -> SQLFragment {
        guard fragment.type == .decimal else { return fragment }
        if fragment.sql == "?", case .decimal(let d) = fragment.bindings.first {
            return SQLFragment(sql: "?", bindings: [.double(NSDecimalNumber(decimal: d).doubleValue)])
        }
        return SQLFragment(sql: "CAST(\(fragment.sql) AS REAL)", bindings: fragment.bindings)
    }

    /// Core Data's LIKE (`*` any run, `?` one character, `\` escapes) as an SQLite GLOB pattern.
    static func glob(fromLike pattern: String) -> String {
        var result = ""
        var escaped = false
        for c in pattern {
            if escaped {
                result += (c == "*" || c == "?" || c == "[") ? "[\(c)]" : String(c)
                escaped = false
                continue
            }
            switch c {
            case "\\": escaped = true
            case "[": result += "[[]"
            default: result.append(c)
            }
        }
        return result
    }
}

/// A compiled fetch: SQL text and the values to bind, for one request and entity.
struct FetchQuery {
    let sql: String
    let bindings: [Value]

    init(request: FetchRequest, mapping: TableMapping, columns: String, counting: Bool = false) throws(AmberError) {
        var sql = "SELECT \(counting ? "1" : columns) FROM \(mapping.table)"
        var bindings: [Value] = []
        if let predicate = request.predicate {
            let condition = try PredicateCompiler(entity: mapping.entity).compile(predicate.root)
            sql += " WHERE \(condition.sql)"
            bindings = condition.bindings
        }
        if !counting {
            var terms: [String] = []
            for key in request.sortKeys {
                let attribute = try mapping.entity.attribute(named: key.key)
                guard !attribute.isTransient else {
                    throw .invalidValue(place: attribute.description, expected: "a stored attribute to sort by", given: "a transient one")
                }
                var term = quote(attribute.name)
                if attribute.type == .decimal { term = "CAST(\(term) AS REAL)" }
                if key.caseInsensitive && attribute.type == .string { term = "amber_fold(\(term), 1)" }
                terms.append(term + (key.ascending ? " ASC" : " DESC"))
            }
            terms.append("_pk ASC")
            sql += " ORDER BY " + terms.joined(separator: ", ")
        }
        if request.limit != nil || request.offset != 0 {
            guard request.offset >= 0, (request.limit ?? 0) >= 0 else {
                throw .invalidValue(place: "FetchRequest", expected: "a limit and offset of 0 or more",
                                    given: "limit \(request.limit.map(String.init) ?? "none"), offset \(request.offset)")
            }
            sql += " LIMIT ? OFFSET ?"
            bindings += [.int(Int64(request.limit ?? -1)), .int(Int64(request.offset))]
        }
        self.sql = counting ? "SELECT count(*) FROM (\(sql))" : sql
        self.bindings = bindings
    }

    func prepare(on connection: Connection) throws(AmberError) -> Statement {
        let statement = try connection.statement(sql)
        for (i, value) in bindings.enumerated() { TableMapping.bind(value, at: Int32(i), in: statement) }
        return statement
    }
}
