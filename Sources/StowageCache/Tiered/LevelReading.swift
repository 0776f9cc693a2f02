import Foundation

/// What differs between the kinds of value a ``CacheLevels`` reads through its levels: what a
/// memory entry holds of it, how bytes from disk or the shared level become it, what memory keeps
/// of it, and how a shared copy is written to disk.
///
/// The sequence itself (memory, disk, the shared level, the confirmation of a disk copy that may
/// have missed an invalidation, and keeping what was found in the levels above, unless a change
/// overtook the read) is ``CacheLevels/read(_:through:)``'s alone: a ``HybridCache`` reads its
/// values through one reading, the HTTP cache its variant records and its bodies through two.
package protocol LevelReading<Entry>: Sendable {
    /// What the levels' memory holds: their `Value`.
    associatedtype Entry: Sendable
    /// What a read returns.
    associatedtype Found: Sendable

    /// What the memory entry of the key gives; `nil` when it holds something else.
    func found(inMemory entry: Entry) -> Found?

    /// Whether the levels below memory can hold the key; `false` for a value kept in memory only,
    /// whose memory miss is a miss. Default `true`.
    var readsBelowMemory: Bool { get }

    /// Disk values up to this many bytes are read whole (then decoded and kept in memory); a
    /// larger one is opened as a file and read as ``streamed(_:)`` gives it. Default `Int64.max`.
    var wholeReadLimit: Int64 { get }

    /// Whether a disk copy stored before the shared level's ``InvalidationHorizon`` is confirmed
    /// against the shared level before use. Default `true`; `false` only for copies whose key is
    /// never given another value (the HTTP cache's bodies: a new body gets a new key), which no
    /// invalidation can make stale.
    var confirmsDiskCopies: Bool { get }

    /// Bytes read from disk or the shared level, as read and as memory keeps them.
    ///
    /// - Throws: When the bytes are not a value of this kind (damaged, another format); the disk
    ///   copy is then removed, and a shared one read as a miss.
    func decode(_ data: Data, forKey key: String) throws -> (found: Found, entry: Entry)

    /// What memory charges for `entry`, decoded from `byteCount` bytes; `nil` when memory does not
    /// keep it (a body over the memory level's entry limit).
    ///
    /// - Throws: When the cost is refused; a read from disk throws it, a shared fill logs it.
    func memoryCost(of entry: Entry, byteCount: Int, forKey key: String) throws -> Int?

    /// A disk value over ``wholeReadLimit``, as read from the open file. Default `nil` (a miss).
    func streamed(_ reader: DiskCache.FileReader) -> Found?

    /// How long the local copies of a shared entry live; `nil` for the levels' defaults.
    func localLifetime(of entry: SharedCacheEntry) -> Duration?

    /// Writes the bytes of a shared entry to disk (inside ``CacheLevels/write(_:forKey:cost:timeToLive:keepsInMemory:fillBegunAt:toDisk:)``,
    /// which orders it with the key's other changes).
    func writeToDisk(_ data: Data, forKey key: String, timeToLive: Duration?) async throws
}

extension LevelReading {
    package var readsBelowMemory: Bool { true }
    package var wholeReadLimit: Int64 { .max }
    package var confirmsDiskCopies: Bool { true }
    package func streamed(_ reader: DiskCache.FileReader) -> Found? { nil }
}
