import StowageCore

extension DiskCache {
    /// Refuses a key or tag with a NUL byte before it is stored.
    ///
    /// GRDB binds Swift strings as C strings, which end at the first NUL byte: stored through
    /// GRDB, `"a\0b"` would be `"a"` and overwrite or remove another key's value. No key or tag
    /// with a NUL byte is ever stored, so reads and removals treat one as absent
    /// (``containsNUL(_:)``) instead of reaching SQLite.
    ///
    /// - Throws: `StowageError` `.invalidArgument` naming what was wrong and what to do.
    static func checkStorable(key: String, tag: String?) throws {
        if containsNUL(key) {
            throw StowageError.invalidArgument(
                "the disk cache key \(PathInput.quoted(key)) contains a NUL byte, which SQLite text cannot hold; "
                    + "encode such keys (percent-encoding or base64) before storing them"
            )
        }
        if let tag, containsNUL(tag) {
            throw StowageError.invalidArgument(
                "the disk cache tag \(PathInput.quoted(tag)) contains a NUL byte, which SQLite text cannot hold; "
                    + "use a tag without one"
            )
        }
    }

    /// Whether `text` holds a NUL byte (and so cannot be a stored key or tag).
    static func containsNUL(_ text: String) -> Bool {
        text.utf8.contains(0)
    }
}
