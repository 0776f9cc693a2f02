import Synchronization

extension MemoryCache {
    /// A number that changes whenever the cache's contents change: an entry stored, replaced,
    /// removed, evicted or expired. Reads, which only make an entry the most recently used, do
    /// not change it.
    ///
    /// A caller that found something current at one version knows it is still current while the
    /// version is the same, without looking it up again: the caching proxy's hits kept as bytes
    /// check it on every request and look the records up only when it moved.
    package var contentVersion: UInt64 { contentChanges.current }
}

/// The counter behind ``MemoryCache/contentVersion``: advanced under the cache's lock by every
/// change to its contents, read without it.
@usableFromInline
final class MemoryCacheContentChanges: Sendable {
    @usableFromInline let count = Atomic<UInt64>(0)

    @usableFromInline init() {}

    @inlinable func advance() {
        count.wrappingAdd(1, ordering: .releasing)
    }

    @inlinable var current: UInt64 { count.load(ordering: .acquiring) }
}
