import Foundation
import NIOHTTP1
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

/// The proxy's kept-alive connections to an `http://` origin.
@Suite struct UpstreamPoolTests {
    @Test("requests one after another reuse one kept-alive upstream connection")
    func connectionIsReused() async throws {
        let origin = try ScriptedUpstream { received in
            let response = ok("v\(received.index)", "Cache-Control: no-store")
            // RFC 9110 §9.3.2: the head a GET would get, without its body.
            return .send(received.method == "HEAD" ? String(response.dropLast(2)) : response)
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            for index in 1...5 {
                let reply = try await h.get("/miss")
                #expect(reply.status == 200 && reply.text == "v\(index)", "\(reply.status) \(reply.text)")
            }
            let head = try await h.get("/miss", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty)
            let after = try await h.get("/miss")
            #expect(after.text == "v7", "the HEAD response's length was not taken for a body")
            #expect(origin.connectionCount == 1, "\(origin.connectionCount) connections for 7 requests")
        }
    }

    @Test(
        "RFC 9112 §9.3.1: a kept-alive connection the origin closes as a GET arrives: the GET goes again on a new one"
    )
    func closedKeptAliveConnectionIsRetried() async throws {
        let origin = try ScriptedUpstream { received in
            // The second request on the first connection finds it closed (the origin's idle timeout).
            if received.connection == 1, received.index == 2 { return .close }
            return .send(ok("v\(received.index)", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let first = try await h.get("/a")
            #expect(first.text == "v1")
            let second = try await h.get("/a")
            #expect(second.status == 200 && second.text == "v3", "\(second.status) \(second.text)")
            #expect(origin.connectionCount == 2)
        }
    }

    @Test("a response without framing is read to the close, complete, and its connection is not reused")
    func unframedResponseIsReadToClose() async throws {
        let origin = try ScriptedUpstream { received in
            if received.path == "/unframed" {
                return .sendAndClose("HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\n\r\nuntil the close")
            }
            return .send(ok("v\(received.index)", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            let first = try await h.get("/unframed")
            #expect(first.status == 200 && first.text == "until the close", "\(first.status) \(first.text)")
            let next = try await h.get("/other")
            #expect(next.status == 200 && next.text == "v2")
            #expect(origin.connectionCount == 2)
            let again = try await h.get("/unframed")
            #expect(
                again.text == "until the close" && again.cacheStatus.hasPrefix("stowage; hit"),
                "\(again.cacheStatus)"
            )
        }
    }
}
