import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StowageHTTPCache
import StowageHummingbird

// The application Benchmarks/middleware-load.sh loads: one Hummingbird server on 127.0.0.1
// (port 0: the kernel picks), with the same catalog route twice, `/uncached/catalog` bare and
// `/cached/catalog` behind ResponseCacheMiddleware. Prints `listening PORT` once it accepts.
//
// The handler does what a small JSON API does per request: builds 100 records and encodes
// them with JSONEncoder (5,532 bytes, keys sorted), marked `public, max-age=3600`.

/// One row of the catalog the route returns.
struct CatalogItem: Codable, Sendable {
    var id: Int
    var name: String
    var price: Double
    var inStock: Bool
}

/// The route's work: 100 records encoded as JSON.
func catalogResponse() throws -> Response {
    let items = (1...100).map {
        CatalogItem(id: $0, name: "item-\($0)", price: Double($0) * 1.25, inStock: $0 % 3 != 0)
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys  // the same bytes each time, as a cache key's body should be
    let json = try encoder.encode(items)
    return Response(
        status: .ok,
        headers: [.contentType: "application/json", .cacheControl: "public, max-age=3600"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: json))
    )
}

let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-middleware-bench-\(getpid())")
let cache = try HTTPCache(directory: directory, configuration: HTTPCache.Configuration(kind: .shared, name: "bench"))

let router = Router()
router.group("uncached").get("catalog") { _, _ in try catalogResponse() }
router.group("cached").add(middleware: try ResponseCacheMiddleware(cache: cache)).get("catalog") { _, _ in
    try catalogResponse()
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: 0)),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening \(channel.localAddress?.port ?? 0)\n".utf8))
    }
)
try await app.runService()
try cache.close()
try? FileManager.default.removeItem(at: directory)
