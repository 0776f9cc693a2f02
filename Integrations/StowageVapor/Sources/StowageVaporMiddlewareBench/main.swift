import Dispatch
import Foundation
import StowageHTTPCache
import StowageVapor
import Vapor

// The Vapor application Benchmarks/middleware-load.sh loads (FRAMEWORKS=vapor): one Vapor server
// on 127.0.0.1 (port 0: the kernel picks), with the same catalog route twice,
// `/uncached/catalog` bare and `/cached/catalog` behind StowageVapor's ResponseCacheMiddleware.
// Prints `listening PORT` once it accepts, and stops on SIGTERM or SIGINT.
//
// The handler answers what StowageMiddlewareBench's (the Hummingbird row's) does, byte for
// byte: 100 records encoded with JSONEncoder (5,532 bytes, keys sorted), marked
// `public, max-age=3600`. Logging is at `notice`, the level Vapor gives production, so the
// route logger's per-request `info` line is not written.

/// One row of the catalog the route returns.
struct CatalogItem: Codable, Sendable {
    var id: Int
    var name: String
    var price: Double
    var inStock: Bool
}

/// The route's work: 100 records encoded as JSON.
@Sendable func catalogResponse(_ request: Request) throws -> Response {
    let items = (1...100).map {
        CatalogItem(id: $0, name: "item-\($0)", price: Double($0) * 1.25, inStock: $0 % 3 != 0)
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys  // the same bytes each time, as a cache key's body should be
    let json = try encoder.encode(items)
    return Response(
        status: .ok,
        headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=3600"],
        body: Response.Body(data: json)
    )
}

/// Yields when the process gets SIGTERM or SIGINT, which no longer end it at once.
func terminationSignals() -> (AsyncStream<Int32>, [any DispatchSourceSignal]) {
    let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
    let sources = [SIGTERM, SIGINT].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { continuation.yield(number) }
        source.resume()
        return source
    }
    return (signals, sources)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .notice
    return handler
}

/// Serves until SIGTERM or SIGINT, then closes the cache and removes its directory.
func serve() async throws {
    let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-vapor-middleware-bench-\(getpid())")
    let cache = try HTTPCache(
        directory: directory,
        configuration: HTTPCache.Configuration(kind: .shared, name: "bench")
    )

    let (signals, signalSources) = terminationSignals()
    let app = try await Application.make(.production)
    app.logger.logLevel = .notice
    app.get("uncached", "catalog", use: catalogResponse)
    app.grouped(try ResponseCacheMiddleware(cache: cache)).get("cached", "catalog", use: catalogResponse)

    try await app.server.start(address: .hostname("127.0.0.1", port: 0))
    FileHandle.standardOutput.write(Data("listening \(app.http.server.shared.localAddress?.port ?? 0)\n".utf8))
    for await _ in signals { break }
    await app.server.shutdown()
    try await app.asyncShutdown()
    try await cache.close()
    try? FileManager.default.removeItem(at: directory)
    for source in signalSources { source.cancel() }
}

try await serve()
