/// The removals of one store's values through the handles that keep copies of them in memory (a
/// `HybridCache`, an HTTP cache), counted across every process that has the store open: a handle
/// that sees the count move by a removal not its own drops what it holds in memory before it
/// serves from it again (``RemovalWatch``), so a removal, a purge or an invalidation made in one
/// process is final in every other — an app and its extension sharing a cache directory, say.
///
/// A clear advances the store's ``StoreGeneration`` instead; this count is for the removals of
/// some values, after which the others stay on disk for every handle to read back.
///
/// The counter lives in a 16-byte file in the store's directory, ``fileName``: the magic
/// `STWRMV01`, then the count as a native-endian `UInt64`, mapped `MAP_SHARED`
/// (``SharedCounterFile``): a check costs one load from memory.
package final class StoreRemovals: Sendable {
    /// The name of the removals file in a store's directory.
    package static let fileName = ".stowage-removals"
    static let magic = Array("STWRMV01".utf8)

    private let file: SharedCounterFile

    /// Opens the removals file in `directory`, installing a fresh one when it is missing or
    /// damaged. Call with the store's open lock held.
    ///
    /// - Throws: ``StowageError`` when the file cannot be created or mapped.
    package init(directory: String) throws {
        file = try SharedCounterFile(
            path: directory + "/" + Self.fileName,
            magic: Self.magic,
            isReplaced: { _ in false },
            what: "the store's removals file"
        )
    }

    /// The removals counted so far: one load from shared memory.
    @inline(__always)
    package var value: UInt64 { file.value }

    /// Counts one removal; returns the count before it.
    @discardableResult
    package func advance() -> UInt64 {
        file.add(1)
    }
}
