import Foundation
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

@testable import StowageProxy

/// Hits read from the disk index on the event loop (`LoopHitResponder` with
/// `HTTPCache.answerFromMemory(…readsDiskIndex: true…)`): with a memory level too small to keep a
/// response, every hit is one, and what a client sees must be what the async path would send.
/// (`purgeReachesEveryConnection` runs with such a memory too: a purge is final for these hits.)
extension EncodedHitAttackTests {
    @Test(
        "with a memory too small to keep a response, hits come from the disk index, the same bytes at and around the inline bound",
        arguments: [0, 1, 1_000, 16_384, 16_385, 100_000]
    )
    func diskIndexHitBodies(count: Int) async throws {
        try await ProxyHarness.run(
            configure: { $0.cache.memoryCapacity = ByteCount(20) },
            script: Self.script
        ) { h in
            let expected = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            #expect(try await h.get("/bytes/\(count)").body == expected)
            let port = h.proxyPort
            let request = "GET /bytes/\(count) HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let responses = try await onOwnThread { () -> [Parsed] in
                let socket = try RawSocket(port: port, receiveTimeout: 60)
                socket.send(request + request + request)
                return Self.read(socket, bodiless: [false, false, false])
            }
            #expect(responses.count == 3)
            for response in responses {
                #expect(response.status == 200)
                #expect(response.body == expected)
                #expect(response.field("content-length") == String(count))
                #expect(response.field("cache-status")?.contains("hit") == true, "\(response)")
            }
            #expect(h.origin.requestCount == 1)
        }
    }
}
