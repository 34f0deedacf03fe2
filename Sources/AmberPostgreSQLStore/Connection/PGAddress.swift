import AmberValues
import Foundation

/// A `postgresql://` URL taken apart: what libpq connects with, the schema
/// Amber keeps the store's tables in, and how errors name the server
/// (never with its password).
package struct PGAddress: Sendable, Hashable {
    /// The URL without Amber's own options, for libpq.
    package let conninfo: String
    /// The schema of the store's tables (`?schema=`, `public` by default):
    /// several Amber stores share a database, one schema each.
    package let schema: String
    /// `postgresql://user@host:port/db?schema=…`, without a password.
    package let place: String

    /// Reads `url` (`postgresql://` or `postgres://`): libpq's own URI
    /// syntax, plus `schema=NAME`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidStoreURL(url:part:reason:)``
    ///   for a URL libpq could not read or a schema name that is not a plain identifier.
    package init(_ url: String) throws(AmberError) {
        guard var components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "postgresql" || scheme == "postgres"
        else {
            throw .invalidStoreURL(url: Self.withoutPassword(url), part: "URL", reason: "not a postgresql:// URL libpq can read")
        }
        var items = components.queryItems ?? []
        let schemas = items.filter { $0.name == "schema" }
        items.removeAll { $0.name == "schema" }
        let schema = schemas.last?.value ?? "public"
        // A plain identifier: it is written into SQL (search_path), so nothing that needs quoting is let through.
        guard let first = schema.unicodeScalars.first, first == "_" || ("a"..."z").contains(first),
              schema.unicodeScalars.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }), schema.count <= 57
        else {
            throw .invalidStoreURL(url: Self.withoutPassword(url), part: "schema=\(schema)",
                                   reason: "a schema is a lower-case name of letters, digits and _ (up to 57, so its notice channel amber.<schema> fits), starting with a letter or _")
        }
        components.queryItems = items.isEmpty ? nil : items
        self.schema = schema
        conninfo = components.string ?? url
        components.password = nil
        // A password can come as an option too: never part of how errors name the store.
        components.queryItems = items.filter { !["password", "sslpassword"].contains($0.name) } + [URLQueryItem(name: "schema", value: schema)]
        place = components.string ?? "postgresql://"
    }

    /// `url` with any password cut out, for an error about a URL that cannot be read.
    private static func withoutPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = nil
        return components.string ?? "postgresql://"
    }
}
