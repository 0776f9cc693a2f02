import Foundation
import StowageCore
import Synchronization

extension MemoryCache {
    /// A number that changes whenever the cache's contents change: an entry stored, replaced,
    /// removed, evicted or expired. Reads, which only make an entry the most recently used, do
    /// not change it, nor does storing an entry kept beside the contents
    /// (``setUncountedValue(_:forKey:cost:)``; what that evicts does).
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

extension MemoryCache {
    /// ``value(forKey:)`` without counting a hit or a miss in ``statistics``: for an entry a
    /// client keeps beside its own (the HTTP cache's prepared answers, which are not responses
    /// stored or served from the tier but ready-made answers to requests for them). The entry
    /// is made the most recently used as a counted read makes it.
    @inlinable
    package func uncountedValue(forKey key: Key) -> Value? {
        let lookup = storage.withLock { storage in
            storage.lookup(key) { self.configuration.clock.now().timeIntervalSinceReferenceDate }
        }
        switch lookup {
        case .hit(let value, _): return value
        case .miss: return nil
        case .expired(let removal):
            report(removal)
            return nil
        }
    }

    /// ``setValue(_:forKey:cost:timeToLive:)`` for an entry kept beside the contents, as
    /// ``uncountedValue(forKey:)`` reads it: no write counted in ``statistics``, and no change of
    /// ``contentVersion`` for the entry itself (what it replaces must be such an entry too). So
    /// keeping one does not make every other caller that checks the version look its records up
    /// again: the HTTP cache refreshes a prepared answer once a second per URL, and with 10,000
    /// URLs each of those refreshes did that to the next few requests for other URLs. `cost`
    /// counts towards ``Configuration/costLimit`` and evicts as any entry's does, and an eviction
    /// it causes moves the version as any other.
    @inlinable
    package func setUncountedValue(_ value: Value, forKey key: Key, cost: Int) {
        precondition(cost >= 0, "a MemoryCache entry's cost must be >= 0, not \(cost)")
        let insertion = storage.withLock {
            $0.insert(value, forKey: key, cost: cost, expiry: .infinity, movesVersion: false)
        }
        if let first = insertion.evictions.first {
            report(first)
            insertion.evictions.rest.forEach(report)
        }
    }
}
