import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache

/// `scale.http-cache.*`: an ``HTTPCache`` on disk holding n stored responses (1 KiB bodies,
/// fresh for an hour; the sizes of `STOWAGE_BENCH_SCALE_SIZES`, default 10^4, the smoke run),
/// beside the storage under it in the same run: a ``DiskCache`` holding the same n records and
/// n bodies, read and written two entries per response (`disk-cache-2-entries`, the floor of a
/// stored response: what the HTTP layer adds is the RFC 9111 decision, the record's encoding and
/// decoding, and keeping the body apart).
///
/// The memory level holds 1 MB (about 250 responses), so the lookups, each of a different URL in
/// a scattered order (``ScaleScenario/pick(_:_:offset:)``), are answered from disk.
/// - `store-<n>`: µs per response stored, for the last m = min(n, 10,000) of the n (the cache
///   already holding n − m);
/// - `hit-<n>`: µs per lookup of m stored URLs (`ok`: every one a hit with its 1 KiB body, and
///   every floor read found both entries).
///
/// The growth of each from 10^4 to the largest size is printed beside the floor's (a cost that
/// stays flat stays within 1.5× of its 10^4 figure, as the disk cache's get and set must).
struct ScaleHTTPCacheScenario: ScenarioFamily {
    let name = "scale.http-cache"

    static let body = [UInt8]((0..<1_024).map { UInt8(truncatingIfNeeded: $0 &* 131) })
    /// A record of the size the cache keeps for a response with these fields (about 330 bytes),
    /// for the floor's first entry.
    static let record = Data((0..<330).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    static func path(_ index: Int) -> String { "/assets/\(index).bin" }

    func results(_ context: BenchContext) async throws -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        for size in ScaleScenario.sizes() {
            let root = context.fixtures.appending(path: "scale-http-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            BenchContext.progress("scale.http-cache: \(size) responses")
            results += try await measure(size: size, root: root)
        }
        reportGrowth(results)
        return results
    }

    private struct Figures {
        var storeSeconds: Double
        var hitSeconds: Double
        var hits: Int
    }

    private func measure(size: Int, root: URL) async throws -> [ScenarioResult] {
        let operations = min(size, 10_000)
        let stowage = try await Self.stowage(
            size: size,
            operations: operations,
            directory: root.appending(path: "http")
        )
        let floor = try Self.floor(size: size, operations: operations, directory: root.appending(path: "disk"))
        let ok = stowage.hits == operations && floor.hits == operations
        let label = ScaleScenario.label(size)
        let load = ScaleScenario.loadAverage()
        let perOperation = 1e6 / Double(operations)
        return [
            ScenarioResult(
                name: "\(name).store-\(label)",
                unit: "µs/op",
                stowage: stowage.storeSeconds * perOperation,
                baselines: ["disk-cache-2-entries": floor.storeSeconds * perOperation],
                ok: ok,
                notes: "the last \(operations) of \(size) fresh 1 KiB responses stored through HTTPCache.respond "
                    + "(record and body on disk, durable against a process crash); floor: two DiskCache.setData "
                    + "(a 330 B record, the body) per response; \(load)"
            ),
            ScenarioResult(
                name: "\(name).hit-\(label)",
                unit: "µs/op",
                stowage: stowage.hitSeconds * perOperation,
                baselines: ["disk-cache-2-entries": floor.hitSeconds * perOperation],
                ok: ok,
                notes: "\(operations) lookups of distinct stored URLs of \(size), scattered, memory level 1 MB "
                    + "(hits from disk): HTTPCache.respond with a fetch that fails, body read; floor: two "
                    + "DiskCache.data(forKey:) per lookup; hits \(stowage.hits), floor \(floor.hits); \(load)"
            ),
        ]
    }

    private static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return Subprocess.seconds(clock.now - start)
    }

    private static func request(_ index: Int) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "bench.test", path: path(index))
    }

    private static func stowage(size: Int, operations: Int, directory: URL) async throws -> Figures {
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.memoryCapacity = .init(1_000_000)
        // Room for every response: the bench measures a full cache, not its eviction.
        configuration.diskCapacity = .init(Int64(size) * 4_096 + 64_000_000)
        let cache = try await HTTPCache.open(directory: directory, configuration: configuration)
        let fetch = HTTPCacheLookupScenario.freshOrigin(body: body)
        func store(_ index: Int) async throws {
            _ = try await cache.respond(to: request(index), fetch: fetch).body.collect(upTo: 4_096)
        }
        for index in 0..<(size - operations) { try await store(index) }
        let storeSeconds = try await seconds {
            for index in (size - operations)..<size { try await store(index) }
        }
        // The writes settle first (commits, the maintenance lane's work after them), as the
        // floor's do: the lookups measure reading a full cache, not competing with its filling.
        try await cache.disk?.flush()
        _ = try await cache.disk?.trim()
        let never: HTTPFetch = { _, _ in throw CancellationError() }
        BenchContext.progress("scale.http-cache: \(operations) lookups of \(size) stored responses")
        var hits = 0
        let hitSeconds = try await seconds {
            for j in 0..<operations {
                let served = try await cache.respond(to: request(ScaleScenario.pick(j, size)), fetch: never)
                if served.outcome == .hit, try await served.body.collect(upTo: 4_096).count == body.count {
                    hits += 1
                }
            }
        }
        try await cache.close()
        return Figures(storeSeconds: storeSeconds, hitSeconds: hitSeconds, hits: hits)
    }

    private static func floor(size: Int, operations: Int, directory: URL) throws -> Figures {
        var configuration = DiskCache.Configuration(name: "scale-http-floor")
        configuration.sizeLimit = nil  // every entry stays, as in the HTTP cache above
        let cache = try DiskCache(directory: directory, configuration: configuration)
        let bodyData = Data(body)
        func store(_ index: Int) throws {
            try cache.setData(record, forKey: "m https://bench.test" + path(index))
            try cache.setData(bodyData, forKey: "b \(index)")
        }
        for index in 0..<(size - operations) { try store(index) }
        let clock = ContinuousClock()
        var start = clock.now
        for index in (size - operations)..<size { try store(index) }
        let storeSeconds = Subprocess.seconds(clock.now - start)
        try cache.flush()
        _ = try cache.trim()
        var hits = 0
        start = clock.now
        for j in 0..<operations {
            let index = ScaleScenario.pick(j, size)
            if try cache.data(forKey: "m https://bench.test" + path(index)) != nil,
                try cache.data(forKey: "b \(index)")?.count == body.count
            {
                hits += 1
            }
        }
        let hitSeconds = Subprocess.seconds(clock.now - start)
        try cache.close()
        return Figures(storeSeconds: storeSeconds, hitSeconds: hitSeconds, hits: hits)
    }

    /// Prints each operation's cost at the largest size against its 10^4 figure, and the floor's.
    private func reportGrowth(_ results: [ScenarioResult]) {
        let sizes = ScaleScenario.sizes().sorted()
        guard let largest = sizes.last, sizes.contains(10_000), largest != 10_000 else { return }
        for operation in ["store", "hit"] {
            guard
                let big = results.first(where: { $0.name == "\(name).\(operation)-\(ScaleScenario.label(largest))" }),
                let small = results.first(where: { $0.name == "\(name).\(operation)-1e4" })
            else { continue }
            let floor = big.baselines["disk-cache-2-entries"].flatMap { bigFloor in
                small.baselines["disk-cache-2-entries"].map { bigFloor / $0 }
            }
            BenchContext.progress(
                "scale.http-cache growth: \(operation) at \(ScaleScenario.label(largest)) = "
                    + "\(BenchContext.format(big.stowage / small.stowage))× its 1e4 figure "
                    + "(floor \(floor.map(BenchContext.format) ?? "-")×)"
            )
        }
    }
}
