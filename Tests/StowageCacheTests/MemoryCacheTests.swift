import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

@Suite struct MemoryCacheTests {
    // MARK: - Recency and limits

    @Test("a read makes an entry the most recently used, so the count limit evicts another")
    func lruOrderFollowsAccess() throws {
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(countLimit: 3, log: evictions)
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "b")
        cache.setValue(3, forKey: "c")

        // When "a" is read, "b" becomes the least recently used.
        #expect(cache.value(forKey: "a") == 1)
        cache.setValue(4, forKey: "d")

        #expect(cache.value(forKey: "b") == nil)
        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.value(forKey: "c") == 3)
        #expect(cache.value(forKey: "d") == 4)
        #expect(evictions.entries == [.init("b", 2, .countLimit)])
        expectSound(cache)
    }

    @Test("removeValues(where:) removes exactly the matching keys, reports them, and keeps the list sound")
    func removeValuesWhere() throws {
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(countLimit: 100, log: evictions)
        for index in 0..<20 { cache.setValue(index, forKey: (index.isMultiple(of: 3) ? "ban/" : "keep/") + "\(index)") }
        _ = cache.value(forKey: "ban/9")  // moved to the head: removal must unlink head, middle and tail alike
        #expect(cache.removeValues { $0.hasPrefix("ban/") } == 7)
        #expect(cache.count == 13)
        for index in 0..<20 {
            let key = (index.isMultiple(of: 3) ? "ban/" : "keep/") + "\(index)"
            #expect(cache.value(forKey: key) == (index.isMultiple(of: 3) ? nil : index))
        }
        #expect(Set(evictions.entries.map(\.key)) == Set((0..<20).filter { $0.isMultiple(of: 3) }.map { "ban/\($0)" }))
        #expect(evictions.entries.allSatisfy { $0.reason == .explicit })
        #expect(cache.removeValues { _ in false } == 0)
        expectSound(cache)
    }

    @Test("the count limit keeps the most recent entries")
    func countLimit() throws {
        let evictions = EvictionLog<Int, Int>()
        let cache = try makeCache(countLimit: 5, log: evictions)
        for key in 0..<12 { cache.setValue(key * 10, forKey: key) }

        #expect(cache.count == 5)
        for key in 0..<7 { #expect(cache.value(forKey: key) == nil) }
        for key in 7..<12 { #expect(cache.value(forKey: key) == key * 10) }
        #expect(evictions.entries.map(\.key) == Array(0..<7))
        #expect(evictions.entries.allSatisfy { $0.reason == .countLimit })
        #expect(cache.statistics.evictions == 7)
        expectSound(cache)
    }

    @Test("the cost limit evicts least recently used entries until the total is under it")
    func costLimit() throws {
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(costLimit: 10, log: evictions)
        cache.setValue(1, forKey: "a", cost: 4)
        cache.setValue(2, forKey: "b", cost: 4)
        #expect(cache.totalCost == 8)

        cache.setValue(3, forKey: "c", cost: 5)  // 13 > 10: "a" goes, 9 remain

        #expect(cache.totalCost == 9)
        #expect(cache.count == 2)
        #expect(evictions.entries == [.init("a", 1, .costLimit)])

        // A value costlier than the whole limit pushes everything out, itself included.
        cache.setValue(4, forKey: "huge", cost: 11)
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(evictions.entries.map(\.key) == ["a", "b", "c", "huge"])
        expectSound(cache)
    }

    @Test("replacing a value updates its cost and recency and is not reported as an eviction")
    func replacement() throws {
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(countLimit: 2, log: evictions)
        cache.setValue(1, forKey: "a", cost: 5)
        cache.setValue(2, forKey: "b", cost: 1)
        cache.setValue(10, forKey: "a", cost: 2)  // "a" is now the most recent

        #expect(cache.totalCost == 3)
        #expect(evictions.entries.isEmpty)
        cache.setValue(3, forKey: "c")
        #expect(evictions.entries == [.init("b", 2, .countLimit)])
        #expect(cache.value(forKey: "a") == 10)
        #expect(cache.statistics.writes == 4)
        expectSound(cache)
    }

    @Test("the content version moves on every store, removal, eviction, expiry and clear, and never on a read")
    func contentVersion() throws {
        let clock = ManualClock()
        let cache: MemoryCache<String, Int> = try makeCache(countLimit: 2, clock: clock)
        var last = cache.contentVersion
        func expectMoved(_ what: String, _ moved: Bool = true) {
            let now = cache.contentVersion
            #expect((now != last) == moved, "\(what)")
            last = now
        }
        cache.setValue(1, forKey: "a")
        expectMoved("a store")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "missing")
        expectMoved("reads", false)
        cache.setValue(2, forKey: "a")
        expectMoved("a replacement")
        cache.setValue(3, forKey: "b", timeToLive: .seconds(1))
        cache.setValue(4, forKey: "c")  // evicts "a"
        expectMoved("stores and an eviction")
        _ = cache.removeValue(forKey: "missing")
        expectMoved("removing a missing key", false)
        clock.advance(by: .seconds(2))
        #expect(cache.value(forKey: "b") == nil)
        expectMoved("an expiry found by a read")
        _ = cache.removeValue(forKey: "c")
        expectMoved("a removal")
        cache.setValue(5, forKey: "d")
        expectMoved("a store")
        cache.removeAll()
        expectMoved("a clear")
    }

    @Test("an entry kept beside the contents does not move the content version; what it evicts does")
    func uncountedEntriesLeaveTheVersion() throws {
        let cache: MemoryCache<String, Int> = try makeCache(countLimit: 3)
        cache.setValue(1, forKey: "record")
        var last = cache.contentVersion
        cache.setUncountedValue(2, forKey: "kept", cost: 0)
        cache.setUncountedValue(3, forKey: "kept", cost: 0)
        #expect(cache.contentVersion == last, "storing and replacing a kept entry")
        #expect(cache.uncountedValue(forKey: "kept") == 3)
        cache.setValue(4, forKey: "other")
        #expect(cache.contentVersion != last, "a store")
        last = cache.contentVersion
        _ = cache.value(forKey: "other")
        _ = cache.value(forKey: "kept")
        cache.setUncountedValue(5, forKey: "second kept", cost: 0)  // evicts "record", the least recently used
        #expect(cache.value(forKey: "record") == nil)
        #expect(cache.contentVersion != last, "the eviction a kept entry caused")
        expectSound(cache)
    }

    // MARK: - Time-to-live

    @Test("a per-entry time-to-live expires on lookup, measured with the injected clock")
    func perEntryTimeToLive() throws {
        let clock = ManualClock()
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(clock: clock, log: evictions)
        cache.setValue(1, forKey: "short", timeToLive: .seconds(10))
        cache.setValue(2, forKey: "forever")

        clock.advance(by: .seconds(9.5))
        #expect(cache.value(forKey: "short") == 1)
        clock.advance(by: .seconds(0.5))
        #expect(cache.value(forKey: "short") == nil)
        #expect(cache.value(forKey: "forever") == 2)

        #expect(evictions.entries == [.init("short", 1, .expired)])
        #expect(cache.count == 1)
        #expect(cache.statistics.misses == 1)
        #expect(cache.statistics.evictions == 1)
        expectSound(cache)
    }

    @Test("the default time-to-live applies to values stored without one")
    func defaultTimeToLive() throws {
        let clock = ManualClock()
        let cache: MemoryCache<String, Int> = try makeCache(defaultTimeToLive: .seconds(5), clock: clock)
        cache.setValue(1, forKey: "default")
        cache.setValue(2, forKey: "longer", timeToLive: .seconds(100))

        clock.advance(by: .seconds(6))
        #expect(cache.value(forKey: "default") == nil)
        #expect(cache.value(forKey: "longer") == 2)
    }

    @Test("removeExpired removes every expired entry and nothing else")
    func removeExpired() throws {
        let clock = ManualClock()
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(clock: clock, log: evictions)
        for (index, key) in ["a", "b", "c"].enumerated() { cache.setValue(index, forKey: key, timeToLive: .seconds(1)) }
        cache.setValue(9, forKey: "kept", cost: 3)
        cache.setValue(8, forKey: "later", timeToLive: .seconds(60))

        clock.advance(by: .seconds(2))
        #expect(cache.removeExpired() == 3)

        #expect(cache.count == 2)
        #expect(cache.totalCost == 3)
        #expect(Set(evictions.entries.map(\.key)) == ["a", "b", "c"])
        #expect(evictions.entries.allSatisfy { $0.reason == .expired })
        expectSound(cache)
    }

    @Test("the clock is read only for values that have a time-to-live")
    func clockReadOnlyWhenNeeded() throws {
        let clock = ManualClock()
        let cache: MemoryCache<String, Int> = try makeCache(clock: clock)
        cache.setValue(1, forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "missing")
        #expect(clock.reads == 0)

        cache.setValue(2, forKey: "b", timeToLive: .seconds(10))
        _ = cache.value(forKey: "b")
        #expect(clock.reads == 2)
    }

    // MARK: - Eviction callback

    @Test("the eviction callback runs outside the lock and may use the cache")
    func callbackMayReenter() throws {
        let holder = Mutex<MemoryCache<Int, Int>?>(nil)
        let observed = Mutex<[String]>([])
        var configuration = MemoryCache<Int, Int>.Configuration(countLimit: 2)
        configuration.memoryPressureSource = nil
        configuration.onEviction = { key, value, reason in
            guard let cache = holder.withLock({ $0 }) else { return }
            // Each of these takes the cache's lock: a callback under the lock would deadlock.
            let count = cache.count
            let readBack = cache.value(forKey: key)
            if key < 1_000 { cache.setValue(value, forKey: 1_000 + key) }
            observed.withLock { $0.append("\(key):\(reason):\(count):\(String(describing: readBack))") }
        }
        let cache = try MemoryCache(configuration: configuration)
        holder.withLock { $0 = cache }

        cache.setValue(0, forKey: 0)
        cache.setValue(1, forKey: 1)
        cache.setValue(2, forKey: 2)  // evicts 0, whose callback's write evicts 1, and so on

        let log = observed.withLock { $0 }
        #expect(log.contains("0:countLimit:2:nil"))
        #expect(log.count == 4)  // 0, 1 and 2 each wrote once; 1000's callback did not
        #expect(cache.count == 2)
        holder.withLock { $0 = nil }
        expectSound(cache)
    }

    @Test("explicit removals are reported with reason explicit but not counted as evictions")
    func explicitRemovals() throws {
        let evictions = EvictionLog<String, Int>()
        let cache = try makeCache(log: evictions)
        cache.setValue(1, forKey: "a", cost: 2)
        cache.setValue(2, forKey: "b", cost: 3)

        #expect(cache.removeValue(forKey: "a") == 1)
        #expect(cache.removeValue(forKey: "a") == nil)
        #expect(cache.totalCost == 3)
        cache["b"] = nil
        cache["c"] = 3

        #expect(evictions.entries == [.init("a", 1, .explicit), .init("b", 2, .explicit)])
        #expect(cache["c"] == 3)
        #expect(cache.statistics.evictions == 0)
        expectSound(cache)
    }

    // MARK: - Trimming and removing all

    @Test("trim(toCount:) and trim(toCost:) keep the most recently used entries")
    func trims() throws {
        let evictions = EvictionLog<Int, Int>()
        let cache = try makeCache(log: evictions)
        for key in 0..<10 { cache.setValue(key, forKey: key, cost: 1) }
        _ = cache.value(forKey: 0)  // 0 becomes the most recent

        cache.trim(toCount: 6)
        #expect(cache.count == 6)
        #expect(evictions.entries.map(\.key) == [1, 2, 3, 4])
        #expect(cache.value(forKey: 0) == 0)

        cache.trim(toCost: 2)
        #expect(cache.totalCost == 2)
        #expect(cache.value(forKey: 0) == 0)
        #expect(cache.value(forKey: 9) == 9)
        #expect(evictions.entries.allSatisfy { $0.reason == .explicit })

        cache.trim(toCount: 0)
        #expect(cache.count == 0)
        expectSound(cache)
    }

    @Test("removeAll empties the cache, reports every entry and leaves it usable")
    func removeAll() throws {
        let evictions = EvictionLog<Int, Int>()
        let cache = try makeCache(countLimit: 100, log: evictions)
        for key in 0..<50 { cache.setValue(key, forKey: key, cost: key) }

        cache.removeAll()

        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(evictions.entries.count == 50)
        #expect(evictions.entries.first?.key == 0)  // least recently used first
        #expect(evictions.entries.allSatisfy { $0.reason == .explicit })
        cache.setValue(7, forKey: 7)
        #expect(cache.value(forKey: 7) == 7)
        expectSound(cache)
    }

    // MARK: - Memory pressure

    @Test("a memory-pressure warning halves count and cost; critical removes everything")
    func memoryPressure() throws {
        let evictions = EvictionLog<Int, Int>()
        let cache = try makeCache(log: evictions)
        for key in 0..<10 { cache.setValue(key, forKey: key, cost: 2) }

        cache.handleMemoryPressure(.warning)
        #expect(cache.count == 5)
        #expect(cache.totalCost == 10)
        #expect(evictions.entries.map(\.key) == [0, 1, 2, 3, 4])
        #expect(evictions.entries.allSatisfy { $0.reason == .memoryPressure })

        cache.handleMemoryPressure(.critical)
        #expect(cache.count == 0)
        #expect(cache.statistics.evictions == 10)
        expectSound(cache)
    }

    @Test(
        "each memory-pressure action does what it says",
        arguments: [
            (MemoryPressureAction.ignore, 10),
            (.halve, 5),
            (.empty, 0),
        ]
    )
    func pressureActions(action: MemoryPressureAction, remaining: Int) throws {
        var configuration = MemoryCache<Int, Int>.Configuration()
        configuration.memoryPressureSource = nil
        configuration.memoryPressureResponse = MemoryPressureResponse(warning: action, critical: action)
        let cache = try MemoryCache(configuration: configuration)
        for key in 0..<10 { cache.setValue(key, forKey: key, cost: 1) }
        cache.handleMemoryPressure(.warning)
        #expect(cache.count == remaining)
        cache.handleMemoryPressure(.critical)
        #expect(cache.count == (action == .ignore ? 10 : action == .halve ? 2 : 0))
    }

    // MARK: - Costs near Int.max

    @Test("costs near Int.max neither overflow the running total nor trap; the newest entry stays")
    func hugeCostsDoNotOverflow() throws {
        let evictions = EvictionLog<String, Int>()
        let cache: MemoryCache<String, Int> = try makeCache(log: evictions)
        cache.setValue(1, forKey: "a", cost: .max)
        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.value(forKey: "a") == 1)  // a second hit adds Int.max bytes read again
        // Without a cost limit the total is bounded by Int.max all the same: "a" makes room.
        cache.setValue(2, forKey: "b", cost: .max)
        #expect(cache.value(forKey: "b") == 2)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.totalCost == .max)
        #expect(evictions.entries == [.init("a", 1, .costLimit)])
        cache.setValue(3, forKey: "c", cost: 1)
        #expect(cache.value(forKey: "c") == 3)
        #expect(cache.totalCost == 1)
        let statistics = cache.statistics
        #expect(statistics.bytesRead == .max)
        #expect(statistics.bytesWritten == .max)
        #expect(statistics.bytesEvicted == .max)
        expectSound(cache)
    }

    @Test("a cost limit just under Int.max with a huge entry evicts instead of overflowing")
    func hugeCostUnderHugeLimit() throws {
        let cache: MemoryCache<Int, Int> = try makeCache(costLimit: .max - 1)
        for key in 0..<4 { cache.setValue(key, forKey: key, cost: .max / 3) }
        #expect(cache.totalCost <= .max - 1)
        #expect(cache.value(forKey: 3) == 3)
        expectSound(cache)
    }

    // MARK: - Statistics and configuration

    @Test("statistics count hits, misses, writes and evictions")
    func statistics() throws {
        let cache: MemoryCache<String, Int> = try makeCache(countLimit: 1)
        cache.setValue(1, forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "a")
        _ = cache.value(forKey: "nope")
        cache.setValue(2, forKey: "b")  // evicts "a"

        let statistics = cache.statistics
        #expect(statistics.hits == 2)
        #expect(statistics.misses == 1)
        #expect(statistics.writes == 2)
        #expect(statistics.evictions == 1)
        #expect(abs(statistics.hitRate - 2.0 / 3.0) < 1e-9)
    }

    @Test(
        "a limit or time-to-live that is not positive is rejected",
        arguments: [
            (MemoryCache<Int, Int>.Configuration(countLimit: 0), "countLimit"),
            (MemoryCache<Int, Int>.Configuration(costLimit: -1), "costLimit"),
            (MemoryCache<Int, Int>.Configuration(defaultTimeToLive: .seconds(0)), "defaultTimeToLive"),
        ]
    )
    func invalidConfiguration(configuration: MemoryCache<Int, Int>.Configuration, field: String) {
        #expect {
            _ = try MemoryCache(configuration: configuration)
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .invalidConfiguration && error.message.contains(field)
        }
    }

    // MARK: - Storage

    @Test(
        "random sets, gets, removals and trims agree with a reference LRU, through growth and colliding hashes",
        arguments: [1, 8]
    )
    func agreesWithReferenceLRU(keysPerHash: Int) throws {
        // Given keys that share hash values (keysPerHash per value), so that probe runs are long and
        // every removal shifts entries back, and a count limit the keys exceed.
        let evictions = EvictionLog<CollidingKey, Int>()
        let cache = try makeCache(countLimit: 700, log: evictions)
        var reference = ReferenceLRU(limit: 700)
        var generator = SplitMix(seed: UInt64(keysPerHash))
        for step in 0..<40_000 {
            let key = CollidingKey(id: Int(generator.next() % 1_500), keysPerHash: keysPerHash)
            switch generator.next() % 10 {
            case 0..<4:
                // Costs start after a while, so the cost buffer appears in a grown cache.
                let cost = step > 5_000 ? Int(generator.next() % 3) : 0
                cache.setValue(step, forKey: key, cost: cost)
                reference.set(key, step, cost: cost)
            case 4..<8:
                #expect(cache.value(forKey: key) == reference.get(key))
            case 8:
                #expect(cache.removeValue(forKey: key) == reference.remove(key))
            default:
                if step.isMultiple(of: 97) {
                    cache.trim(toCount: 100)
                    reference.trim(toCount: 100)
                }
            }
            if step.isMultiple(of: 5_000) { expectSound(cache) }
        }

        // Then the same entries remain, in the same recency order, with the same total cost.
        #expect(cache.count == reference.order.count)
        #expect(cache.totalCost == reference.totalCost)
        var remaining: [CollidingKey] = []
        cache.storage.withLock { $0.forEach { key, _ in remaining.append(key) } }
        #expect(remaining == reference.order)
        #expect(evictions.entries.filter { $0.reason == .countLimit }.count == reference.evicted)
        expectSound(cache)
    }

    // MARK: - Concurrency

    @Test("many tasks of mixed operations leave the cache within its limits and consistent")
    func concurrentStress() async throws {
        let evicted = Atomic<Int>(0)
        var configuration = MemoryCache<Int, Int>.Configuration(countLimit: 200, costLimit: 2_000)
        configuration.memoryPressureSource = nil
        configuration.onEviction = { _, _, _ in evicted.add(1, ordering: .relaxed) }
        let cache = try MemoryCache(configuration: configuration)
        let tasks = 8
        let operations = 10_000

        await withTaskGroup(of: (sets: Int, gets: Int).self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var generator = SplitMix(seed: UInt64(task + 1))
                    var sets = 0
                    var gets = 0
                    for _ in 0..<operations {
                        let key = Int(generator.next() % 500)
                        switch generator.next() % 10 {
                        case 0..<5:
                            // The value is the cost, so the remaining costs can be summed afterwards.
                            let cost = Int(generator.next() % 20)
                            cache.setValue(cost, forKey: key, cost: cost)
                            sets += 1
                        case 5..<8:
                            _ = cache.value(forKey: key)
                            gets += 1
                        case 8:
                            cache.removeValue(forKey: key)
                        default:
                            if key == 0 { cache.trim(toCount: 50) } else { cache[key] = nil }
                        }
                    }
                    return (sets, gets)
                }
            }
            var sets = 0
            var gets = 0
            for await result in group {
                sets += result.sets
                gets += result.gets
            }
            let statistics = cache.statistics
            #expect(statistics.writes == sets)
            #expect(statistics.hits + statistics.misses == gets)
        }

        expectSound(cache)
        #expect(cache.count <= 200)
        #expect(cache.totalCost <= 2_000)
        var remainingCost = 0
        var remaining = 0
        for key in 0..<500 {
            if let cost = cache.value(forKey: key) {
                remainingCost += cost
                remaining += 1
            }
        }
        #expect(remaining == cache.count)
        #expect(remainingCost == cache.totalCost)
        #expect(evicted.load(ordering: .relaxed) >= cache.statistics.evictions)
    }
}

// MARK: - Support

/// A key whose hash is shared by `keysPerHash` consecutive ids.
private struct CollidingKey: Hashable, Sendable {
    var id: Int
    var keysPerHash: Int
    static func == (left: Self, right: Self) -> Bool { left.id == right.id }
    func hash(into hasher: inout Hasher) { hasher.combine(id / keysPerHash) }
}

/// Least-recently-used order kept the obvious way (O(n) per operation), to check the storage against.
private struct ReferenceLRU {
    let limit: Int
    /// Least recently used first.
    var order: [CollidingKey] = []
    var values: [CollidingKey: (value: Int, cost: Int)] = [:]
    var evicted = 0
    var totalCost: Int { values.values.reduce(0) { $0 + $1.cost } }

    init(limit: Int) { self.limit = limit }

    mutating func set(_ key: CollidingKey, _ value: Int, cost: Int) {
        order.removeAll { $0 == key }
        order.append(key)
        values[key] = (value, cost)
        while order.count > limit {
            values[order.removeFirst()] = nil
            evicted += 1
        }
    }

    mutating func get(_ key: CollidingKey) -> Int? {
        guard let entry = values[key] else { return nil }
        order.removeAll { $0 == key }
        order.append(key)
        return entry.value
    }

    mutating func remove(_ key: CollidingKey) -> Int? {
        guard let entry = values.removeValue(forKey: key) else { return nil }
        order.removeAll { $0 == key }
        return entry.value
    }

    mutating func trim(toCount count: Int) {
        while order.count > count { values[order.removeFirst()] = nil }
    }
}

/// Records what the eviction callback hears.
private final class EvictionLog<Key: Hashable & Sendable, Value: Hashable & Sendable>: Sendable {
    struct Entry: Hashable {
        var key: Key
        var value: Value
        var reason: EvictionReason
        init(_ key: Key, _ value: Value, _ reason: EvictionReason) {
            self.key = key
            self.value = value
            self.reason = reason
        }
    }
    private let log = Mutex<[Entry]>([])
    var entries: [Entry] { log.withLock { $0 } }
    var callback: @Sendable (Key, Value, EvictionReason) -> Void {
        { key, value, reason in self.log.withLock { $0.append(Entry(key, value, reason)) } }
    }
}

/// A small deterministic random number generator, so a failing stress run can be replayed.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func makeCache<Key: Hashable & Sendable, Value: Hashable & Sendable>(
    countLimit: Int? = nil,
    costLimit: Int? = nil,
    defaultTimeToLive: Duration? = nil,
    clock: ManualClock? = nil,
    log: EvictionLog<Key, Value>? = nil
) throws -> MemoryCache<Key, Value> {
    var configuration = MemoryCache<Key, Value>.Configuration(
        name: "test",
        countLimit: countLimit,
        costLimit: costLimit,
        defaultTimeToLive: defaultTimeToLive
    )
    configuration.memoryPressureSource = nil  // tests stay out of the process-wide source
    if let clock { configuration.clock = clock.cacheClock }
    configuration.onEviction = log?.callback
    return try MemoryCache(configuration: configuration)
}

/// Fails the test when the cache's index, list and totals disagree.
private func expectSound<Key, Value>(
    _ cache: MemoryCache<Key, Value>,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let violations = cache.storage.withLock { $0.integrityViolations() }
    #expect(violations.isEmpty, "\(violations)", sourceLocation: sourceLocation)
}
