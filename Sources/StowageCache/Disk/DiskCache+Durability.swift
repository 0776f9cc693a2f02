import Foundation

extension DiskCache {
    /// What a write has survived by the time it returns.
    ///
    /// | durability | a write returns after | lost in a process crash (kill -9) | lost in a power loss | a 1 KiB write |
    /// |---|---|---|---|---|
    /// | ``deferred(maximumDelay:)`` | it is staged in memory, visible to this cache's readers in this process | the last `maximumDelay` of writes | the same, plus what the OS had not written | ~1 µs; ~6 µs sustained |
    /// | ``processCrash`` (default) | it is in SQLite's WAL (and its file renamed into place) | nothing | the last writes before the loss | ~33 µs |
    /// | ``powerLoss`` | the WAL and the value's file are `fsync`ed (`F_FULLFSYNC` on Apple platforms) | nothing | nothing the device acknowledged | one `fsync` (ms on most disks) |
    ///
    /// Whatever is lost is lost whole: a key reads as its previous value or as a miss, never as
    /// torn or wrong bytes (each value is checked against its CRC-32C on read). With
    /// ``deferred(maximumDelay:)``, a key reads after a crash as the last value written before
    /// the last `maximumDelay`, or a newer one; as a miss only when every write of it falls in
    /// that window. Figures from one
    /// 2-core Linux machine with an SSD: `stowage-bench --filter disk-cache.set`. A deferred write
    /// that finds 4,096 writes or 16 MiB of inline values staged commits them itself, so a writer
    /// faster than the commits runs at their pace ("sustained") and memory stays bounded.
    public enum Durability: Sendable, Hashable {
        /// Writes are committed in the background, in one transaction every `maximumDelay` at
        /// most (at most 60 s; 10 ms is a good start): a write costs a dictionary insert
        /// until the staging is full.
        /// Other processes see a value once its batch commits; `DiskCache/flush()` commits now,
        /// and removals, trims and streaming writes commit what is staged before they run.
        case deferred(maximumDelay: Duration)
        /// Each write is in SQLite's write-ahead log before it returns (`synchronous = NORMAL`).
        case processCrash
        /// Each write is flushed to stable storage before it returns (`fsync` of the value's
        /// file, `synchronous = FULL`; on Apple platforms `F_FULLFSYNC` and SQLite's
        /// `fullfsync`, since Apple's `fsync` leaves the data in the drive's cache).
        case powerLoss
    }
}
