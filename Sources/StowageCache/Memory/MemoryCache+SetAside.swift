import Synchronization

extension MemoryCache {
    /// Sets aside `cost` of ``Configuration/costLimit`` for memory the cache's owner uses
    /// beside the entries, and evicts least recently used entries until they fit in the rest.
    ///
    /// The owner's working memory then counts against the same limit as the entries, as Redis
    /// counts its clients' buffers against `maxmemory`. The amount replaces the one set aside
    /// before; `0` gives the whole limit back to the entries. Without a cost limit nothing is set
    /// aside. Evictions are reported with ``EvictionReason/costLimit``.
    ///
    /// - Parameter cost: What to set aside, from `0` to ``Configuration/costLimit``.
    package func setAside(cost: Int) {
        precondition(cost >= 0, "a MemoryCache cannot set aside a cost of \(cost): it must be >= 0")
        guard let configured = configuration.costLimit else { return }
        precondition(
            cost <= configured,
            "a MemoryCache cannot set aside a cost of \(cost): its cost limit is \(configured)"
        )
        let removed = storage.withLock { storage in
            storage.costLimit = configured - cost
            return storage.trim(toCount: .max, cost: storage.costLimit, reason: .costLimit)
        }
        removed.forEach(report)
    }

    /// The cost set aside with ``setAside(cost:)``; `0` when none is.
    package var costSetAside: Int {
        guard let configured = configuration.costLimit else { return 0 }
        return configured - storage.withLock { $0.costLimit }
    }
}
