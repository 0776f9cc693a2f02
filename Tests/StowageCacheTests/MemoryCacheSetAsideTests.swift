import Testing

@testable import StowageCache

/// `MemoryCache.setAside(cost:)`: an owner's working memory counted against the cache's cost
/// limit, as Redis counts its clients' buffers against `maxmemory`.
@Suite struct MemoryCacheSetAsideTests {
    private static func filled(costLimit: Int, entries: Int, cost: Int) throws -> MemoryCache<Int, Int> {
        let cache = try MemoryCache<Int, Int>(configuration: .init(costLimit: costLimit))
        for key in 0..<entries { cache.setValue(key, forKey: key, cost: cost) }
        return cache
    }

    @Test("setting cost aside evicts the least recently used entries until the rest fit, and writes stay within it")
    func evictsToFit() throws {
        let cache = try Self.filled(costLimit: 1_000, entries: 10, cost: 100)
        _ = cache.value(forKey: 0)  // 0 becomes the most recently used
        cache.setAside(cost: 350)
        #expect(cache.costSetAside == 350)
        #expect(cache.totalCost == 600)
        #expect(cache.value(forKey: 0) == 0)
        #expect(cache.value(forKey: 1) == nil, "the least recently used went first")
        #expect(cache.statistics.evictions == 4)
        for key in 10..<20 { cache.setValue(key, forKey: key, cost: 100) }
        #expect(cache.totalCost == 600)
    }

    @Test("a new amount replaces the old; zero gives the whole limit back")
    func replacesAndReturns() throws {
        let cache = try Self.filled(costLimit: 1_000, entries: 10, cost: 100)
        cache.setAside(cost: 500)
        cache.setAside(cost: 200)
        #expect(cache.costSetAside == 200)
        for key in 10..<20 { cache.setValue(key, forKey: key, cost: 100) }
        #expect(cache.totalCost == 800)
        cache.setAside(cost: 0)
        for key in 20..<30 { cache.setValue(key, forKey: key, cost: 100) }
        #expect(cache.totalCost == 1_000)
    }

    @Test("removeAll keeps what is set aside")
    func survivesRemoveAll() throws {
        let cache = try Self.filled(costLimit: 1_000, entries: 10, cost: 100)
        cache.setAside(cost: 500)
        cache.removeAll()
        #expect(cache.costSetAside == 500)
        for key in 0..<10 { cache.setValue(key, forKey: key, cost: 100) }
        #expect(cache.totalCost == 500)
    }

    @Test("setting aside the whole limit keeps nothing; without a cost limit nothing is set aside")
    func edges() throws {
        let cache = try Self.filled(costLimit: 1_000, entries: 10, cost: 100)
        cache.setAside(cost: 1_000)
        #expect(cache.count == 0)
        cache.setValue(1, forKey: 1, cost: 1)
        #expect(cache.count == 0, "a cost of 1 passes a limit of 0")
        cache.setValue(2, forKey: 2, cost: 0)
        #expect(cache.count == 1, "a cost of 0 fits")

        let unlimited = try MemoryCache<Int, Int>()
        unlimited.setAside(cost: 1_000_000)
        #expect(unlimited.costSetAside == 0)
        unlimited.setValue(1, forKey: 1, cost: 5_000_000)
        #expect(unlimited.count == 1)
    }
}
