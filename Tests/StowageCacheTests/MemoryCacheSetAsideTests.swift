import Synchronization
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

    @Test(
        "setAside racing writes, removals, removeAll and memory pressure: the totals stay sound and within the limit"
    )
    func racesKeepTheLimit() async throws {
        let limit = 100_000
        let cache = try MemoryCache<Int, Int>(configuration: .init(costLimit: limit))
        let overruns = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var overruns = 0
                    for step in 0..<3_000 {
                        let key = worker * 10_000 + step
                        switch step % 50 {
                        case 0: cache.setAside(cost: (step * 37 + worker * 1_000) % (limit / 2 + 1))
                        case 17: cache.removeAll()
                        case 33: cache.handleMemoryPressure(.warning)
                        case 41: cache.removeValues { $0 % 7 == 0 }
                        default: cache.setValue(key, forKey: key, cost: 1 + key % 300)
                        }
                        // Between operations the entries fit in the limit in force.
                        if cache.storage.withLock({ $0.totalCost > $0.costLimit }) { overruns += 1 }
                    }
                    return overruns
                }
            }
            return await group.reduce(0, +)
        }
        #expect(overruns == 0)
        #expect(cache.storage.withLock { $0.integrityViolations() } == [])
        #expect(cache.totalCost <= limit - cache.costSetAside)
        // A set-aside that evicts changes the contents, so a caller keeping an answer worked out
        // from them (the proxy's prepared answers) sees the version move.
        cache.setAside(cost: 0)
        for key in 0..<1_000 { cache.setValue(key, forKey: key, cost: 100) }
        let version = cache.contentVersion
        cache.setAside(cost: limit / 2)
        #expect(cache.totalCost <= limit / 2)
        #expect(cache.contentVersion != version)
        #expect(cache.value(forKey: 0) == nil)
    }
}
