#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The names of one directory, read in full before a walk goes below it, as fts(3) reads a
/// directory before descending: the directory's stream is closed again at once, so a walk holds
/// one descriptor per level of depth and none per entry.
///
/// The names are kept as the bytes `readdir` gave, NUL-terminated and packed in one buffer: no
/// `String` per entry (a name that is not valid UTF-8 stays itself, never its look-alike), no
/// allocation per entry.
struct ListedNames {
    private var bytes: [CChar] = []
    private var starts: [Int] = []

    /// How many names were listed.
    var count: Int { starts.count }

    /// Lists the directory open at `descriptor`, which stays open.
    ///
    /// - Throws: `StowageError` when the directory cannot be read; `names` then holds what was
    ///   read before the error.
    static func read(_ descriptor: Int32, path: String, into names: inout ListedNames) throws {
        try OpenDirectory.forEachEntry(in: descriptor, path: path) { name, _ in
            names.starts.append(names.bytes.count)
            names.bytes.append(contentsOf: UnsafeBufferPointer(start: name, count: strlen(name) + 1))
        }
    }

    /// Calls `body` with the NUL-terminated name at `index`.
    func withName<Result>(at index: Int, _ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBufferPointer { try body($0.baseAddress! + starts[index]) }
    }
}
