/// Quotes an SQL identifier. Model names are already restricted to letters,
/// digits and underscores; quoting keeps SQL keywords (`order`, `group`) usable.
package func quote(_ identifier: String) -> String {
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
