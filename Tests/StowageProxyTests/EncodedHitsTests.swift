import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageCore
import StowageHTTPCache
import StowageTestSupport
import Testing

@testable import StowageProxy

/// The table of hits kept as bytes: matched field for field, and bounded.
@Suite struct EncodedHitsTests {
    private static func answer() async throws -> MemoryAnswer {
        try await withTemporaryDirectory { root in
            let cache = try HTTPCache(directory: root, configuration: .init(kind: .shared))
            let request = HTTPRequest(method: .get, scheme: "http", authority: "o.test", path: "/a")
            var response = HTTPResponse(status: .ok)
            response.headerFields[.cacheControl] = "max-age=60"
            let origin = response
            let served = try await cache.respond(to: request) { _, _ in (origin, HTTPBody(bytes: [1, 2, 3])) }
            _ = try await served.body.collect(upTo: 10)
            return try #require(cache.memoryAnswer(to: request))
        }
    }

    private static func entry(
        _ uri: String,
        headers: HTTPHeaders = [:],
        body: Int,
        answer: MemoryAnswer
    )
        -> EncodedHits.Entry
    {
        EncodedHits.Entry(
            method: .GET,
            uri: uri,
            headers: headers,
            head: HTTPResponseHead(version: .http1_1, status: .ok),
            fieldsValidFrom: answer.workedOutAtSeconds,
            fieldsValidUntil: answer.validUntilSeconds,
            body: ByteBuffer(repeating: 0x61, count: body),
            answer: KeptMemoryAnswer(answer),
            addedDateSecond: nil,
            memoryVersion: .max
        )
    }

    @Test("an entry answers only a request with the same method, target and fields, byte for byte")
    func matchesExactly() async throws {
        let answer = try await Self.answer()
        let hits = EncodedHits(maximumBytes: 1 << 20)
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p", "Accept": "x"])
        hits.insert(Self.entry("/a", headers: head.headers, body: 10, answer: answer), hash: EncodedHits.hash(head))
        #expect(hits.entry(for: head, hash: EncodedHits.hash(head)) != nil)
        for other in [
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p", "Accept": "y"]),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["host": "p", "Accept": "x"]),
            HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/a", headers: head.headers),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a?", headers: head.headers),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p"]),
        ] {
            // Even under the entry's own key a different request is not answered with it.
            #expect(hits.entry(for: other, hash: EncodedHits.hash(head)) == nil, "\(other)")
        }
    }

    @Test("the table holds no more bytes than its bound, and an entry larger than the bound is not kept")
    func bounded() async throws {
        let answer = try await Self.answer()
        let hits = EncodedHits(maximumBytes: 10_000)
        var kept = 0
        for index in 0..<100 {
            let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/\(index)")
            hits.insert(Self.entry("/\(index)", body: 1_000, answer: answer), hash: EncodedHits.hash(head))
            kept =
                (0...index).filter { number in
                    let probe = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/\(number)")
                    return hits.entry(for: probe, hash: EncodedHits.hash(probe)) != nil
                }.count
            // Each entry counts 1,000 + its target + 256 bytes: at most 7 fit in 10,000.
            #expect(kept <= 7, "\(kept) entries kept")
            // Once full, each new entry takes one old entry's place: the table stays full (it
            // was emptied whole before, so a working set just over the bound kept missing).
            if index >= 7 { #expect(kept == 7, "\(kept) entries kept after \(index + 1) inserts") }
            #expect(hits.entry(for: head, hash: EncodedHits.hash(head)) != nil, "the newest entry is kept")
        }
        let huge = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/huge")
        hits.insert(Self.entry("/huge", body: 20_000, answer: answer), hash: EncodedHits.hash(huge))
        #expect(hits.entry(for: huge, hash: EncodedHits.hash(huge)) == nil)
        let none = EncodedHits(maximumBytes: -5)
        none.insert(Self.entry("/x", body: 1, answer: answer), hash: 1)
        #expect(none.entry(for: HTTPRequestHead(version: .http1_1, method: .GET, uri: "/x"), hash: 1) == nil)
    }

    @Test("a request with more than 16 KiB of fields is not kept, and request fields count toward the bound")
    func requestFieldsCount() async throws {
        let answer = try await Self.answer()
        let hits = EncodedHits(maximumBytes: 1 << 20)
        let padded = HTTPRequestHead(
            version: .http1_1,
            method: .GET,
            uri: "/p",
            headers: ["Host": "p", "X-Pad": String(repeating: "x", count: 20_000)]
        )
        hits.insert(Self.entry("/p", headers: padded.headers, body: 1, answer: answer), hash: EncodedHits.hash(padded))
        #expect(hits.entry(for: padded, hash: EncodedHits.hash(padded)) == nil)
        let small = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/s", headers: ["X-Pad": "abc"])
        let entry = Self.entry("/s", headers: small.headers, body: 10, answer: answer)
        // The request's fields, the response as written (`HTTP/1.1 200 OK`, the `Content-Length`
        // its framing adds, the empty line, the body), the target and 256.
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n".utf8.count + 10
        #expect(EncodedHits.size(of: entry) == ("X-Pad".count + 3 + 4) + response + 2 + 256)
    }

    @Test("a refresh replaces only the entry it was worked out from, and the byte count follows the new head")
    func refreshReplacesItsOwnEntry() async throws {
        let answer = try await Self.answer()
        let hits = EncodedHits(maximumBytes: 1 << 20)
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/r")
        let hash = EncodedHits.hash(head)
        let original = Self.entry("/r", body: 10, answer: answer)
        hits.insert(original, hash: hash)
        var refreshedHead = original.head
        refreshedHead.headers.replaceOrAdd(name: "Age", value: "12345")
        let refreshed = original.refreshed(
            head: refreshedHead,
            fieldsValidFrom: original.fieldsValidUntil,
            fieldsValidUntil: original.fieldsValidUntil + 1,
            memoryVersion: .max
        )
        hits.replace(original, with: refreshed, hash: hash)
        #expect(hits.entry(for: head, hash: hash) === refreshed)
        // An entry put in its place meanwhile (another request's answer) is not overwritten.
        let newer = Self.entry("/r", body: 20, answer: answer)
        hits.insert(newer, hash: hash)
        hits.replace(refreshed, with: original, hash: hash)
        #expect(hits.entry(for: head, hash: hash) === newer)
        // What the bound counts of the refreshed entry: its longer head.
        #expect(EncodedHits.size(of: refreshed) == EncodedHits.size(of: original) + "Age".count + "12345".count + 4)
    }
}
