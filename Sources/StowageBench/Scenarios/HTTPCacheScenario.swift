import Foundation
import HTTPTypes
import StowageCore
import StowageHTTPCache
import Synchronization

/// `http-cache.lookup-hit`: answering a request from a fresh stored response — the RFC 9111
/// decision (variant selection, freshness, age, request directives) plus reading the 1 KiB body
/// — across 1,000 URLs, 100,000 lookups per repetition; nanoseconds per lookup.
///
/// Baseline in the same run: `dictionary+mutex`, a `Mutex<[String: [UInt8]]>` lookup of the
/// same bytes by URL (the floor: no HTTP semantics at all). The two alternate which goes first.
/// `ok` means every Stowage lookup was a hit with the stored body.
///
/// Each URL is asked for 100 times a repetition, so most lookups find the answer given to the
/// same request within the same second (kept as a prepared answer in the memory level,
/// `HTTPCache.answerFromMemory`). The notes also give the full decision alone (the same entry
/// point keeping nothing, what the first request of each second costs).
struct HTTPCacheLookupScenario: Scenario {
    let name = "http-cache.lookup-hit"
    let urlCount = 1_000
    let lookups = 100_000

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        let directory = context.fixtures.appending(path: "http-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = HTTPCache.Configuration(kind: .private)
        configuration.memoryCapacity = .init(64_000_000)
        let cache = try await HTTPCache.open(directory: directory, configuration: configuration)
        let body = (0..<1_024).map { UInt8(truncatingIfNeeded: $0) }
        let requests = (0..<urlCount).map {
            HTTPRequest(method: .get, scheme: "http", authority: "bench.test", path: "/item/\($0)")
        }
        var dictionary: [String: [UInt8]] = [:]
        let fill = Self.freshOrigin(body: body)
        for request in requests {
            let served = try await cache.respond(to: request, fetch: fill)
            _ = try await served.body.collect(upTo: 4_096)
            dictionary[CacheKey(request).uri] = body
        }
        let map = Mutex(dictionary)
        let uris = requests.map { CacheKey($0).uri }
        let never: HTTPFetch = { _, _ in throw CancellationError() }
        var stowageTimes: [Double] = []
        var dictionaryTimes: [Double] = []
        var hits = 0
        let clock = ContinuousClock()
        for iteration in 0..<context.iterations {
            for contender in iteration.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                let start = clock.now
                if contender == 0 {
                    var count = 0
                    for i in 0..<lookups {
                        let served = try await cache.respond(to: requests[i % urlCount], fetch: never)
                        if served.outcome == .hit, served.body.bytesInMemory?.count == 1_024 { count += 1 }
                    }
                    hits = count
                    stowageTimes.append(seconds(clock.now - start))
                } else {
                    var count = 0
                    for i in 0..<lookups where map.withLock({ $0[uris[i % urlCount]] })?.count == 1_024 { count += 1 }
                    dictionaryTimes.append(seconds(clock.now - start))
                    precondition(count == lookups)
                }
            }
        }
        var decisions = 0
        let decisionStart = clock.now
        for i in 0..<lookups {
            let hit = cache.answerFromMemory(
                to: requests[i % urlCount],
                hash: 0,
                prepares: false,
                cacheRequest: { $0 },
                prepare: { (_: PreparationStep<NothingKept>) in nil }
            )
            if case .decided = hit { decisions += 1 }
        }
        let decisionNanoseconds = seconds(clock.now - decisionStart) * 1e9 / Double(lookups)
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: stowageTimes.sorted()[stowageTimes.count / 2] * 1e9 / Double(lookups),
            baselines: [
                "dictionary+mutex": dictionaryTimes.sorted()[dictionaryTimes.count / 2] * 1e9 / Double(lookups)
            ],
            ok: hits == lookups && decisions == lookups,
            notes:
                "\(lookups) GET lookups over \(urlCount) URLs with fresh stored 1 KiB responses (max-age=3600, ETag); "
                + "stowage = HTTPCache.respond (variant selection, freshness, age, Age/Cache-Status) + body; hits \(hits); "
                + "the full decision alone (answerFromMemory keeping nothing) \(Int(decisionNanoseconds)) ns/op"
        )
    }

    /// An origin that answers every request with `body`, fresh for an hour (`max-age=3600`,
    /// dated now, with an ETag): the responses both HTTP cache scenarios store.
    static func freshOrigin(body: [UInt8]) -> HTTPFetch {
        let date = HTTPDate.format(Int64(Date().timeIntervalSince1970))
        return { _, _ in
            var response = HTTPResponse(status: .ok)
            response.headerFields[.cacheControl] = "max-age=3600"
            response.headerFields[.date] = date
            response.headerFields[.contentType] = "application/octet-stream"
            response.headerFields[.eTag] = "\"v1\""
            return (response, HTTPBody(bytes: body))
        }
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// A form the decision-only run never keeps.
private final class NothingKept: PreparedForm {
    func answers(_ request: HTTPRequest) -> Bool { false }
    var byteCount: Int { 0 }
    static var usesResponse: Bool { false }
}
