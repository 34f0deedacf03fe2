import AmberValues
import Foundation

/// Names a store, the same way in every language and the CLI:
///
/// - a path (`library.amber`, `/data/library.amber`, `./a:b.amber`) or a
///   `file:` URL (`file:///data/library.amber`, percent-encoded) for an
///   SQLite file;
/// - `memory:` for an in-memory store, gone when its ``Store`` goes;
/// - `postgresql://user@host:port/database?schema=name` (or `postgres://`)
///   for a store on a PostgreSQL server: libpq's URI, whose options it
///   reads (`sslmode`, `connect_timeout`, …), plus `schema`, the schema
///   holding the store's tables (`public` unless given).
///
/// Text that starts with a scheme (letters, digits, `+`, `-`, `.` and a
/// colon, before any `/`) is read as a URL; write a path with a colon
/// before its first slash as `./name`.
public struct StoreURL: Sendable, Hashable, CustomStringConvertible {
    /// The kinds of store a URL names.
    public enum Kind: Sendable, Hashable {
        /// An SQLite file at this path.
        case file(path: String)
        /// An in-memory store.
        case memory
        /// A store on a PostgreSQL server: the whole URL, as libpq reads it (with `schema=`, if given).
        case postgresql(url: String)
    }

    /// The schemes this build opens.
    public static let schemes = ["file", "memory", "postgresql", "postgres"]

    /// What the URL names.
    public let kind: Kind

    /// An SQLite file at `path`.
    public static func file(_ path: String) -> StoreURL { StoreURL(kind: .file(path: path)) }
    /// An in-memory store.
    public static let memory = StoreURL(kind: .memory)

    private init(kind: Kind) { self.kind = kind }

    /// Reads `text`: a path, `file:` URL or `memory:`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidStoreURL(url:part:reason:)`` naming
    ///   the part that is wrong: an unknown scheme, an empty path, a `file:`
    ///   URL with a host or bad percent-encoding, text after `memory:`.
    public init(_ text: String) throws(AmberError) {
        func refuse(_ part: String, _ reason: String) -> AmberError { .invalidStoreURL(url: text, part: part, reason: reason) }
        guard !text.isEmpty else { throw refuse("path", "the store's name is empty") }
        guard !text.utf8.contains(0) else { throw refuse("path", "it holds a NUL character") }
        guard let scheme = Self.scheme(of: text) else {
            self.init(kind: .file(path: text))
            return
        }
        let rest = String(text.dropFirst(scheme.count + 1))
        switch scheme.lowercased() {
        case "memory":
            guard rest.isEmpty else { throw refuse("\(rest)", "nothing may follow memory: (each in-memory store is its own)") }
            self.init(kind: .memory)
        case "file":
            var path = rest
            if path.hasPrefix("//") {
                let afterSlashes = path.dropFirst(2)
                let host = afterSlashes.prefix { $0 != "/" }
                guard host.isEmpty || host == "localhost" else { throw refuse("host \(host)", "a file: URL names a file on this machine: write file:///path") }
                path = String(afterSlashes.dropFirst(host.count))
            }
            if let query = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
                throw refuse(String(path[query...]), "a file: URL takes no query or fragment")
            }
            guard let decoded = path.removingPercentEncoding else { throw refuse(path, "bad percent-encoding") }
            guard !decoded.utf8.contains(0) else { throw refuse(path, "it encodes a NUL character (%00)") }
            guard !decoded.isEmpty else { throw refuse("path", "the file: URL has no path") }
            self.init(kind: .file(path: decoded))
        case "postgresql", "postgres":
            guard rest.hasPrefix("//"), let components = URLComponents(string: text), components.scheme != nil else {
                throw refuse("URL", "write postgresql://user@host:port/database (libpq's URI form)")
            }
            self.init(kind: .postgresql(url: text))
        default:
            throw refuse("scheme \(scheme)", "no store for it in this build (schemes: \(Self.schemes.joined(separator: ", ")), or a path)")
        }
    }

    /// The scheme `text` starts with, if it starts with one before any slash.
    private static func scheme(of text: String) -> String? {
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let candidate = text.utf8[..<colon]
        func letter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
        func digit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard let first = candidate.first, letter(first),
              candidate.allSatisfy({ letter($0) || digit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
        else { return nil }
        return String(text[..<colon])
    }

    /// The file's path, for a file store.
    public var filePath: String? {
        guard case .file(let path) = kind else { return nil }
        return path
    }

    /// The path for a file, `memory:` for an in-memory store, the URL
    /// without its password for a server: how errors name the store.
    public var description: String {
        switch kind {
        case .file(let path): return path
        case .memory: return "memory:"
        case .postgresql(let url):
            // A password, in the user part or as an option, is never part of how errors name the store.
            let secret = ["password", "sslpassword"]
            guard var components = URLComponents(string: url),
                  components.password != nil || components.queryItems?.contains(where: { secret.contains($0.name) }) == true
            else { return url }
            components.password = nil
            components.queryItems = components.queryItems?.filter { !secret.contains($0.name) }
            return components.string ?? "postgresql://"
        }
    }
}
