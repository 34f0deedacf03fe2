import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// Compiles a predicate for one entity into an SQL condition.
///
/// Columns are qualified by the alias of the table they are read from: the
/// fetched table's name at the top, a fresh alias inside each subquery. A key
/// path through to-one relationships reads its value with one correlated
/// subquery per hop; a to-many relationship becomes `EXISTS` over its members
/// (`ANY`, `NONE`; `ALL` as "no member fails") or an aggregate (`@count`,
/// `@sum`, …), so the fetched rows are never multiplied by a join.
package struct PredicateCompiler {
    package let entity: Entity
    package let model: Model
    /// How the database spells what differs between SQL databases.
    package let dialect: any SQLDialect
    /// The alias columns of `entity` are read through here.
    let alias: String
    /// Numbers subquery aliases so nested ones never clash.
    let counter: Counter

    final class Counter {
        var next = 0
        func alias() -> String {
            next += 1
            return "a\(next)"
        }
    }

    package init(entity: Entity, model: Model, dialect: any SQLDialect) {
        self.init(entity: entity, model: model, dialect: dialect, alias: quote(model.root(of: entity).name), counter: Counter())
    }

    private init(entity: Entity, model: Model, dialect: any SQLDialect, alias: String, counter: Counter) {
        (self.entity, self.model, self.dialect, self.alias, self.counter) = (entity, model, dialect, alias, counter)
    }

    package func compile(_ node: PredicateNode) throws(AmberError) -> SQLFragment {
        switch node {
        case .constant(let truth):
            return SQLFragment(sql: truth ? "TRUE" : "FALSE")
        case .not(let inner):
            let fragment = try compile(inner)
            // NULL-safe: NOT over a comparison with a NULL column is true, as in Core Data.
            return SQLFragment(sql: dialect.isNotTrue("(\(fragment.sql))"), bindings: fragment.bindings)
        case .and(let a, let b):
            return try join(a, "AND", b)
        case .or(let a, let b):
            return try join(a, "OR", b)
        case .comparison(let comparison):
            return try compile(comparison)
        }
    }

    /// `a AND b AND c …` as a balanced tree: the parser builds left-deep chains,
    /// and SQLite parses a flat chain left-deep too, so a long one would pass
    /// its expression depth limit (1000); balanced, 1000 terms nest 10 deep.
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
        // Halving keeps the terms (and so the bindings) in order.
        func balanced(_ terms: ArraySlice<String>) -> String {
            guard terms.count > 2 else { return terms.joined(separator: " \(word) ") }
            let middle = terms.startIndex + terms.count / 2
            return "(\(balanced(terms[..<middle]))) \(word) (\(balanced(terms[middle...])))"
        }
        return SQLFragment(sql: balanced(sql[...]), bindings: bindings)
    }

    private func compile(_ c: Comparison) throws(AmberError) -> SQLFragment {
        var c = c.normalized
        if let quantifier = c.quantifier { return try compileQuantified(c, quantifier) }
        if case .keyPath(let name, let position) = c.lhs {
            switch try resolve(name, position) {
            case .attribute(let target, let attribute):
                if let codec = attribute.codec { return try compileEncoded(c, target, attribute, codec) }
            case .extended(let target):
                c.rhs = try c.rhs.extendedConstant(c.op, target.name ?? name)
            case .link, .aggregate:
                break
            }
        }
        if case .this = c.lhs, c.op == .in { return try compileSelfIn(c) }
        let lhsType = try type(of: c.lhs)
        if lhsType == .objectID, case .keyPath(let name, let position) = c.lhs { return try compileLink(c, name, position) }
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
            default: return SQLFragment(sql: dialect.contains(l.sql, r.sql), bindings: l.bindings + r.bindings)
            }
        case .like:
            guard case .value(.string(let pattern), _) = c.rhs else {
                throw .invalidPredicate(position: c.rhs.position, message: "LIKE needs a string pattern on its right")
            }
            let l = try stringOperands(c, lhsType: lhsType).0
            let like = dialect.like(l.sql, pattern: fold(pattern, c.options))
            return SQLFragment(sql: like.sql, bindings: l.bindings + [.string(like.pattern)])
        case .matches:
            guard case .value(.string(let pattern), _) = c.rhs else {
                throw .invalidPredicate(position: c.rhs.position, message: "MATCHES needs a regular expression string on its right")
            }
            guard WholeTextExpression(pattern, options: c.options) != nil else {
                throw .invalidPredicate(position: c.rhs.position, message: "\"\(pattern)\" is not a valid regular expression")
            }
            let l = asText(try operand(c.lhs, as: nil))
            try requireString(l, c.lhs, "MATCHES")
            return SQLFragment(sql: dialect.matches(l.sql, options: c.options), bindings: l.bindings + [.string(pattern)])
        case .in:
            let items = try c.rhs.listItems("IN")
            guard !items.isEmpty else { return SQLFragment(sql: "FALSE") }
            var l = numberOnly(try operand(c.lhs, as: nil))
            var fragments = try items.map { (item) throws(AmberError) in numberOnly(try operand(item, as: lhsType)) }
            if !c.options.isEmpty {
                try requireString(l, c.lhs, "IN\(c.options.modifier)")
                l = wrapFold(l, c.options)
                fragments = fragments.map { wrapFold($0, c.options) }
            }
            fragments = fragments.map { extendedForm($0, beside: l) }
            return SQLFragment(sql: "\(l.sql) IN (\(fragments.map(\.sql).joined(separator: ", ")))",
                               bindings: l.bindings + fragments.flatMap(\.bindings))
        case .between:
            let items = try c.rhs.listItems("BETWEEN")
            guard items.count == 2 else {
                throw .invalidPredicate(position: c.rhs.position, message: "BETWEEN needs {low, high}, given \(items.count) values")
            }
            let l = numeric(try operand(c.lhs, as: nil))
            let low = extendedForm(numeric(try operand(items[0], as: lhsType)), beside: l)
            let high = extendedForm(numeric(try operand(items[1], as: lhsType)), beside: l)
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
            default: return SQLFragment(sql: "FALSE") // Nothing is less or greater than nil.
            }
        }
        var l = try operand(c.lhs, as: nil)
        var r = try operand(c.rhs, as: lhsType)
        if !c.options.isEmpty {
            try requireString(l, c.lhs, c.op.rawValue)
            (l, r) = (wrapFold(l, c.options), wrapFold(r, c.options))
        }
        let isOrdering = c.op != .equal && c.op != .notEqual
        (l, r) = isOrdering ? (numeric(l), numeric(r)) : (numberOnly(l), numberOnly(r))
        (l, r) = (extendedForm(l, beside: r), extendedForm(r, beside: l))
        // A NULL-safe inequality keeps objects whose value is nil in a != result, as comparing objects in memory would.
        let sqlOperator = c.op == .notEqual ? dialect.distinctFrom : c.op == .equal ? "=" : c.op.rawValue
        return SQLFragment(sql: "\(l.sql) \(sqlOperator) \(r.sql)", bindings: l.bindings + r.bindings)
    }

    /// A transformable attribute compares by its stored form: each constant is
    /// checked against the value class and encoded through the chain, so only
    /// equality (`==`, `!=`, `IN`) means anything.
    private func compileEncoded(_ c: Comparison, _ target: SQLFragment, _ attribute: Attribute, _ codec: Codec) throws(AmberError) -> SQLFragment {
        let column = target.sql, columnBindings = target.bindings
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
            if value.isNull { return SQLFragment(sql: "\(column) IS \(c.op == .equal ? "" : "NOT ")NULL", bindings: columnBindings) }
            return SQLFragment(sql: "\(column) \(c.op == .equal ? "=" : dialect.distinctFrom) ?", bindings: columnBindings + [value])
        case .in:
            let values = try c.rhs.listItems("IN").map { (item) throws(AmberError) in try encode(item) }
            guard !values.isEmpty else { return SQLFragment(sql: "FALSE") }
            return SQLFragment(sql: "\(column) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))",
                               bindings: columnBindings + values)
        default:
            throw .invalidPredicate(position: c.position,
                                    message: "\(attribute) is transformed; only ==, != and IN can compare its stored form")
        }
    }

    /// `SELF == %@` / `SELF != %@` with an object ID.
    private func compileSelf(_ c: Comparison) throws(AmberError) -> SQLFragment {
        guard c.op == .equal || c.op == .notEqual, case .value(let value, let position) = c.rhs else {
            throw .invalidPredicate(position: c.position, message: "SELF can only be compared with == or != to an object ID")
        }
        guard case .objectID(let id) = value else {
            throw .invalidPredicate(position: position, message: "SELF is compared with an object ID, given \(value.valueClass) \(value)")
        }
        guard model.names(id, aRowOf: entity), let pk = id.primaryKey else { return SQLFragment(sql: c.op == .equal ? "FALSE" : "TRUE") }
        return SQLFragment(sql: c.op == .equal ? "\(alias)._pk = ?" : "\(alias)._pk <> ?", bindings: [.int(pk)])
    }

    /// `SELF IN %@` with object IDs.
    private func compileSelfIn(_ c: Comparison) throws(AmberError) -> SQLFragment {
        let keys = try keys(of: c.rhs.listItems("IN"), in: entity)
        guard !keys.isEmpty else { return SQLFragment(sql: "FALSE") }
        return SQLFragment(sql: "\(alias)._pk IN (\(Array(repeating: "?", count: keys.count).joined(separator: ", ")))",
                           bindings: keys.map(Value.int))
    }

    /// A to-one relationship compared with objects: `author == %@`, `author != nil`, `author IN %@`.
    private func compileLink(_ c: Comparison, _ name: String, _ position: Int) throws(AmberError) -> SQLFragment {
        guard case .link(let link, let relationship) = try resolve(name, position) else { return SQLFragment(sql: "FALSE") }
        let destination = model.destination(of: relationship)
        if case .value(.null, _) = c.rhs {
            guard c.op == .equal || c.op == .notEqual else { return SQLFragment(sql: "FALSE") }
            return SQLFragment(sql: "\(link.sql) IS \(c.op == .equal ? "" : "NOT ")NULL", bindings: link.bindings)
        }
        switch c.op {
        case .equal, .notEqual:
            // Another entity's object, or one never saved: no stored row points at it.
            guard let pk = try key(of: c.rhs, in: destination) else { return SQLFragment(sql: c.op == .equal ? "FALSE" : "TRUE") }
            return SQLFragment(sql: "\(link.sql) \(c.op == .equal ? "=" : dialect.distinctFrom) ?", bindings: link.bindings + [.int(pk)])
        case .in:
            let keys = try keys(of: c.rhs.listItems("IN"), in: destination)
            guard !keys.isEmpty else { return SQLFragment(sql: "FALSE") }
            return SQLFragment(sql: "\(link.sql) IN (\(Array(repeating: "?", count: keys.count).joined(separator: ", ")))",
                               bindings: link.bindings + keys.map(Value.int))
        default:
            throw .invalidPredicate(position: c.position, message: "\(name) is a relationship: compare it with ==, != or IN")
        }
    }

    /// The primary keys of the objects of `entity` among `items`.
    private func keys(of items: [Operand], in entity: Entity) throws(AmberError) -> [Int64] {
        var keys: [Int64] = []
        for item in items { if let key = try key(of: item, in: entity) { keys.append(key) } }
        return keys
    }

    /// The primary key an operand names as an object of `entity`; nil when no
    /// stored row can be it (another entity's object, or one never saved).
    private func key(of operand: Operand, in entity: Entity) throws(AmberError) -> Int64? {
        let id = try operand.objectID()
        return model.names(id, aRowOf: entity) ? id.primaryKey : nil
    }

    // MARK: Key paths

    /// What a key path reads.
    private enum Target {
        /// An attribute's value.
        case attribute(SQLFragment, Attribute)
        /// A to-one relationship's destination key.
        case link(SQLFragment, Relationship)
        /// A collection operator's result.
        case aggregate(SQLFragment)
        /// An extended attribute's stored form (of no one type).
        case extended(SQLFragment)
    }

    /// The table `entity`'s rows live in: its hierarchy's root's. Keys are
    /// unique per table, and a relationship's column belongs to the entities
    /// that declare or inherit it, so lookups by key need no entity filter.
    private func table(of entity: Entity) -> String { quote(model.root(of: entity).name) }

    /// The SQL of column `name` of the `entity` row whose key is `key`: the
    /// column itself for this scope's row, a correlated subquery further along.
    private func column(_ name: String, of entity: Entity, key: String) -> String {
        guard key != "\(alias)._pk" else { return "\(alias).\(quote(name))" }
        // Aliased: in a self-relationship the outer row's table has the same name, and an unaliased one would hide it.
        let hop = counter.alias()
        return "(SELECT \(hop).\(quote(name)) FROM \(table(of: entity)) \(hop) WHERE \(hop)._pk = \(key))"
    }

    /// The SQL of the key of the object `hops` reach from this scope's row.
    private func key(after hops: [Relationship]) -> String {
        var current = entity, key = "\(alias)._pk"
        for hop in hops {
            key = column(hop.columnName, of: current, key: key)
            current = model.destination(of: hop)
        }
        return key
    }

    /// Resolves a key path without quantifier (``/AmberModel/ResolvedKeyPath``) to the SQL that reads it.
    private func resolve(_ path: String, _ position: Int) throws(AmberError) -> Target {
        let resolved = try ResolvedKeyPath.resolve(path, at: position, from: entity, in: model)
        let key = key(after: resolved.hops)
        switch resolved.end {
        case .link(let relationship):
            return .link(SQLFragment(sql: key, type: .objectID, name: relationship.description), relationship)
        case .attribute(let attribute):
            let owner = resolved.hops.last.map { model.destination(of: $0) } ?? entity
            var fragment = SQLFragment(sql: column(attribute.columnName, of: owner, key: key), type: attribute.type, name: "\(attribute)")
            if case .function(.canonical, _)? = attribute.derivation?.form { fragment.folded = [.caseInsensitive, .diacriticInsensitive] }
            return .attribute(fragment, attribute)
        case .aggregate(let relationship, let operation, let attribute):
            return .aggregate(aggregate(relationship, owner: key, operation: operation, attribute: attribute, type: resolved.type, path: path))
        case .extended(let name, let owner):
            // The name is a checked identifier, so it is plain text an expression index can match.
            var fragment = SQLFragment(sql: dialect.extendedValue(column(ExtendedValues.columnName, of: owner, key: key), name: name),
                                       name: "\(owner.name).\(name)")
            fragment.mixed = true
            return .extended(fragment)
        }
    }

    /// The members of to-many `relationship` of the object whose key is
    /// `owner`: a `FROM … WHERE …` over alias `member`.
    func members(_ relationship: Relationship, owner: String, member: String) -> String {
        let destination = table(of: model.destination(of: relationship))
        if case .joinTable(let table, let mine, let theirs, _) = relationship.storage {
            return "FROM \(destination) \(member) JOIN \(quote(table)) \(member)j ON \(member)j.\(theirs) = \(member)._pk "
                + "WHERE \(member)j.\(mine) = \(owner)"
        }
        let inverse = model.inverse(of: relationship)?.columnName ?? ""
        return "FROM \(destination) \(member) WHERE \(member).\(quote(inverse)) = \(owner)"
    }

    /// `books.@count`; `books.@sum.price`, `@avg`, `@min`, `@max` (0 for the sum of none, nil for the others).
    private func aggregate(_ relationship: Relationship, owner: String, operation: ResolvedKeyPath.CollectionOperator,
                           attribute: Attribute?, type: AttributeType?, path: String) -> SQLFragment
    {
        let member = counter.alias()
        let from = members(relationship, owner: owner, member: member)
        guard let attribute else { return SQLFragment(sql: "(SELECT count(*) \(from))", type: type, name: path) }
        var column = "\(member).\(quote(attribute.columnName))"
        if attribute.type == .decimal { column = dialect.approximateDecimal(column) }
        // A sum of no members is 0 (the dialect's floating sum), as in memory.
        let value = operation == .sum ? dialect.floatingSum(column) : "\(operation.rawValue.dropFirst())(\(column))"
        return SQLFragment(sql: "(SELECT \(value) \(from))", type: type, name: path)
    }

    /// `ANY books.price > 10`: the comparison compiled for the members (in their
    /// own scope) inside `EXISTS`; a further to-many hop nests another.
    private func compileQuantified(_ c: Comparison, _ quantifier: Quantifier) throws(AmberError) -> SQLFragment {
        guard case .keyPath(let path, let position) = c.lhs else {
            throw .invalidPredicate(position: c.lhs.position, message: "\(quantifier.rawValue) needs a key path through a to-many relationship")
        }
        let quantified = try QuantifiedKeyPath(path, at: position, after: quantifier, from: entity, in: model)
        let member = counter.alias()
        let scope = PredicateCompiler(entity: model.destination(of: quantified.toMany), model: model, dialect: dialect, alias: member, counter: counter)
        let condition = try scope.compile(quantified.memberComparison(c, quantifier: quantifier))
        let from = members(quantified.toMany, owner: key(after: quantified.hops), member: member)
        let sql = switch quantifier {
        case .any: "EXISTS (SELECT 1 \(from) AND (\(condition.sql)))"
        case .none: "NOT EXISTS (SELECT 1 \(from) AND (\(condition.sql)))"
        case .all: "NOT EXISTS (SELECT 1 \(from) AND \(dialect.isNotTrue("(\(condition.sql))")))"
        }
        return SQLFragment(sql: sql, bindings: condition.bindings)
    }

    // MARK: Operands

    /// The type of a key path operand (`.objectID` for a to-one relationship); nil for constants.
    private func type(of operand: Operand) throws(AmberError) -> AttributeType? {
        switch operand {
        case .keyPath, .subquery: try self.operand(operand, as: nil).type
        default: nil
        }
    }

    /// SQL for an operand. A constant compared with an attribute of `type` is
    /// converted to that type first (an error names both when it cannot be).
    private func operand(_ operand: Operand, as type: AttributeType?) throws(AmberError) -> SQLFragment {
        switch operand {
        case .keyPath(let name, let position):
            switch try resolve(name, position) {
            case .attribute(let fragment, _), .link(let fragment, _), .aggregate(let fragment), .extended(let fragment): return fragment
            }
        case .this:
            return SQLFragment(sql: "\(alias)._pk", type: .objectID)
        case .value(let value, let position):
            guard let type, type != .objectID else { return SQLFragment(sql: "?", bindings: [value]) }
            return SQLFragment(sql: "?", bindings: [try type.comparisonConstant(value, at: position)], type: type)
        case .list(_, let position):
            throw .invalidPredicate(position: position, message: "a list {…} is only allowed after IN or BETWEEN")
        case .variable(let name, let position):
            throw .invalidSubstitution(variable: name, message: "has no value (position \(position))")
        case .subquery(let subquery, let position):
            // The members' condition compiled in their own scope, counted in a correlated subquery.
            let (hops, toMany) = try subquery.members(from: entity, in: model, at: position)
            let member = counter.alias()
            let scope = PredicateCompiler(entity: model.destination(of: toMany), model: model, dialect: dialect, alias: member, counter: counter)
            let condition = try scope.compile(subquery.predicate)
            return SQLFragment(sql: "(SELECT count(*) \(members(toMany, owner: key(after: hops), member: member)) AND (\(condition.sql)))",
                               bindings: condition.bindings, type: .integer64, name: subquery.name)
        }
    }

    private func stringOperands(_ c: Comparison, lhsType: AttributeType?) throws(AmberError) -> (SQLFragment, SQLFragment) {
        var l = asText(try operand(c.lhs, as: nil))
        try requireString(l, c.lhs, c.op.rawValue)
        var r = try operand(c.rhs, as: lhsType)
        if case .value(let v, let position) = c.rhs, !(v.valueClass == .string) {
            throw .invalidPredicate(position: position, message: "\(c.op.rawValue) needs a string, given \(v.valueClass) \(v)")
        }
        if !c.options.isEmpty { (l, r) = (wrapFold(l, c.options), wrapFold(r, c.options)) }
        return (l, r)
    }

    /// `fragment` in the form extended values compare in when `other` is an
    /// extended attribute and it is not (``SQLDialect/extendedOperand(_:)``).
    private func extendedForm(_ fragment: SQLFragment, beside other: SQLFragment) -> SQLFragment {
        guard other.mixed, !fragment.mixed else { return fragment }
        return dialect.extendedOperand(fragment)
    }

    /// An extended attribute as text, for a text operator; other fragments as they are.
    private func asText(_ fragment: SQLFragment) -> SQLFragment {
        guard fragment.mixed else { return fragment }
        return SQLFragment(sql: dialect.extendedText(fragment.sql), bindings: fragment.bindings + fragment.bindings, type: .string, name: fragment.name)
    }

    private func requireString(_ fragment: SQLFragment, _ operand: Operand, _ op: String) throws(AmberError) {
        if let type = fragment.type, type != .string {
            throw .invalidPredicate(position: operand.position, message: "\(op) needs a string attribute; \(fragment.name ?? "the value") is \(type)")
        }
    }

    /// Case/diacritic folding: constants are folded here, columns by the dialect per row.
    private func wrapFold(_ fragment: SQLFragment, _ options: ComparisonOptions) -> SQLFragment {
        if fragment.folded.isSuperset(of: options) { return fragment }
        if fragment.sql == "?", fragment.bindings.count == 1 {
            // A constant other than text (compared with an extended attribute) has nothing to fold.
            guard case .string(let s) = fragment.bindings[0] else { return fragment }
            return SQLFragment(sql: "?", bindings: [.string(fold(s, options))], type: .string)
        }
        return fragment.folded(options.rawValue, by: dialect)
    }

    private func fold(_ s: String, _ options: ComparisonOptions) -> String {
        dialect.foldConstant(s, flags: options.rawValue)
    }

    /// Decimals are stored as exact text; ordering compares them as numbers.
    private func numeric(_ fragment: SQLFragment) -> SQLFragment {
        guard fragment.type == .decimal else { return fragment }
        if fragment.sql == "?", case .decimal(let d) = fragment.bindings.first {
            return SQLFragment(sql: "?", bindings: [.double(NSDecimalNumber(decimal: d.number).doubleValue)])
        }
        return SQLFragment(sql: dialect.approximateDecimal(fragment.sql), bindings: fragment.bindings, name: fragment.name)
    }
    /// Decimals are stored with their written scale; equality compares the numbers alone (12.30 == 12.3), exactly.
    private func numberOnly(_ fragment: SQLFragment) -> SQLFragment {
        guard fragment.type == .decimal else { return fragment }
        if fragment.sql == "?", case .decimal(let d) = fragment.bindings.first {
            return SQLFragment(sql: "?", bindings: [.string(d.number.description)], type: .decimal)
        }
        return SQLFragment(sql: dialect.exactDecimal(fragment.sql), bindings: fragment.bindings, type: .decimal, name: fragment.name)
    }

    /// The SQL of a sort key (checked by ``/AmberModel/ResolvedKeyPath/sortKey(_:from:in:transients:)``):
    /// an attribute, or one reached through to-one relationships.
    package func sortTerm(_ key: String) throws(AmberError) -> SQLFragment {
        _ = try ResolvedKeyPath.sortKey(key, from: entity, in: model)
        switch try resolve(key, 1) {
        case .extended(let term): return term
        case .attribute(var term, let attribute):
            if attribute.type == .decimal { term.sql = dialect.approximateDecimal(term.sql) }
            return term
        case .link(let term, _), .aggregate(let term): return term  // refused by sortKey
        }
    }
}
