import AmberModel
import AmberStore
import AmberTransformers
import AmberValues
import Foundation

/// A predicate compiled for one entity and tested on objects in memory, on
/// their current values: what a fetch asks of the objects it holds with
/// pending changes, and what ``Context/filter(_:matching:sortedBy:)`` asks of any list.
///
/// It gives the answers a store's SQL gives for the same values (see
/// ``ComparedValue``): an unknown (a null, a NaN) satisfies no comparison
/// but `!=` and `== nil`, `NOT` of an unknown is true, `[c]` and `[d]` fold
/// as the stores fold, decimals compare exactly. It refuses what the SQL
/// compiler refuses, in the same words, when it is made, not per object.
struct ObjectPredicate {
    typealias Test = (ManagedObject) throws(AmberError) -> Bool
    typealias Reader = (ManagedObject) throws(AmberError) -> Value

    private let test: Test

    /// `predicate` for objects of `entity`. Transient attributes may be
    /// tested when `transients` (a list filtered in memory; a fetch cannot).
    ///
    /// - Throws: what compiling `predicate` for the store throws: an unknown
    ///   key path, a comparison that does not fit its types, a `$VARIABLE` with no value.
    init(_ predicate: FetchPredicate, entity: Entity, model: Model, transients: Bool = false) throws(AmberError) {
        if let variable = predicate.firstVariable {
            throw .invalidSubstitution(variable: variable, message: "has no value in \"\(predicate.format)\"; "
                + "fill the variables with FetchPredicate.substituting(_:) or fetch through a template")
        }
        test = try Scope(entity: entity, model: model, transients: transients).test(predicate.root)
    }

    /// Whether `object` matches, on its current values.
    ///
    /// - Throws: a value that cannot be read (a transformer failing to decode, a computed attribute failing).
    func matches(_ object: ManagedObject) throws(AmberError) -> Bool { try test(object) }
}

/// Compiles the predicate for the objects of one entity (the fetched one,
/// or a to-many relationship's members inside `ANY`, `ALL` and `NONE`).
private struct Scope {
    typealias Test = ObjectPredicate.Test
    typealias Reader = ObjectPredicate.Reader

    let entity: Entity
    let model: Model
    let transients: Bool

    func test(_ node: PredicateNode) throws(AmberError) -> Test {
        switch node {
        case .constant(let truth):
            return { _ in truth }
        case .not(let inner):
            let test = try test(inner)
            return { (object) throws(AmberError) in try !test(object) }
        case .and, .or:
            // Chains as long as the text are flattened, so neither compiling nor testing recurses along them.
            let isAnd = if case .and = node { true } else { false }
            var terms: [PredicateNode] = [], pending = [node]
            while let next = pending.popLast() {
                switch (next, isAnd) {
                case (.and(let a, let b), true), (.or(let a, let b), false): pending += [b, a]
                default: terms.append(next)
                }
            }
            let tests = try terms.map { (term) throws(AmberError) in try test(term) }
            if isAnd {
                return { (object) throws(AmberError) in
                    for test in tests where try !test(object) { return false }
                    return true
                }
            }
            return { (object) throws(AmberError) in
                for test in tests where try test(object) { return true }
                return false
            }
        case .comparison(let comparison):
            return try test(comparison)
        }
    }

    // MARK: Comparisons

    private func test(_ c: Comparison) throws(AmberError) -> Test {
        var c = c.normalized
        if let quantifier = c.quantifier { return try quantified(c, quantifier) }
        if case .keyPath(let name, let position) = c.lhs {
            let resolved = try resolve(name, position)
            switch resolved.end {
            case .attribute(let attribute) where attribute.codec != nil:
                return try encoded(c, reader(resolved), attribute)
            case .extended(let key, let owner):
                c.rhs = try c.rhs.extendedConstant(c.op, "\(owner.name).\(key)")
            case .link(let relationship):
                return try link(c, reader(resolved), relationship, name)
            default:
                break
            }
        }
        if case .this = c.lhs, c.op == .in { return try selfIn(c) }
        let lhsType = try type(of: c.lhs)
        switch c.op {
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            return try ordering(c, lhsType: lhsType)
        case .beginsWith, .endsWith, .contains:
            let (l, r) = try stringOperands(c, lhsType: lhsType)
            let op = c.op
            return { (object) throws(AmberError) in
                guard let text = try l(object).text, let part = try r(object).text else { return false }
                switch op {
                case .beginsWith: return text.starts(with: part)
                case .endsWith: return text.reversed().starts(with: part.reversed())
                default: return Self.contains(text, part)
                }
            }
        case .like:
            guard case .value(.string(let pattern), _) = c.rhs else {
                throw .invalidPredicate(position: c.rhs.position, message: "LIKE needs a string pattern on its right")
            }
            let l = try stringOperands(c, lhsType: lhsType).0
            let parts = LikePattern.parts(of: TextFolding.fold(pattern, flags: c.options.rawValue))
            return { (object) throws(AmberError) in
                guard let text = try l(object).text else { return false }
                return Self.like(Array(String(decoding: text, as: UTF8.self).unicodeScalars), parts)
            }
        case .matches:
            guard case .value(.string(let pattern), _) = c.rhs else {
                throw .invalidPredicate(position: c.rhs.position, message: "MATCHES needs a regular expression string on its right")
            }
            guard let expression = WholeTextExpression(pattern, options: c.options) else {
                throw .invalidPredicate(position: c.rhs.position, message: "\"\(pattern)\" is not a valid regular expression")
            }
            let l = try operand(c.lhs, as: nil)
            try requireString(l.type, c.lhs, "MATCHES")
            let read = l.read
            return { (object) throws(AmberError) in
                guard case .string(let text) = try read(object) else { return false }
                return expression.matches(text)
            }
        case .in:
            let items = try c.rhs.listItems("IN")
            guard !items.isEmpty else { return { _ in false } }
            let lhs = try operand(c.lhs, as: nil)
            if !c.options.isEmpty { try requireString(lhs.type, c.lhs, "IN\(c.options.modifier)") }
            let l = folded(lhs.read, c.options)
            let readers = try items.map { (item) throws(AmberError) in folded(try operand(item, as: lhsType).read, c.options) }
            return { (object) throws(AmberError) in
                let value = try l(object)
                for reader in readers where value.compare(try reader(object)) == 0 { return true }
                return false
            }
        case .between:
            let items = try c.rhs.listItems("BETWEEN")
            guard items.count == 2 else {
                throw .invalidPredicate(position: c.rhs.position, message: "BETWEEN needs {low, high}, given \(items.count) values")
            }
            let l = folded(try operand(c.lhs, as: nil).read, [])
            let low = folded(try operand(items[0], as: lhsType).read, []), high = folded(try operand(items[1], as: lhsType).read, [])
            return { (object) throws(AmberError) in
                let value = try l(object)
                guard let above = value.compare(try low(object)), let below = value.compare(try high(object)) else { return false }
                return above >= 0 && below <= 0
            }
        }
    }

    private func ordering(_ c: Comparison, lhsType: AttributeType?) throws(AmberError) -> Test {
        if case .this = c.lhs { return try selfEquals(c) }
        let lhsIsNull = if case .value(.null, _) = c.lhs { true } else { false }
        let rhsIsNull = if case .value(.null, _) = c.rhs { true } else { false }
        if lhsIsNull || rhsIsNull {
            let other = try operand(lhsIsNull ? c.rhs : c.lhs, as: nil).read
            switch c.op {
            case .equal: return { (object) throws(AmberError) in try other(object).isNull }
            case .notEqual: return { (object) throws(AmberError) in try !other(object).isNull }
            default: return { _ in false }  // Nothing is less or greater than nil.
            }
        }
        let l = try operand(c.lhs, as: nil)
        let r = try operand(c.rhs, as: lhsType)
        if !c.options.isEmpty { try requireString(l.type, c.lhs, c.op.rawValue) }
        let (left, right) = (folded(l.read, c.options), folded(r.read, c.options))
        let op = c.op
        return { (object) throws(AmberError) in
            let a = try left(object), b = try right(object)
            if op == .notEqual { return a.isDistinct(from: b) }
            guard let order = a.compare(b) else { return false }
            switch op {
            case .equal: return order == 0
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            default: return order >= 0
            }
        }
    }

    /// A transformed attribute compares by its stored form, as the store
    /// compares it: each constant checked against the value class and
    /// encoded, and each object's current value encoded the same way; so
    /// only `==`, `!=` and `IN` mean anything.
    private func encoded(_ c: Comparison, _ read: @escaping Reader, _ attribute: Attribute) throws(AmberError) -> Test {
        guard let codec = attribute.codec else { return { _ in false } }
        func stored(_ value: Value) throws(AmberError) -> Value {
            guard !value.isNull else { return .null }
            do throws(TransformerFailure) {
                return try codec.encode(value)
            } catch {
                throw error.error(at: "\(attribute)")
            }
        }
        func constant(_ operand: Operand) throws(AmberError) -> Value {
            guard case .value(let value, let position) = operand else {
                throw .invalidPredicate(position: operand.position, message: "\(attribute) is transformed; compare it with values, not with attributes")
            }
            do throws(AmberError) {
                return try stored(try attribute.check(value))
            } catch {
                throw .invalidPredicate(position: position, message: "\(error)")
            }
        }
        switch c.op {
        case .equal, .notEqual:
            let value = try constant(c.rhs), equal = c.op == .equal
            return { (object) throws(AmberError) in try stored(try read(object)).isIdentical(to: value) == equal }
        case .in:
            let values = try c.rhs.listItems("IN").map { (item) throws(AmberError) in try constant(item) }
            return { (object) throws(AmberError) in
                let current = try stored(try read(object))
                return !current.isNull && values.contains { current.isIdentical(to: $0) }
            }
        default:
            throw .invalidPredicate(position: c.position, message: "\(attribute) is transformed; only ==, != and IN can compare its stored form")
        }
    }

    /// `SELF == %@`, `SELF != %@`.
    private func selfEquals(_ c: Comparison) throws(AmberError) -> Test {
        guard c.op == .equal || c.op == .notEqual, case .value(let value, let position) = c.rhs else {
            throw .invalidPredicate(position: c.position, message: "SELF can only be compared with == or != to an object ID")
        }
        guard case .objectID(let id) = value else {
            throw .invalidPredicate(position: position, message: "SELF is compared with an object ID, given \(value.valueClass) \(value)")
        }
        let rows = RowSet([id], kind: entity, model: model), equal = c.op == .equal
        return { object in rows.contains(object.objectID) == equal }
    }

    /// `SELF IN %@`.
    private func selfIn(_ c: Comparison) throws(AmberError) -> Test {
        let rows = RowSet(try c.rhs.listItems("IN").map { (item) throws(AmberError) in try item.objectID() }, kind: entity, model: model)
        return { object in rows.contains(object.objectID) }
    }

    /// A to-one relationship compared with objects: `author == %@`, `author != nil`, `author IN %@`.
    private func link(_ c: Comparison, _ read: @escaping Reader, _ relationship: Relationship, _ name: String) throws(AmberError) -> Test {
        if case .value(.null, _) = c.rhs {
            guard c.op == .equal || c.op == .notEqual else { return { _ in false } }
            let equal = c.op == .equal
            return { (object) throws(AmberError) in try read(object).isNull == equal }
        }
        let destination = model.destination(of: relationship)
        switch c.op {
        case .equal, .notEqual:
            let rows = RowSet([try c.rhs.objectID()], kind: destination, model: model), equal = c.op == .equal
            return { (object) throws(AmberError) in
                guard case .objectID(let found) = try read(object) else { return !equal }
                return rows.contains(found) == equal
            }
        case .in:
            let rows = RowSet(try c.rhs.listItems("IN").map { (item) throws(AmberError) in try item.objectID() }, kind: destination, model: model)
            return { (object) throws(AmberError) in
                guard case .objectID(let found) = try read(object) else { return false }
                return rows.contains(found)
            }
        default:
            throw .invalidPredicate(position: c.position, message: "\(name) is a relationship: compare it with ==, != or IN")
        }
    }

    /// `ANY books.price > 10`, `ALL …`, `NONE …`: the comparison tested on each member (in its own scope).
    private func quantified(_ c: Comparison, _ quantifier: Quantifier) throws(AmberError) -> Test {
        guard case .keyPath(let path, let position) = c.lhs else {
            throw .invalidPredicate(position: c.lhs.position, message: "\(quantifier.rawValue) needs a key path through a to-many relationship")
        }
        let quantified = try QuantifiedKeyPath(path, at: position, after: quantifier, from: entity, in: model)
        let scope = Scope(entity: model.destination(of: quantified.toMany), model: model, transients: transients)
        let member = try scope.test(quantified.memberComparison(c, quantifier: quantifier))
        let hops = quantified.hops, toMany = quantified.toMany
        return { (object) throws(AmberError) in
            guard let owner = try object.reached(through: hops) else { return quantifier != .any }
            for item in try owner.objects(for: toMany) {
                let matched = try member(item)
                if matched && quantifier == .any { return true }
                if matched && quantifier == .none { return false }
                if !matched && quantifier == .all { return false }
            }
            return quantifier != .any
        }
    }

    // MARK: Operands

    /// What an operand reads from an object, and its type where it has one.
    private struct Read {
        var read: Reader
        var type: AttributeType?
    }

    private func resolve(_ path: String, _ position: Int) throws(AmberError) -> ResolvedKeyPath {
        try ResolvedKeyPath.resolve(path, at: position, from: entity, in: model, transients: transients)
    }

    private func type(of operand: Operand) throws(AmberError) -> AttributeType? {
        switch operand {
        case .keyPath(let path, let position): try resolve(path, position).type
        case .subquery: .integer64
        default: nil
        }
    }

    private func operand(_ operand: Operand, as type: AttributeType?) throws(AmberError) -> Read {
        switch operand {
        case .keyPath(let path, let position):
            let resolved = try resolve(path, position)
            return Read(read: reader(resolved), type: resolved.type)
        case .this:
            return Read(read: { object in .objectID(object.objectID) }, type: .objectID)
        case .value(let value, let position):
            guard let type, type != .objectID else { return Read(read: { _ in value }, type: nil) }
            let constant = try type.comparisonConstant(value, at: position)
            return Read(read: { _ in constant }, type: type)
        case .list(_, let position):
            throw .invalidPredicate(position: position, message: "a list {…} is only allowed after IN or BETWEEN")
        case .variable(let name, let position):
            throw .invalidSubstitution(variable: name, message: "has no value (position \(position))")
        case .subquery(let subquery, let position):
            let (hops, toMany) = try subquery.members(from: entity, in: model, at: position)
            let scope = Scope(entity: model.destination(of: toMany), model: model, transients: transients)
            let member = try scope.test(subquery.predicate)
            return Read(read: { (object) throws(AmberError) in
                var count: Int64 = 0
                for item in try object.reached(through: hops)?.objects(for: toMany) ?? [] where try member(item) { count += 1 }
                return .int(count)
            }, type: .integer64)
        }
    }

    /// Reads a resolved key path's current value from an object: null where a to-one on the way is empty.
    private func reader(_ resolved: ResolvedKeyPath) -> Reader {
        let hops = resolved.hops
        switch resolved.end {
        case .link:
            return { (object) throws(AmberError) in
                guard let destination = try object.reached(through: hops) else { return .null }
                return .objectID(destination.objectID)
            }
        case .attribute(let attribute):
            return { (object) throws(AmberError) in
                guard let owner = try object.reached(through: hops) else { return .null }
                return try owner.value(for: attribute)
            }
        case .extended(let key, _):
            return { (object) throws(AmberError) in
                guard let owner = try object.reached(through: hops) else { return .null }
                return ExtendedValues.asStoresRead(try owner.value(forExtendedKey: key))
            }
        case .aggregate(let relationship, let operation, let attribute):
            return { (object) throws(AmberError) in
                let members = try object.reached(through: hops)?.objects(for: relationship) ?? []
                guard let attribute else { return .int(Int64(members.count)) }
                return try Self.aggregate(operation, of: members.map { (member) throws(AmberError) in try member.value(for: attribute) })
            }
        }
    }

    /// `@sum` (0 for none), `@avg`, `@min` and `@max` (null for none) of
    /// members' values, nulls left out, as SQL's aggregates compute them
    /// (sums and averages in doubles, compensated as SQLite sums; decimals approximated).
    private static func aggregate(_ operation: ResolvedKeyPath.CollectionOperator, of values: [Value]) throws(AmberError) -> Value {
        let present = values.filter { !$0.isNull }
        switch operation {
        case .count:
            return .int(Int64(values.count))
        case .sum, .avg:
            var sum = 0.0, compensation = 0.0
            for value in present {
                let number = Self.number(value)
                let total = sum + number
                compensation += abs(sum) >= abs(number) ? (sum - total) + number : (number - total) + sum
                sum = total
            }
            if operation == .sum { return .double(sum + compensation) }
            return present.isEmpty ? .null : .double((sum + compensation) / Double(present.count))
        case .min, .max:
            var best: Value?
            for value in present {
                guard let current = best else {
                    best = value
                    continue
                }
                let order = ComparedValue(value).sortOrder(ComparedValue(current))
                if operation == .min ? order < 0 : order > 0 { best = value }
            }
            guard let best else { return .null }
            if case .decimal(let decimal) = best { return .double(ComparedValue.approximate(decimal.number)) }
            return best
        }
    }

    private static func number(_ value: Value) -> Double {
        switch value {
        case .bool(let flag): flag ? 1 : 0
        case .int(let number): Double(number)
        case .double(let number): number
        case .float(let number): Double(number)
        case .decimal(let decimal): ComparedValue.approximate(decimal.number)
        case .date(let date): date.timeIntervalSinceReferenceDate
        default: 0
        }
    }

    /// A reader's values as they are compared, text folded for `options`.
    private func folded(_ read: @escaping Reader, _ options: ComparisonOptions) -> (ManagedObject) throws(AmberError) -> ComparedValue {
        guard !options.isEmpty else { return { (object) throws(AmberError) in ComparedValue(try read(object)) } }
        return { (object) throws(AmberError) in
            let value = try read(object)
            guard case .string(let text) = value else { return ComparedValue(value) }
            return ComparedValue(.string(TextFolding.fold(text, flags: options.rawValue)))
        }
    }

    private func stringOperands(_ c: Comparison, lhsType: AttributeType?)
        throws(AmberError) -> ((ManagedObject) throws(AmberError) -> ComparedValue, (ManagedObject) throws(AmberError) -> ComparedValue)
    {
        let l = try operand(c.lhs, as: nil)
        try requireString(l.type, c.lhs, c.op.rawValue)
        let r = try operand(c.rhs, as: lhsType)
        if case .value(let v, let position) = c.rhs, !(v.valueClass == .string) {
            throw .invalidPredicate(position: position, message: "\(c.op.rawValue) needs a string, given \(v.valueClass) \(v)")
        }
        return (folded(l.read, c.options), folded(r.read, c.options))
    }

    private func requireString(_ type: AttributeType?, _ operand: Operand, _ op: String) throws(AmberError) {
        if let type, type != .string {
            var name = "the value"
            if case .keyPath(let path, let position) = operand, let resolved = try? resolve(path, position) {
                name = Self.name(of: resolved, path: path)
            }
            throw .invalidPredicate(position: operand.position, message: "\(op) needs a string attribute; \(name) is \(type)")
        }
    }

    /// How the SQL compiler names what a key path reads, in its errors.
    private static func name(of resolved: ResolvedKeyPath, path: String) -> String {
        switch resolved.end {
        case .attribute(let attribute): "\(attribute)"
        case .link(let relationship): relationship.description
        case .aggregate: path
        case .extended(let key, let owner): "\(owner.name).\(key)"
        }
    }

    // MARK: Text

    /// Whether `part` occurs in `text` (both UTF-8, so a byte match is a character match).
    private static func contains(_ text: [UInt8], _ part: [UInt8]) -> Bool {
        guard !part.isEmpty else { return true }
        guard part.count <= text.count else { return false }
        for start in 0...(text.count - part.count) where text[start] == part[0] {
            if text[start..<(start + part.count)].elementsEqual(part) { return true }
        }
        return false
    }

    /// A LIKE pattern's parts against `text`, one character a Unicode scalar
    /// (as SQLite's GLOB counts): the usual two-pointer match, which goes back
    /// only to the last `*`, so it takes at most text × pattern steps.
    private static func like(_ text: [Unicode.Scalar], _ parts: [LikePattern.Part]) -> Bool {
        var t = 0, p = 0, star: Int?, resume = 0
        while t < text.count {
            if p < parts.count {
                switch parts[p] {
                case .anyRun:
                    (star, resume) = (p, t)
                    p += 1
                    continue
                case .oneCharacter:
                    t += 1
                    p += 1
                    continue
                case .literal(let c) where text[t...].starts(with: c.unicodeScalars):
                    t += c.unicodeScalars.count
                    p += 1
                    continue
                case .literal:
                    break
                }
            }
            guard let star else { return false }
            resume += 1
            (p, t) = (star + 1, resume)
        }
        while p < parts.count, parts[p] == .anyRun { p += 1 }
        return p == parts.count
    }
}

extension ManagedObject {
    /// The object the to-one relationships `hops` reach from this one; nil where one is empty.
    func reached(through hops: [Relationship]) throws(AmberError) -> ManagedObject? {
        var current = self
        for hop in hops {
            guard let next = try current.object(for: hop) else { return nil }
            current = next
        }
        return current
    }
}

/// Objects given by ID, matched as a store matches them: a saved object by
/// its primary key, when the ID's entity is `kind` or one below it (whatever
/// store the ID names); a new object by its temporary ID, which only memory knows.
private struct RowSet {
    private var keys: Set<Int64> = []
    private var unsaved: Set<ObjectID> = []

    init(_ ids: [ObjectID], kind: Entity, model: Model) {
        for id in ids {
            if let key = id.primaryKey {
                if model.names(id, aRowOf: kind) { keys.insert(key) }
            } else {
                unsaved.insert(id)
            }
        }
    }

    func contains(_ id: ObjectID) -> Bool {
        if let key = id.primaryKey { return keys.contains(key) }
        return unsaved.contains(id)
    }
}
