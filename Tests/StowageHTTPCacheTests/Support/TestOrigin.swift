import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Synchronization

/// An origin in the test process: a script answers each request and every request is recorded,
/// so tests check what reached the origin. (The client and proxy suites use a real server.)
final class TestOrigin: Sendable {
    typealias Script = @Sendable (HTTPRequest, Int) throws -> (HTTPResponse, [UInt8])
    private let script: Mutex<Script>
    private let log = Mutex<[HTTPRequest]>([])

    init(_ script: @escaping Script) { self.script = Mutex(script) }

    func setScript(_ script: @escaping Script) { self.script.withLock { $0 = script } }

    var requests: [HTTPRequest] { log.withLock { $0 } }
    var count: Int { log.withLock { $0.count } }

    var fetch: HTTPFetch {
        { request, _ in
            let index = self.log.withLock { log in
                log.append(request)
                return log.count
            }
            let (response, body) = try self.script.withLock { $0 }(request, index)
            return (response, HTTPBody(bytes: body))
        }
    }

    /// The same, with the body as a stream of `chunk`-byte pieces (as a network delivers it).
    func streamingFetch(chunk: Int) -> HTTPFetch {
        let fetch = self.fetch
        return { request, body in
            let (response, whole) = try await fetch(request, body)
            let bytes = whole.bytesInMemory ?? []
            let chunks = stride(from: 0, to: bytes.count, by: chunk).map {
                Array(bytes[$0..<min($0 + chunk, bytes.count)])
            }
            return (response, HTTPBody(ChunkSequence(chunks: chunks), length: Int64(bytes.count)))
        }
    }
}

/// A fetch whose every answer is fresh for a minute on `clock` and streams `chunks` as its body,
/// declaring `length` (`HTTPBody.length`; the chunks may add up to more or less) and, when given,
/// the `Content-Length` field `contentLength`; and the origin counting the fetches.
func chunkedFetch(
    _ chunks: [[UInt8]],
    declaring length: Int64?,
    contentLength: String? = nil,
    clock: ManualClock
) -> (HTTPFetch, TestOrigin) {
    let origin = TestOrigin { _, _ in
        var pairs = [("Cache-Control", "max-age=60")]
        if let contentLength { pairs.append(("Content-Length", contentLength)) }
        return (response(200, pairs, date: clock.now), [])
    }
    let fetch: HTTPFetch = { request, body in
        let (response, _) = try await origin.fetch(request, body)
        return (response, HTTPBody(ChunkSequence(chunks: chunks), length: length))
    }
    return (fetch, origin)
}

struct ChunkSequence: AsyncSequence, Sendable {
    let chunks: [[UInt8]]
    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<[UInt8]>
        mutating func next() async throws -> [UInt8]? { remaining.popFirst() }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: chunks[...]) }
}

func ok(_ body: String, _ pairs: [(String, String)], clock: ManualClock) -> (HTTPResponse, [UInt8]) {
    (response(200, pairs, date: clock.now), Array(body.utf8))
}

func text(_ served: CachedResponse) async throws -> String {
    String(decoding: try await served.body.collect(upTo: 1 << 26), as: UTF8.self)
}

/// An HTTP cache in `root/http` on `clock`, as most tests want it.
func makeCache(
    _ root: URL,
    clock: ManualClock,
    kind: CacheKind = .private,
    configure: (inout HTTPCache.Configuration) -> Void = { _ in }
) throws -> HTTPCache {
    var configuration = HTTPCache.Configuration(kind: kind)
    configuration.clock = clock.cacheClock
    configure(&configuration)
    return try HTTPCache(directory: root.appending(path: "http"), configuration: configuration)
}
