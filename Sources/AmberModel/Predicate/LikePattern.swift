/// A Core Data LIKE pattern read once for every dialect: `*` matches any
/// run of characters, `?` one character, and `\` makes the next character
/// itself (a trailing `\` matches nothing and is dropped). A dialect writes
/// the parts in its own pattern syntax (SQLite's GLOB, PostgreSQL's LIKE).
package enum LikePattern {
    package enum Part: Equatable {
        case anyRun
        case oneCharacter
        case literal(Character)
    }

    /// The parts of `pattern`, in order.
    package static func parts(of pattern: String) -> [Part] {
        var parts: [Part] = [], escaped = false
        for c in pattern {
            if escaped {
                parts.append(.literal(c))
                escaped = false
                continue
            }
            switch c {
            case "\\": escaped = true
            case "*": parts.append(.anyRun)
            case "?": parts.append(.oneCharacter)
            default: parts.append(.literal(c))
            }
        }
        return parts
    }

    /// `pattern` written with `anyRun` and `oneCharacter`, and each literal
    /// character that is special in the target syntax through `escape`.
    package static func written(_ pattern: String, anyRun: String, oneCharacter: String,
                                escaping special: Set<Character>, _ escape: (Character) -> String) -> String {
        parts(of: pattern).reduce(into: "") { text, part in
            switch part {
            case .anyRun: text += anyRun
            case .oneCharacter: text += oneCharacter
            case .literal(let c): if special.contains(c) { text += escape(c) } else { text.append(c) }
            }
        }
    }
}
