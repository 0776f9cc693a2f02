import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageHTTPCache
import Testing

@testable import StowageProxy

/// An ``EncodedAnswer`` as the HTTP cache spills it (`EncodedAnswer+Spill.swift`): its request
/// told apart as `answers(_:)` tells it apart, its head without the fields each hit sets, and
/// sent again as the same response with this hit's `Age`, `Cache-Status` and added `Date`.
@Suite struct EncodedAnswerSpillTests {
    private static func answer(
        request: HTTPRequestHead,
        fields: HTTPHeaders,
        body: String,
        addedDateSecond: Int64? = nil
    ) -> EncodedAnswer {
        EncodedAnswer(
            request: request,
            head: HTTPResponseHead(version: .http1_1, status: .ok, headers: fields),
            body: ByteBuffer(string: body),
            addedDateSecond: addedDateSecond
        )
    }

    @Test("the spilled identity matches requests with the same method, target, Host and varying fields only")
    func identityMatchesWhatTheAnswerDependsOn() throws {
        let head = HTTPRequestHead(
            version: .http1_1,
            method: .GET,
            uri: "/a",
            headers: ["Host": "p", "Accept": "x", "Accept-Language": "en"]
        )
        let varying: HTTPHeaders = ["Vary": "accept-language"]
        let spilled = try #require(Self.answer(request: head, fields: varying, body: "b").spilled())
        let identity = spilled.identity[...]
        #expect(EncodedAnswer.answers(head, spilledIdentity: identity))
        // Fields the response does not vary on, and the letter case of names, do not matter.
        for same in [
            HTTPRequestHead(
                version: .http1_1,
                method: .GET,
                uri: "/a",
                headers: ["host": "p", "Accept-Language": "en"]
            ),
            HTTPRequestHead(
                version: .http1_1,
                method: .GET,
                uri: "/a",
                headers: ["Accept-Language": "en", "User-Agent": "u", "Host": "p"]
            ),
        ] {
            #expect(EncodedAnswer.answers(same, spilledIdentity: identity), "\(same)")
        }
        for other in [
            HTTPRequestHead(
                version: .http1_1,
                method: .GET,
                uri: "/a",
                headers: ["Host": "p", "Accept-Language": "de"]
            ),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p"]),
            HTTPRequestHead(
                version: .http1_1,
                method: .GET,
                uri: "/a",
                headers: ["Host": "q", "Accept-Language": "en"]
            ),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Accept-Language": "en"]),
            HTTPRequestHead(
                version: .http1_1,
                method: .GET,
                uri: "/a",
                headers: ["Host": "p", "Host": "p", "Accept-Language": "en"]
            ),
            HTTPRequestHead(
                version: .http1_1,
                method: .GET,
                uri: "/a",
                headers: ["Host": "p", "Accept-Language": "en", "Accept-Language": "en"]
            ),
            HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/a", headers: head.headers),
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a?", headers: head.headers),
        ] {
            #expect(!EncodedAnswer.answers(other, spilledIdentity: identity), "\(other)")
        }
        // Cut short, or with a byte more, it matches nothing.
        #expect(!EncodedAnswer.answers(head, spilledIdentity: identity.dropLast()))
        #expect(!EncodedAnswer.answers(head, spilledIdentity: (spilled.identity + [0])[...]))
        #expect(!EncodedAnswer.answers(head, spilledIdentity: [][...]))
        #expect(!EncodedAnswer.answers(head, spilledIdentity: [0xFF, 0xFF, 0xFF, 0xFF][...]))
    }

    @Test("a varying field sent several times matches the same values in the same order, byte for byte")
    func repeatedVaryingFieldsMatchInOrder() throws {
        func request(_ fields: [(String, String)]) -> HTTPRequestHead {
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/ü", headers: HTTPHeaders([("Host", "p")] + fields))
        }
        let sent = [("Accept-Language", "en"), ("X-Empty", ""), ("accept-language", "dé-ÇH")]
        let varying: HTTPHeaders = ["Vary": "Accept-Language, X-Empty"]
        let spilled = try #require(Self.answer(request: request(sent), fields: varying, body: "b").spilled())
        let identity = spilled.identity[...]
        #expect(EncodedAnswer.answers(request(sent), spilledIdentity: identity))
        #expect(
            EncodedAnswer.answers(
                request([("ACCEPT-LANGUAGE", "en"), ("Accept", "x"), ("x-empty", ""), ("Accept-Language", "dé-ÇH")]),
                spilledIdentity: identity
            ),
            "names in any case, other fields between"
        )
        for other in [
            [("Accept-Language", "dé-ÇH"), ("X-Empty", ""), ("Accept-Language", "en")],  // another order
            [("Accept-Language", "en"), ("X-Empty", ""), ("Accept-Language", "dé-ÇI")],  // last byte
            [("Accept-Language", "en"), ("X-Empty", ""), ("Accept-Language", "dé-ÇH-x")],  // longer
            [("Accept-Language", "e"), ("X-Empty", ""), ("Accept-Language", "dé-ÇH")],  // shorter
            [("Accept-Language", "en"), ("X-Empty", " "), ("Accept-Language", "dé-ÇH")],
            [("Accept-Language", "en"), ("Accept-Language", "dé-ÇH")],  // one field fewer
            [("Accept-Language", "en"), ("X-Empty", ""), ("X-Empty", ""), ("Accept-Language", "dé-ÇH")],
            [("Accept-Language", "en,dé-ÇH"), ("X-Empty", "")],  // one field with both values
        ] {
            #expect(!EncodedAnswer.answers(request(other), spilledIdentity: identity), "\(other)")
        }
    }

    @Test(
        "a request that asks something of its own is neither spilled nor answered from a spill",
        arguments: [
            ("Cache-Control", "max-age=0"), ("pragma", "no-cache"), ("If-None-Match", "\"e\""),
            ("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"), ("If-Match", "*"),
            ("If-Unmodified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"), ("If-Range", "\"e\""), ("Range", "bytes=0-1"),
            ("Authorization", "Bearer t"),
        ]
    )
    func decidingFieldsAreNotSpilled(field: (String, String)) throws {
        let plain = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p"])
        let asking = HTTPRequestHead(
            version: .http1_1,
            method: .GET,
            uri: "/a",
            headers: ["Host": "p", field.0: field.1]
        )
        #expect(EncodedAnswer.spillHash(plain) != nil)
        #expect(EncodedAnswer.spillHash(asking) == nil)
        #expect(Self.answer(request: asking, fields: [:], body: "b").spilled() == nil)
        let spilled = try #require(Self.answer(request: plain, fields: [:], body: "b").spilled())
        #expect(!EncodedAnswer.answers(asking, spilledIdentity: spilled.identity[...]))
        // Vary: * matches no later request: not spilled.
        #expect(Self.answer(request: plain, fields: ["Vary": "Accept, *"], body: "b").spilled() == nil)
        // A HEAD is not spilled either.
        #expect(
            EncodedAnswer.spillHash(
                HTTPRequestHead(version: .http1_1, method: .HEAD, uri: "/a", headers: ["Host": "p"])
            ) == nil
        )
    }

    @Test("sent again, a spilled answer is the response with this hit's Age, Cache-Status and added Date")
    func sentAgain() throws {
        let request = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/a", headers: ["Host": "p"])
        let fields: HTTPHeaders = [
            "Cache-Control": "max-age=60", "Age": "3", "Cache-Status": "stowage; hit; ttl=57",
            "Date": "Thu, 01 Jan 1970 00:16:40 GMT", "ETag": "\"e\"",
        ]
        let answer = Self.answer(request: request, fields: fields, body: "hello", addedDateSecond: 1_000)
        let spilled = try #require(answer.spilled())
        #expect(spilled.addsDate)
        let headText = String(decoding: spilled.head, as: UTF8.self)
        #expect(headText == "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nETag: \"e\"\r\nContent-Length: 5\r\n")
        let record = Array("key".utf8) + spilled.identity + spilled.head + spilled.body
        let headStart = 3 + spilled.identity.count
        let hit = SpilledHit(
            bytes: record,
            head: headStart..<(headStart + spilled.head.count),
            body: (headStart + spilled.head.count)..<record.count,
            age: "10",
            cacheStatus: "stowage; hit; ttl=50",
            addsDate: true,
            now: Date(timeIntervalSince1970: 2_000.7),
            outcome: .hit
        )
        let response = EncodedResponse(hit)
        let text = String(decoding: response.bytes.readableBytesView, as: UTF8.self)
        #expect(
            text == headText
                + "Age: 10\r\nCache-Status: stowage; hit; ttl=50\r\nDate: \(HTTPDate.format(2_000))\r\n\r\nhello"
        )
        #expect(response.bodyLength == 5)
        // The origin's Date stays in the head and is not added again.
        let origin = try #require(Self.answer(request: request, fields: fields, body: "hello").spilled())
        #expect(!origin.addsDate)
        #expect(String(decoding: origin.head, as: UTF8.self).contains("Date: Thu, 01 Jan 1970 00:16:40 GMT\r\n"))
    }
}
