import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

/// The HTTP cache throws `StowageError` only, with the code that names what was wrong: a bad
/// configuration value, a bad call argument, an offline miss, a body over a limit, a damaged
/// marker file.
@Suite struct HTTPCacheErrorCodeTests {
    @Test(
        "each out-of-range configuration value is invalidConfiguration, and the message names the setting",
        arguments: [
            "collapseTimeout", "minimumUses", "defaultLifetimes", "maximumBodySize", "heuristicFraction",
            "staleIfErrorGrace", "maximumHeuristicLifetime", "staleWhileUpdatingGrace", "streamingThreshold",
        ]
    )
    func badConfigurationValue(setting: String) throws {
        var configuration = HTTPCache.Configuration(kind: .private)
        switch setting {
        case "collapseTimeout": configuration.collapseTimeout = .zero
        case "minimumUses": configuration.minimumUses = 0
        case "defaultLifetimes": configuration.rules.defaultLifetimes = [199: .seconds(60)]
        case "maximumBodySize": configuration.maximumBodySize = ByteCount(0)
        case "heuristicFraction": configuration.rules.heuristicFraction = .nan
        case "maximumHeuristicLifetime": configuration.rules.maximumHeuristicLifetime = .seconds(3_000_000_000)
        case "staleWhileUpdatingGrace": configuration.rules.staleWhileUpdatingGrace = .milliseconds(-1)
        case "streamingThreshold": configuration.streamingThreshold = 0
        default: configuration.rules.staleIfErrorGrace = .seconds(-1)
        }
        let error = try #require(throws: StowageError.self) {
            _ = try HTTPCache(directory: nil, configuration: configuration)
        }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains(setting), "\(error)")
        #expect(error.description.hasPrefix("invalid configuration: "))
    }

    @Test("a relative URL given to invalidate(url:) is invalidArgument, not a configuration error")
    func purgeRelativeURL() async throws {
        try await withTemporaryDirectory { root in
            let cache = try makeCache(root, clock: ManualClock(startingAt: t0))
            let error = try await #require(throws: StowageError.self) { try await cache.invalidate(url: "/relative") }
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("absolute URL"))
        }
    }

    @Test("an offline miss matches `catch StowageError.Code.notCached`")
    func notCachedMatchesAsPattern() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock)
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=60")], clock: clock) }
            var caught: StowageError.Code?
            do {
                _ = try await cache.respond(to: request(), policy: .returnCacheDataDontLoad, fetch: origin.fetch)
            } catch StowageError.Code.tooLarge {
                caught = .tooLarge
            } catch StowageError.Code.notCached {
                caught = .notCached
            }
            #expect(caught == .notCached)
            #expect(origin.count == 0)
        }
    }

    @Test("collecting a body past its limit is tooLarge, in memory and streamed")
    func bodyOverLimit() async throws {
        let bytes = Array(repeating: UInt8(ascii: "b"), count: 100)
        let streamed = HTTPBody(
            AsyncStream { continuation in
                continuation.yield(Array(bytes[..<60]))
                continuation.yield(Array(bytes[60...]))
                continuation.finish()
            }
        )
        for body in [HTTPBody(bytes: bytes), streamed] {
            let error = try await #require(throws: StowageError.self) { _ = try await body.collect(upTo: 99) }
            #expect(error.code == .tooLarge)
            #expect(error.message.contains("99 bytes"))
        }
        #expect(try await HTTPBody(bytes: bytes).collect(upTo: 100) == bytes)
    }

    @Test("a layout marker that is not a version number is corrupt, and the error names the file")
    func damagedLayoutMarker() throws {
        try withTemporaryDirectory { root in
            let directory = root.appending(path: "http")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let marker = directory.appending(path: HTTPCache.layoutFileName)
            try Data("not a version\n".utf8).write(to: marker)
            let error = try #require(throws: StowageError.self) {
                _ = try makeCache(root, clock: ManualClock(startingAt: t0))
            }
            #expect(error.code == .corrupt)
            #expect(error.path == marker.path)
        }
    }
}
