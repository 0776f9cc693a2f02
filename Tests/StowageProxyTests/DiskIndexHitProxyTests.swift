import Foundation
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

@testable import StowageProxy

/// Hits read from the disk index on the event loop (`LoopHitResponder` with
/// `HTTPCache.answerFromMemory(…readsDiskIndex: true…)`): with a memory level too small to keep a
/// response, every hit is one, and what a client sees must be what the async path would send.
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

    @Test("a purge is final for hits read from the disk index: every kept-alive connection gets the refetch")
    func purgeReachesDiskIndexHits() async throws {
        try await ProxyHarness.run(
            configure: {
                $0.admin = .init(port: 0)
                $0.cache.memoryCapacity = ByteCount(20)
            },
            script: Self.script
        ) { h in
            let port = h.proxyPort
            let request = "GET /v/disk HTTP/1.1\r\nHost: proxy\r\n\r\n"
            let sockets = try await onOwnThread {
                try (0..<4).map { _ in try RawSocket(port: port, receiveTimeout: 60) }
            }
            let url = h.origin.baseURL + "/v/disk"
            for round in 0..<5 {
                let expected = try await h.get("/v/disk").text
                for socket in sockets {
                    let bodies = try await onOwnThread { () -> [String] in
                        socket.send(request + request)
                        return Self.read(socket, bodiless: [false, false]).map(\.text)
                    }
                    #expect(bodies == [expected, expected], "round \(round)")
                }
                #expect(try await h.admin(.POST, "/purge?url=\(url)").status == 200)
                let refetched = try await h.get("/v/disk").text
                #expect(refetched != expected, "round \(round): the purge forced a refetch")
                for (index, socket) in sockets.enumerated() {
                    let body = try await onOwnThread { () -> String in
                        socket.send(request)
                        return Self.read(socket, bodiless: [false]).first?.text ?? "(none)"
                    }
                    #expect(body == refetched, "round \(round), connection \(index)")
                }
            }
        }
    }
}
