import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import StowageHTTPTestSupport
import StowageTestSupport
import Testing

@testable import StowageProxy

/// Hits kept as bytes (`EncodedResponse`) are written past NIO's HTTP/1 encoder, so they must be
/// the bytes it would write; and with the encoder no longer told each request's method, the
/// proxy itself keeps bodies out of responses to HEAD.
@Suite struct EncodedResponseTests {
    /// What NIO's `HTTPResponseEncoder` writes for `head` and `body`.
    private static func encodedByNIO(_ head: HTTPResponseHead, body: ByteBuffer) throws -> ByteBuffer {
        let channel = EmbeddedChannel(handler: HTTPResponseEncoder())
        try channel.writeOutbound(HTTPServerResponsePart.head(head))
        try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(body)))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        var bytes = ByteBuffer()
        while let part = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(var buffer) = part else { continue }
            bytes.writeBuffer(&buffer)
        }
        _ = try channel.finish()
        return bytes
    }

    @Test(
        "a kept response is the bytes NIO's encoder writes for it, framed by its length",
        arguments: [
            HTTPResponseStatus.ok, .nonAuthoritativeInformation, .movedPermanently, .notFound, .gone,
            .custom(code: 299, reasonPhrase: "Whatever It Says"),
        ]
    )
    func sameBytesAsNIO(_ status: HTTPResponseStatus) throws {
        let body = ByteBuffer(string: String(repeating: "b", count: 100))
        for fields: HTTPHeaders in [
            ["Cache-Control": "max-age=60", "Age": "3", "X-Two": "a", "X-Two": "b"],
            ["Content-Length": "100", "ETag": "\"e\""],
            ["Transfer-Encoding": "chunked", "Date": "Thu, 26 Nov 2026 10:00:00 GMT"],
        ] {
            let head = EncodedResponse.framed(
                HTTPResponseHead(version: .http1_1, status: status, headers: fields),
                bodyLength: body.readableBytes
            )
            #expect(head.headers["content-length"] == ["100"])
            #expect(!head.headers.contains(name: "transfer-encoding"))
            let encoded = EncodedResponse(head: head, body: body)
            #expect(encoded.bytes == (try Self.encodedByNIO(head, body: body)), "\(status) \(fields)")
            #expect(encoded.body == body)
        }
    }

    @Test("a body over the inline limit is kept as its own buffer, not copied behind the head")
    func largeBodySeparate() throws {
        let body = ByteBuffer(repeating: 0x7A, count: EncodedResponse.inlineBodyLimit + 1)
        let head = EncodedResponse.framed(
            HTTPResponseHead(version: .http1_1, status: .ok),
            bodyLength: body.readableBytes
        )
        let encoded = EncodedResponse(head: head, body: body)
        #expect(encoded.separateBody == body)
        #expect(encoded.bytes.readableBytes == encoded.headLength)
        var whole = encoded.bytes
        var rest = body
        whole.writeBuffer(&rest)
        #expect(whole == (try Self.encodedByNIO(head, body: body)))
    }

    @Test("RFC 9110 §9.3.2: a HEAD answered without a length is followed by the next response, no chunk between")
    func headWithoutLengthThenNextResponse() async throws {
        // Both paths: `/kept` is cacheable (HEAD from the stored GET, on the event loop), `/passed`
        // is no-store (HEAD forwarded). The origin frames every GET by chunks, so no stored or
        // forwarded response states a length.
        let origin = try ScriptedUpstream { received in
            let cacheControl = received.path == "/kept" ? "max-age=60" : "no-store"
            let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: \(cacheControl)\r\n\r\n"
            return .send(received.method == "HEAD" ? head : head + "5\r\nhello\r\n0\r\n\r\n")
        }
        defer { origin.stop() }
        try await ProxyHarness.run(upstream: origin.baseURL, script: { _ in .init() }) { h in
            #expect(try await h.get("/kept").text == "hello")
            let port = h.proxyPort
            for path in ["/kept", "/passed"] {
                let transcript = try await onOwnThread { () -> String in
                    let socket = try RawSocket(port: port, receiveTimeout: 120)
                    socket.send(
                        "HEAD \(path) HTTP/1.1\r\nHost: proxy\r\n\r\n"
                            + "GET \(path) HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n"
                    )
                    return socket.readTextUntilClosed()
                }
                let parts = transcript.components(separatedBy: "\r\n\r\n")
                #expect(parts.count >= 2, "\(path): \(transcript)")
                #expect(parts[0].hasPrefix("HTTP/1.1 200"), "\(path): \(transcript)")
                // The byte after the HEAD response's head starts the GET's response.
                #expect(parts.count > 1 && parts[1].hasPrefix("HTTP/1.1 200"), "\(path): \(transcript)")
                #expect(transcript.hasSuffix("hello") || transcript.hasSuffix("0\r\n\r\n"), "\(path): \(transcript)")
            }
        }
    }
}
