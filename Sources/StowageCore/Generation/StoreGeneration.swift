/// The generation of one store: a counter that every handle of the store, in every process,
/// reads before it serves anything it remembers.
///
/// Clearing a store advances it; removing the store (a user wipe, a cleaner deleting its
/// directory) retires it. A handle that sees a generation other than the one it last saw drops
/// what it holds in memory (a ``GenerationWatch`` does the bookkeeping); a handle that sees its
/// store retired serves nothing more from it.
///
/// The counter lives in a 16-byte file in the store's directory, ``fileName``: the magic
/// `STWGEN01`, then the generation as a native-endian `UInt64` whose top bit (``retiredBit``)
/// marks retirement. The file is mapped `MAP_SHARED` (``SharedCounterFile``), so an advance in
/// one process is visible to every other at once and a check costs one load from memory — no
/// system call on the read path. (The same mechanism as the preferences log's shared header and
/// SQLite's `-shm` file.)
///
/// Retirement belongs to the file, not to the path: opening a store whose generation file is
/// retired, damaged or missing installs a fresh one (written aside and renamed in place), so a
/// store re-created at the same path starts a new life while handles of the removed one keep
/// seeing their file retired.
///
/// A process that truncates the file while another has it mapped makes the other's next check
/// fault (`SIGBUS`), as with any shared mapping; Stowage never truncates it.
package final class StoreGeneration: Sendable {

    /// The name of the generation file in a store's directory.
    package static let fileName = ".stowage-generation"
    /// Set in a retired store's generation.
    package static let retiredBit: UInt64 = 1 << 63
    static let magic = Array("STWGEN01".utf8)
    static let counterOffset = SharedCounterFile.counterOffset

    /// The generation file.
    package var path: String { file.path }
    private let file: SharedCounterFile

    /// Opens the generation file in `directory`, installing a fresh one when it is missing,
    /// damaged or retired.
    ///
    /// Call with the store's open lock held: two processes installing a file at once would each
    /// map their own.
    ///
    /// - Throws: ``StowageError`` when the file cannot be created or mapped (e.g. a directory
    ///   stands at its path).
    package init(directory: String) throws {
        file = try SharedCounterFile(
            path: directory + "/" + Self.fileName,
            magic: Self.magic,
            isReplaced: Self.isRetired,
            what: "the store's generation file"
        )
    }

    /// The current generation, retired bit included: one load from shared memory.
    @inline(__always)
    package var value: UInt64 { file.value }

    /// Whether the store was removed.
    package var isRetired: Bool { Self.isRetired(value) }

    /// Whether `generation` is the generation of a removed store.
    @inline(__always)
    package static func isRetired(_ generation: UInt64) -> Bool { generation & retiredBit != 0 }

    /// Tells every handle that the store was cleared: what they remember is from before.
    package func advance() {
        _ = file.add(1)
    }

    /// Tells every handle that the store is gone.
    package func retire() {
        file.setBits(Self.retiredBit)
    }
}
