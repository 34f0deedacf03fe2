import AmberTransformers
import AmberValues

/// A recursive-descent parser for Core Data's predicate format syntax.
///
///     predicate  := or
///     or         := and (("OR" | "||") and)*
///     and        := unary (("AND" | "&&") unary)*
///     unary      := ("NOT" | "!") unary | "(" predicate ")" | TRUEPREDICATE | FALSEPREDICATE | comparison
///     comparison := [ANY | SOME | ALL | NONE] operand operator operand
///     operator   := ("==" | "=" | "!=" | "<>" | "<" | "<=" | "=<" | ">" | ">=" | "=>"
///                   | BEGINSWITH | ENDSWITH | CONTAINS | LIKE | MATCHES | IN | BETWEEN) ["[" c|d|n... "]"]
///     keypath    := name ("." name)*  (a name may be a collection operator: @count, @sum, @avg, @min, @max)
///     operand    := keypath | SELF | %K | %@ | $VARIABLE | string | number | nil | NULL | TRUE | YES | FALSE | NO
///                   | "{" [operand ("," operand)*] "}" | SUBQUERY "(" keypath "," $NAME "," predicate ")" ".@count"
///
/// Inside a SUBQUERY, `$NAME` is the member and `$NAME.key` its key path;
/// every key path starts there.
///
/// Keywords are case-insensitive; `#word` uses a keyword as an attribute name.
struct PredicateParser {
    private let text: [Character]
    private var index = 0
    private let arguments: [Value]
    private var nextArgument = 0
    /// Nesting (NOT, parentheses, lists) and comparisons so far: parsing and compiling
    /// recurse, so hostile text must not be able to exhaust the stack.
    private var depth = 0
    private var comparisons = 0
    /// Each `$VARIABLE` met, with its position, in text order.
    private(set) var variables: [(name: String, position: Int)] = []
    /// The member variable of each SUBQUERY being parsed, innermost last.
    private var members: [String] = []
    /// SQLite's parser keeps a stack of 100 entries, and each level here
    /// compiles to a few of them (`NOT`, a parenthesis, a list, a join).
    static let maximumDepth = 20
    static let maximumComparisons = 1000

    init(_ text: String, arguments: [Value]) {
        self.text = Array(text)
        self.arguments = arguments
    }

    mutating func parse() throws(AmberError) -> PredicateNode {
        let node = try parseOr()
        skipSpace()
        guard index == text.count else { throw fail("unexpected \(describeNext())") }
        guard nextArgument == arguments.count else {
            throw .invalidPredicate(position: text.count + 1,
                                    message: "\(arguments.count) argument\(arguments.count == 1 ? "" : "s") given, \(nextArgument) used")
        }
        return node
    }

    // MARK: Grammar

    private mutating func parseOr() throws(AmberError) -> PredicateNode {
        var node = try parseAnd()
        while try acceptWord("OR") || accept("||") {
            node = .or(node, try parseAnd())
        }
        return node
    }

    private mutating func parseAnd() throws(AmberError) -> PredicateNode {
        var node = try parseUnary()
        while try acceptWord("AND") || accept("&&") {
            node = .and(node, try parseUnary())
        }
        return node
    }

    private mutating func parseUnary() throws(AmberError) -> PredicateNode {
        skipSpace()
        try enter()
        defer { depth -= 1 }
        if try acceptWord("NOT") { return .not(try parseUnary()) }
        if peek("!") && !peek("!=") {
            index += 1
            return .not(try parseUnary())
        }
        if accept("(") {
            let node = try parseOr()
            guard accept(")") else { throw fail("expected ) to close the ( at this nesting, found \(describeNext())") }
            return node
        }
        if try acceptWord("TRUEPREDICATE") { return .constant(true) }
        if try acceptWord("FALSEPREDICATE") { return .constant(false) }
        return .comparison(try parseComparison())
    }

    private mutating func parseComparison() throws(AmberError) -> Comparison {
        comparisons += 1
        guard comparisons <= Self.maximumComparisons else { throw fail("more than \(Self.maximumComparisons) comparisons") }
        skipSpace()
        var quantifier: Quantifier?
        if try acceptWord("ANY") {
            quantifier = .any
        } else if try acceptWord("SOME") {
            quantifier = .any
        } else if try acceptWord("ALL") {
            quantifier = .all
        } else if try acceptWord("NONE") {
            quantifier = Quantifier.none  // not Optional.none
        }
        let lhs = try parseOperand()
        skipSpace()
        let position = index + 1
        guard let op = try parseOperator() else {
            throw fail("expected a comparison operator (==, <, CONTAINS, IN, …), found \(describeNext())")
        }
        let options = try parseOptions()
        let rhs = try parseOperand()
        return Comparison(lhs: lhs, op: op, options: options, rhs: rhs, position: position, quantifier: quantifier)
    }

    private mutating func parseOperator() throws(AmberError) -> ComparisonOperator? {
        for (symbol, op) in [("==", ComparisonOperator.equal), ("!=", .notEqual), ("<>", .notEqual), ("<=", .lessOrEqual),
                             ("=<", .lessOrEqual), (">=", .greaterOrEqual), ("=>", .greaterOrEqual), ("<", .less),
                             (">", .greater), ("=", .equal)]
            where accept(symbol)
        {
            return op
        }
        for op in [ComparisonOperator.beginsWith, .endsWith, .contains, .like, .matches, .in, .between]
            where try acceptWord(op.rawValue)
        {
            return op
        }
        return nil
    }

    /// `[c]`, `[d]`, `[cd]` (and `[n]`, accepted and ignored: strings are compared as given).
    private mutating func parseOptions() throws(AmberError) -> ComparisonOptions {
        guard index < text.count, text[index] == "[" else { return [] }
        index += 1
        var options: ComparisonOptions = []
        while index < text.count, text[index] != "]" {
            switch text[index].lowercased() {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": break
            default: throw fail("unknown modifier \"\(text[index])\" (use c, d or n)")
            }
            index += 1
        }
        guard index < text.count else { throw fail("expected ] to close the modifiers") }
        index += 1
        return options
    }

    /// One level deeper (NOT, a parenthesis, a list): the one limit on nesting. The caller undoes it.
    private mutating func enter() throws(AmberError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nested more than \(Self.maximumDepth) levels deep") }
    }

    private mutating func parseOperand() throws(AmberError) -> Operand {
        skipSpace()
        let position = index + 1
        guard index < text.count else { throw fail("expected a value or attribute name, found the end") }
        let c = text[index]
        if c == "%" { return try parseSpecifier() }
        if c == "$" {
            index += 1
            var name = readWhile { $0.isLetter || $0.isNumber || $0 == "_" }
            guard Identifier.problem(name, kind: "variable") == nil else {
                throw .invalidPredicate(position: position, message: "$ must start a variable name such as $AUTHOR")
            }
            // A key path of the variable (`$FETCH_SOURCE.author`) is part of its name: its value is given as one.
            while index + 1 < text.count, text[index] == ".", text[index + 1].isLetter || text[index + 1] == "_" {
                index += 1
                name += "." + readWhile { $0.isLetter || $0.isNumber || $0 == "_" }
            }
            if let member = members.last, name == member || name.hasPrefix(member + ".") {
                return name == member ? .this(position: position) : .keyPath(String(name.dropFirst(member.count + 1)), position: position)
            }
            if let outer = members.first(where: { name == $0 || name.hasPrefix($0 + ".") }) {
                throw .invalidPredicate(position: position, message: "$\(outer) belongs to an enclosing SUBQUERY; an inner one reads only its own member")
            }
            variables.append((name, position))
            return .variable(name, position: position)
        }
        if c == "\"" || c == "'" { return .value(.string(try parseString()), position: position) }
        if c.isNumber || ((c == "-" || c == "+") && index + 1 < text.count && text[index + 1].isNumber) {
            return .value(try parseNumber(), position: position)
        }
        if c == "{" {
            try enter()
            defer { depth -= 1 }
            index += 1
            var items: [Operand] = []
            skipSpace()
            if !accept("}") {
                repeat { items.append(try parseOperand()) } while accept(",")
                guard accept("}") else { throw fail("expected , or } in the list, found \(describeNext())") }
            }
            return .list(items, position: position)
        }
        if c == "#" {
            index += 1
            return try keyPath(readWord(), position)
        }
        // SUBQUERY( starts a subquery; the word alone stays a name, as in models made before it was one.
        let start = index
        if try acceptWord("SUBQUERY") {
            if peekAfterSpace("(") { return try parseSubquery(position) }
            index = start
        }
        let word = readWord()
        guard !word.isEmpty else { throw fail("expected a value or attribute name, found \(describeNext())") }
        switch word.uppercased() {
        case "NIL", "NULL": return .value(.null, position: position)
        case "TRUE", "YES": return .value(.bool(true), position: position)
        case "FALSE", "NO": return .value(.bool(false), position: position)
        case "SELF": return .this(position: position)
        case "AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "MATCHES", "CONTAINS", "BEGINSWITH", "ENDSWITH",
             "ANY", "ALL", "SOME", "NONE", "TRUEPREDICATE", "FALSEPREDICATE":
            throw .invalidPredicate(position: position, message: "\(word) is a keyword; write #\(word) to use it as an attribute name")
        default: return try keyPath(word, position)
        }
    }

    /// A key path written as a name; inside a SUBQUERY, key paths start at its member.
    private func keyPath(_ path: String, _ position: Int) throws(AmberError) -> Operand {
        if let member = members.last {
            throw .invalidPredicate(position: position, message: "inside SUBQUERY, a key path starts with its member: $\(member).\(path)")
        }
        return .keyPath(path, position: position)
    }

    /// `SUBQUERY(collection, $x, predicate).@count`, after the word SUBQUERY.
    private mutating func parseSubquery(_ position: Int) throws(AmberError) -> Operand {
        try enter()
        defer { depth -= 1 }
        guard accept("(") else { throw fail("expected ( after SUBQUERY") }
        skipSpace()
        // Inside another SUBQUERY, the collection is its member's: `SUBQUERY($a.books, $b, …)`.
        if let member = members.last { _ = accept("$\(member).") }
        let collection = readWord()
        guard !collection.isEmpty, !collection.contains("@") else {
            throw fail("SUBQUERY needs the key path of a to-many relationship first, found \(describeNext())")
        }
        guard accept(",") else { throw fail("expected , after the SUBQUERY's key path, found \(describeNext())") }
        skipSpace()
        let variablePosition = index + 1
        guard accept("$") else { throw fail("SUBQUERY needs a variable for its member, such as $x, found \(describeNext())") }
        let variable = readWhile { $0.isLetter || $0.isNumber || $0 == "_" }
        guard Identifier.problem(variable, kind: "variable") == nil else {
            throw .invalidPredicate(position: variablePosition, message: "$ must start the SUBQUERY's variable name, such as $x")
        }
        guard accept(",") else { throw fail("expected , after the SUBQUERY's variable, found \(describeNext())") }
        members.append(variable)
        let predicate = try parseOr()
        members.removeLast()
        guard accept(")") else { throw fail("expected ) to close the SUBQUERY, found \(describeNext())") }
        guard accept(".@count") else { throw fail("SUBQUERY(…) is followed by .@count, the number of members that match") }
        return .subquery(Subquery(collection: collection, variable: variable, predicate: predicate), position: position)
    }

    /// `%@` (the next argument as a value), `%K` (as an attribute name); `%d %i %f %s` too, as values.
    private mutating func parseSpecifier() throws(AmberError) -> Operand {
        let position = index + 1
        index += 1
        // Skip length modifiers such as l, ll, h.
        while index < text.count, "lhq".contains(text[index]) { index += 1 }
        guard index < text.count else { throw fail("incomplete format specifier") }
        let kind = text[index]
        index += 1
        guard "@KdiufsDUF".contains(kind) else {
            throw .invalidPredicate(position: position, message: "unknown format specifier %\(kind) (use %@ or %K)")
        }
        guard nextArgument < arguments.count else {
            throw .invalidPredicate(position: position,
                                    message: "%\(kind) has no argument (\(arguments.count) given)")
        }
        let argument = arguments[nextArgument]
        nextArgument += 1
        if kind == "K" {
            guard case .string(let name) = argument else {
                throw .invalidPredicate(position: position, message: "%K needs an attribute name (a string), given \(argument.valueClass) \(argument)")
            }
            return try keyPath(name, position)
        }
        return .value(argument, position: position)
    }

    private mutating func parseString() throws(AmberError) -> String {
        let quote = text[index]
        let start = index + 1 // 1-based position of the opening quote
        index += 1
        var result = ""
        while index < text.count {
            let c = text[index]
            index += 1
            if c == quote { return result }
            if c == "\\" {
                guard index < text.count else { break }
                let escaped = text[index]
                index += 1
                switch escaped {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "0": result.append("\0")
                case "u":
                    let hex = String(text[index..<min(index + 4, text.count)])
                    guard hex.count == 4, let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) else {
                        throw fail("\\u needs four hex digits")
                    }
                    result.unicodeScalars.append(scalar)
                    index += 4
                default: result.append(escaped)
                }
            } else {
                result.append(c)
            }
        }
        throw .invalidPredicate(position: start, message: "unterminated string (missing closing \(quote))")
    }

    private mutating func parseNumber() throws(AmberError) -> Value {
        let start = index
        if text[index] == "-" || text[index] == "+" { index += 1 }
        if index + 1 < text.count, text[index] == "0", text[index + 1] == "x" || text[index + 1] == "X" {
            index += 2
            let digits = readWhile { $0.isHexDigit }
            let negative = text[start] == "-"
            guard let magnitude = Int64(digits, radix: 16) else { throw fail("invalid hexadecimal number") }
            return .int(negative ? -magnitude : magnitude)
        }
        var literal = readWhile { $0.isNumber }
        var isInteger = true
        if index < text.count, text[index] == "." {
            isInteger = false
            index += 1
            literal += "." + readWhile { $0.isNumber }
        }
        if index < text.count, text[index] == "e" || text[index] == "E" {
            isInteger = false
            index += 1
            var exponent = "e"
            if index < text.count, text[index] == "-" || text[index] == "+" {
                exponent.append(text[index])
                index += 1
            }
            literal += exponent + readWhile { $0.isNumber }
        }
        let signed = (text[start] == "-" ? "-" : "") + literal
        if isInteger, let value = Int64(signed) { return .int(value) }
        guard let value = Double(signed) else {
            throw .invalidPredicate(position: start + 1, message: "invalid number \(String(text[start..<index]))")
        }
        return .double(value)
    }

    // MARK: Lexing helpers

    private mutating func skipSpace() {
        while index < text.count, text[index].isWhitespace { index += 1 }
    }

    private func peek(_ symbol: String) -> Bool {
        var i = index
        for c in symbol {
            guard i < text.count, text[i] == c else { return false }
            i += 1
        }
        return true
    }

    /// Whether `symbol` comes next, after any space (nothing is consumed).
    private func peekAfterSpace(_ symbol: String) -> Bool {
        var copy = self
        copy.skipSpace()
        return copy.peek(symbol)
    }

    private mutating func accept(_ symbol: String) -> Bool {
        skipSpace()
        guard peek(symbol) else { return false }
        index += symbol.count
        return true
    }

    /// Accepts a keyword (case-insensitive) that is a whole word.
    private mutating func acceptWord(_ word: String) throws(AmberError) -> Bool {
        skipSpace()
        let end = index + word.count
        guard end <= text.count, String(text[index..<end]).uppercased() == word else { return false }
        if end < text.count, isWordCharacter(text[end]) { return false }
        index = end
        return true
    }

    private func isWordCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "." || c == "@" }

    private mutating func readWord() -> String { readWhile(isWordCharacter) }

    private mutating func readWhile(_ predicate: (Character) -> Bool) -> String {
        let start = index
        while index < text.count, predicate(text[index]) { index += 1 }
        return String(text[start..<index])
    }

    private func describeNext() -> String {
        guard index < text.count else { return "the end" }
        let word = String(text[index..<min(index + 12, text.count)])
        return "\"\(word)\""
    }

    private func fail(_ message: String) -> AmberError {
        .invalidPredicate(position: index + 1, message: message)
    }
}
