import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageHTTPCache
import Testing

@testable import StowageProxy

/// A hit kept as bytes (``EncodedAnswer``): matched field for field, and charged for what it
/// holds.
@Suite struct EncodedAnswerTests {
    private static func answer(
        _ uri: String,
        headers: HTTPHeaders = [:],
        body: Int,
        addedDateSecond: Int64? = nil
    ) -> EncodedAnswer {
        EncodedAnswer(
            request: HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: headers),
            head: HTTPResponseHead(version: .http1_1, status: .ok),
            body: ByteBuffer(repeating: 0x61, count: body),
            addedDateSecond: addedDateSecond
        )
    }

    @Test("an answer is for a request with the same method, target and fields, byte for byte")
    func matchesExactly() {
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p", "Accept": "x"])
        let answer = Self.answer("/a", headers: head.headers, body: 10)
        #expect(answer.answers(head))
        for other in [
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p", "Accept": "y"]),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["host": "p", "Accept": "x"]),
            HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/a", headers: head.headers),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a?", headers: head.headers),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p"]),
        ] {
            #expect(!answer.answers(other), "\(other)")
        }
    }

    @Test("an answer is charged the heap it holds: request fields, response as written, target, their objects")
    func chargedForWhatItHolds() {
        let small = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/s", headers: ["X-Pad": "abc"])
        let answer = Self.answer("/s", headers: small.headers, body: 10)
        // The response as written (`HTTP/1.1 200 OK`, the `Content-Length` its framing adds, the
        // empty line, the body) in a NIO buffer: its storage object and the bytes it allocated.
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n".utf8.count + 10
        #expect(answer.encoded.bytes.capacity >= response)
        let buffers = HeapBytes.object(storedBytes: 48) + HeapBytes.allocation(answer.encoded.bytes.capacity)
        // Plus this object, the response head's, the two fields arrays: more than the bytes alone.
        #expect(answer.byteCount >= buffers + 3 * HeapBytes.object(storedBytes: 0))
        // A request field's bytes are charged once it is too long to be held inline (15 bytes).
        let padded = Self.answer("/s", headers: ["X-Pad": String(repeating: "p", count: 1_000)], body: 10)
        #expect(padded.byteCount - answer.byteCount >= 1_000)
    }

    @Test("a refresh carries the Age and Cache-Status of now, the proxy's Date of now, and is charged for them")
    func refresh() {
        let answer = Self.answer("/r", body: 10, addedDateSecond: 1_000)
        #expect(answer.stands(at: Date(timeIntervalSince1970: 1_000.5)))
        #expect(!answer.stands(at: Date(timeIntervalSince1970: 1_001)))
        let refreshed = answer.refreshed(age: "12345", cacheStatus: "x", now: Date(timeIntervalSince1970: 1_001))
        #expect(refreshed.head.headers["Age"] == ["12345"])
        #expect(refreshed.head.headers["Date"] == [HTTPDate.format(1_001)])
        #expect(refreshed.stands(at: Date(timeIntervalSince1970: 1_001)))
        #expect(refreshed.body == answer.body)
        #expect(refreshed.byteCount > answer.byteCount)
        // The origin's Date is left as it is.
        let origin = Self.answer("/o", body: 10).refreshed(age: "1", cacheStatus: "x", now: Date())
        #expect(origin.head.headers["Date"].isEmpty)
    }
}
