import StowageCookies
import StowageHTTPCache
import StowageHTTPClient
import StowageHTTPTestSupport
import StowageTestSupport

/// Runs `body` with an origin on 127.0.0.1 answering with `script`, a private cache in a temporary
/// directory and a client over it (with `cookies` when given); stops both whatever `body` does.
func withCachingClient(
    configure: (inout HTTPCache.Configuration) -> Void = { _ in },
    cookies: CookieStore? = nil,
    script: @escaping TestOriginServer.Script,
    _ body: (CachingHTTPClient, TestOriginServer) async throws -> Void
) async throws {
    let scratch = try TemporaryDirectory()
    defer { withExtendedLifetime(scratch) {} }
    let origin = try await TestOriginServer.start(script)
    var configuration = HTTPCache.Configuration(kind: .private)
    configure(&configuration)
    let cache = try await HTTPCache.open(directory: scratch.url, configuration: configuration)
    // Generous: the suites run in parallel on small machines, and no test here is about timing.
    let client = CachingHTTPClient(cache: cache, cookies: cookies, timeout: .seconds(60))
    do {
        try await body(client, origin)
    } catch {
        try await client.shutdown()
        await origin.stop()
        throw error
    }
    try await client.shutdown()
    await origin.stop()
}
