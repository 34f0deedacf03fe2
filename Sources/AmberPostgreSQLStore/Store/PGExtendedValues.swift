import AmberStore

/// Extended attributes on PostgreSQL. They are stored as Amber writes them
/// on SQLite: the JSON text of `ExtendedValues` in the `_extra` column,
/// byte for byte, so a value reads back exactly and optimistic locking and
/// key-by-key merges compare what was written (a `jsonb` column would
/// reorder keys and respace the text). Predicates read a key through
/// `amber_extended(doc, key)`, which gives an `amber_value`: kind 1 and the
/// number for a JSON number or Boolean (as 0 or 1), kind 2 and the text for
/// a string (an array or object as its JSON text), NULL where the key is
/// absent or null. `amber_value`s compare field by field, so numbers come
/// before text, numbers compare by value and text by its bytes: the order
/// SQLite gives the same stored values.
enum PGExtendedValues {
    /// The type and function, in the connection's schema; made with the store (and again, harmlessly, by a migration).
    static let createSQL = [
        """
        DO $amber$ BEGIN CREATE TYPE amber_value AS (k smallint, n numeric, t text COLLATE "C"); \
        EXCEPTION WHEN duplicate_object THEN NULL; END $amber$
        """,
        """
        CREATE OR REPLACE FUNCTION amber_extended(doc text, key text) RETURNS amber_value LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $amber$ \
        SELECT CASE jsonb_typeof(v) WHEN 'number' THEN ROW(1, v::numeric, '')::amber_value \
        WHEN 'boolean' THEN ROW(1, CASE WHEN v::boolean THEN 1 ELSE 0 END, '')::amber_value \
        WHEN 'string' THEN ROW(2, 0, v #>> '{}')::amber_value \
        WHEN 'array' THEN ROW(2, 0, v::text)::amber_value WHEN 'object' THEN ROW(2, 0, v::text)::amber_value END \
        FROM (SELECT doc::jsonb -> key AS v) AS found $amber$
        """,
    ]
}
