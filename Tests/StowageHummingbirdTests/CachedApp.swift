import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StowageCore
import StowageHTTPCache
import StowageHummingbird
import StowageTestSupport
import Synchronization
import Testing

/// Counts a handler's calls, so a test can tell a hit (no call) from a miss.
final class CallCounter: Sendable {
    private let count = Mutex(0)

    /// Counts one call and returns how many there have been.
    @discardableResult
    func increment() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }

    var value: Int { count.withLock { $0 } }
}

/// `Surrogate-Key`, the field the tests tag responses with.
let surrogateKey = HTTPField.Name("Surrogate-Key")!

/// A clock that stands still at the moment it is made: a response's `max-age` never runs out
/// during a test on it, however slowly a loaded machine runs the test.
func standingClock() -> CacheClock {
    let start = Date()
    return CacheClock { start }
}

/// A shared cache in `directory` that reads tags from `Surrogate-Key`, on `clock` (by default
/// one that stands still: most tests here are not about a stored response's age); its waits
/// (collapsed requests' timeouts) on `waitClock` when one is given.
func makeSharedCache(
    in directory: URL,
    clock: CacheClock = standingClock(),
    waitClock: (any Clock<Duration>)? = nil
) throws -> HTTPCache {
    var configuration = HTTPCache.Configuration(kind: .shared, name: "stowage")
    configuration.tagFields = [surrogateKey]
    configuration.clock = clock
    if let waitClock { configuration.waitClock = waitClock }
    return try HTTPCache(directory: directory, configuration: configuration)
}

/// Runs `body` with a test client of an application whose router caches through a fresh shared
/// cache (``makeSharedCache(in:clock:waitClock:)``, on `clock`) in a temporary directory named
/// after the test, with the routes `routes` adds, and with that cache; the cache is closed
/// afterwards, also when `body` throws. The cache waits on `waitClock` when one is given.
func withCachedApp(
    _ name: String = #function,
    configuration: ServerResponseCache.Configuration = .init(),
    setup: TestingSetup = .router,
    clock: CacheClock = standingClock(),
    waitClock: (any Clock<Duration>)? = nil,
    routes: (Router<BasicRequestContext>) -> Void,
    _ body: @Sendable (any TestClientProtocol, HTTPCache) async throws -> Void
) async throws {
    try await withTemporaryDirectory(name) { root in
        let cache = try makeSharedCache(in: root, clock: clock, waitClock: waitClock)
        let outcome: Result<Void, any Error>
        do {
            let router = Router()
            router.add(middleware: try ResponseCacheMiddleware(cache: cache, configuration: configuration))
            routes(router)
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await app.test(setup) { client in try await body(client, cache) }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try await cache.close()
        try outcome.get()
    }
}

/// ``withCachedApp(_:configuration:setup:clock:waitClock:routes:_:)`` on a live server on
/// 127.0.0.1, with a ``LiveClient`` that waits as long as a loaded machine needs.
func withLiveCachedApp(
    _ name: String = #function,
    configuration: ServerResponseCache.Configuration = .init(),
    clock: CacheClock = standingClock(),
    waitClock: (any Clock<Duration>)? = nil,
    routes: (Router<BasicRequestContext>) -> Void,
    _ body: @Sendable (LiveClient, HTTPCache) async throws -> Void
) async throws {
    try await withCachedApp(
        name,
        configuration: configuration,
        setup: .live,
        clock: clock,
        waitClock: waitClock,
        routes: routes
    ) { client, cache in
        let port = try #require(client.port)
        try await LiveClient.withClient(port: port) { live in try await body(live, cache) }
    }
}

extension ByteBuffer {
    /// The buffer's bytes as UTF-8 text.
    var text: String { String(buffer: self) }
}
