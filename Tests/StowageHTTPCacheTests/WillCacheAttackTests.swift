import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache

/// Hostile and edge-case uses of the will-cache hook (NSURLSession's `willCacheResponse`): what
/// it may change must leave a stored response that is storable, framed and keyed as RFC 9111 asks.
@Suite struct WillCacheAttackTests {
    @Test("A will-cache hook that turns the response into a 206, a 304 or a no-store one stores nothing (RFC 9111 §3)")
    func hookMakingResponseUnstorableStoresNothing() async throws {
        let rewrites: [@Sendable (inout HTTPResponse) -> Void] = [
            {
                $0.status = .partialContent
                $0.headerFields[.contentRange] = "bytes 0-1/10"
            },
            { $0.status = .notModified },
            { $0.headerFields[.cacheControl] = "no-store, max-age=600" },
            { $0.headerFields[.vary] = "*" },
            { $0.status = .init(code: 199) },
        ]
        for rewrite in rewrites {
            try await withTemporaryDirectory { root in
                let clock = ManualClock(startingAt: t0)
                let cache = try makeCache(root, clock: clock) {
                    $0.willCache = { proposal in
                        var proposal = proposal
                        rewrite(&proposal.response)
                        return proposal
                    }
                }
                let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock) }
                let first = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(try await text(first) == "v1")
                #expect(first.response.status == .ok, "the caller is served the origin's response")
                #expect(!first.status.stored)
                let second = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(second.outcome == .miss, "\(second.trace)")
                #expect(second.response.status == .ok)
                #expect(try await text(second) == "v2")
            }
        }
    }

    @Test(
        "A will-cache hook that adds hop-by-hop fields, a cookie or a private field to a shared cache's response: none is stored (RFC 9111 §3.1, §5.2.2.7)"
    )
    func hookFieldsAreFilteredLikeTheOrigins() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let userField = HTTPField.Name("X-User")!
            let cache = try makeCache(root, clock: clock, kind: .shared) {
                $0.rules.setCookie = .storeWithoutCookie
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.response.headerFields[.setCookie] = "session=alice"
                    proposal.response.headerFields[.transferEncoding] = "chunked"
                    proposal.response.headerFields[.connection] = "X-Hop"
                    proposal.response.headerFields[HTTPField.Name("X-Hop")!] = "1"
                    proposal.response.headerFields[HTTPField.Name("Keep-Alive")!] = "timeout=5"
                    proposal.response.headerFields[userField] = "alice"
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in
                ok("v\(n)", [("Cache-Control", "max-age=600, private=\"X-User\"")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            let fields = hit.response.headerFields
            #expect(fields[.setCookie] == nil, "another user is not sent alice's cookie")
            #expect(fields[userField] == nil)
            #expect(fields[.transferEncoding] == nil)
            #expect(fields[.connection] == nil)
            #expect(fields[HTTPField.Name("X-Hop")!] == nil)
            #expect(fields[HTTPField.Name("Keep-Alive")!] == nil)
        }
    }

    @Test("A will-cache hook that sets a Content-Length but keeps the body: hits announce the stored body's length")
    func hookContentLengthFollowsStoredBody() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let size = 300_000
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.diskCapacity = ByteCount(100_000_000)
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.response.headerFields[.contentLength] = "5"
                    return proposal
                }
            }
            let body = String(repeating: "x", count: size)
            let origin = TestOrigin { _, _ in
                ok(body, [("Cache-Control", "max-age=600"), ("Content-Length", String(size))], clock: clock)
            }
            do {
                let cache = try makeCache(root, clock: clock, configure: configure)
                #expect(
                    try await text(try await cache.respond(to: request(), fetch: origin.streamingFetch(chunk: 65_536)))
                        .count == size
                )
                let hit = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(hit.outcome == .hit)
                #expect(hit.response.headerFields[.contentLength] == String(size))
                #expect(try await text(hit).count == size)
            }
            let reopened = try makeCache(root, clock: clock, configure: configure)
            let head = try await reopened.respond(to: request(.head), fetch: origin.fetch)
            #expect(head.outcome == .hit)
            #expect(head.response.headerFields[.contentLength] == String(size))
        }
    }

    @Test(
        "A streamed body of unknown length with a small body from the hook: the caller streams the origin's, hits get the hook's"
    )
    func streamedOriginWithHookBody() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.diskCapacity = ByteCount(100_000_000)
                $0.willCache = { proposal in
                    #expect(proposal.body == nil)
                    var proposal = proposal
                    proposal.body = Array("small".utf8)
                    return proposal
                }
            }
            let big = [UInt8](repeating: 0x62, count: 600_000)
            let fetch: HTTPFetch = { _, _ in
                let chunks = stride(from: 0, to: big.count, by: 50_000).map { Array(big[$0..<$0 + 50_000]) }
                return (
                    response(200, [("Cache-Control", "max-age=600"), ("Transfer-Encoding", "chunked")], date: t0),
                    HTTPBody(ChunkSequence(chunks: chunks))
                )
            }
            let miss = try await cache.respond(to: request(), fetch: fetch)
            #expect(try await miss.body.collect(upTo: 1 << 24) == big)
            let hit = try await cache.respond(to: request(), fetch: fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit) == "small")
            #expect(hit.response.headerFields[.transferEncoding] == nil)
        }
    }

    struct CutShort: Error {}

    /// Yields its chunks, then fails: an origin whose connection drops mid-body.
    struct FailingSequence: AsyncSequence, Sendable {
        let chunks: [[UInt8]]
        struct AsyncIterator: AsyncIteratorProtocol {
            var remaining: ArraySlice<[UInt8]>
            mutating func next() async throws -> [UInt8]? {
                guard let chunk = remaining.popFirst() else { throw CutShort() }
                return chunk
            }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: chunks[...]) }
    }

    @Test(
        "A streamed origin body cut short: the will-cache hook's body is not stored for it (RFC 9111 §3.3); a complete one stores it"
    )
    func hookBodyWaitsForTheOriginsBodyToComplete() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.diskCapacity = ByteCount(100_000_000)
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.body = Array("summary".utf8)
                    return proposal
                }
            }
            let failing = Mutex(false)
            let fetch: HTTPFetch = { _, _ in
                let chunk = [UInt8](repeating: 0x62, count: 50_000)
                let head = response(200, [("Cache-Control", "max-age=600")], date: t0)
                if failing.withLock({ $0 }) {
                    return (head, HTTPBody(FailingSequence(chunks: [chunk, chunk])))
                }
                return (head, HTTPBody(ChunkSequence(chunks: [chunk, chunk])))
            }
            // Cut short with nothing stored before: nothing is stored.
            failing.withLock { $0 = true }
            let cut = try await cache.respond(to: request(), fetch: fetch)
            #expect(!cut.status.stored)
            await #expect(throws: CutShort.self) { _ = try await cut.body.collect(upTo: 1 << 24) }
            let after = try await cache.respond(
                to: request(.get, "/resource", [("Cache-Control", "only-if-cached")]),
                fetch: fetch
            )
            #expect(after.response.status == .gatewayTimeout, "\(after.trace)")

            // A complete body stores the hook's bytes once it has been read.
            failing.withLock { $0 = false }
            let whole = try await cache.respond(to: request(), fetch: fetch)
            #expect(try await whole.body.collect(upTo: 1 << 24).count == 100_000)
            let hit = try await cache.respond(to: request(), fetch: fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit) == "summary")
        }
    }

    @Test("A 0-byte body from the hook is stored and served with Content-Length 0, after reopening too")
    func emptyHookBody() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.body = []
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in
                ok("v\(n)", [("Cache-Control", "max-age=600"), ("Content-Length", "2")], clock: clock)
            }
            do {
                let cache = try makeCache(root, clock: clock, configure: configure)
                #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v1")
                let hit = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(hit.outcome == .hit)
                #expect(try await text(hit) == "")
                #expect(hit.response.headerFields[.contentLength] == "0")
            }
            let reopened = try makeCache(root, clock: clock, configure: configure)
            let hit = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit, "\(hit.trace)")
            #expect(try await text(hit) == "")
        }
    }

    @Test("A hook body exactly at the per-entry limit is stored; one byte over is not")
    func hookBodyAtLimit() async throws {
        for (size, stored) in [(50_000, true), (50_001, false)] {
            try await withTemporaryDirectory { root in
                let clock = ManualClock(startingAt: t0)
                let cache = try makeCache(root, clock: clock) {
                    $0.memoryCapacity = ByteCount(100_000)
                    $0.diskCapacity = ByteCount(1_000_000)
                    $0.willCache = { proposal in
                        var proposal = proposal
                        proposal.body = [UInt8](repeating: 0x61, count: size)
                        return proposal
                    }
                }
                let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock) }
                let miss = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(try await text(miss) == "v1")
                #expect(miss.status.stored == stored)
                let next = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect((next.outcome == .hit) == stored)
                #expect(try await text(next).count == (stored ? size : 2))
            }
        }
    }

    @Test(
        "A hook body survives a 304: the stored Content-Length is not the 304's (RFC 9111 §3.2), other fields are merged"
    )
    func hookBodySurvivesNotModified() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.body = Array("replaced!".utf8)
                    proposal.userInfo = ["k": "v"]
                    return proposal
                }
            }
            let origin = TestOrigin { request, n in
                if request.headerFields[.ifNoneMatch] != nil {
                    return (
                        response(
                            304,
                            [
                                ("ETag", "\"a\""), ("Cache-Control", "max-age=60"), ("Content-Length", "4"),
                                ("X-New", "1"),
                            ],
                            date: clock.now
                        ), []
                    )
                }
                return ok(
                    "body",
                    [("Cache-Control", "max-age=60"), ("ETag", "\"a\""), ("Content-Length", "4"), ("X-Old", "1")],
                    clock: clock
                )
            }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(120))
            let revalidated = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(revalidated.outcome == .revalidated)
            #expect(try await text(revalidated) == "replaced!")
            #expect(revalidated.response.headerFields[.contentLength] == "9")
            #expect(revalidated.response.headerFields[HTTPField.Name("X-New")!] == "1")
            #expect(revalidated.response.headerFields[HTTPField.Name("X-Old")!] == "1")
            #expect(revalidated.userInfo == ["k": "v"])
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit) == "replaced!")
        }
    }

    @Test("A hook that replaces the body of one Vary variant leaves the other variant's body alone")
    func hookBodyForOneVariant() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.willCache = { proposal in
                    guard proposal.request.headerFields[.acceptLanguage] == "fr" else { return proposal }
                    var proposal = proposal
                    proposal.body = Array("bonjour".utf8)
                    return proposal
                }
            }
            let origin = TestOrigin { request, _ in
                ok(
                    "hello-\(request.headerFields[.acceptLanguage] ?? "")",
                    [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")],
                    clock: clock
                )
            }
            for language in ["en", "fr"] {
                _ = try await text(
                    try await cache.respond(
                        to: request(.get, "/resource", [("Accept-Language", language)]),
                        fetch: origin.fetch
                    )
                )
            }
            let en = try await cache.respond(
                to: request(.get, "/resource", [("Accept-Language", "en")]),
                fetch: origin.fetch
            )
            let fr = try await cache.respond(
                to: request(.get, "/resource", [("Accept-Language", "fr")]),
                fetch: origin.fetch
            )
            #expect(en.outcome == .hit)
            #expect(fr.outcome == .hit)
            #expect(try await text(en) == "hello-en")
            #expect(try await text(fr) == "bonjour")
        }
    }

    @Test(
        "A hook that returns a proposal for another URL stores under the requested URL only; the other key is not touched"
    )
    func hookProposalForAnotherRequest() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.willCache = { proposal in
                    guard proposal.request.path == "/evil" else { return proposal }
                    return CacheProposal(
                        request: request(.get, "/victim"),
                        response: proposal.response,
                        body: Array("poison".utf8)
                    )
                }
            }
            let origin = TestOrigin { request, _ in
                ok(request.path ?? "", [("Cache-Control", "max-age=600")], clock: clock)
            }
            _ = try await text(try await cache.respond(to: request(.get, "/victim"), fetch: origin.fetch))
            _ = try await text(try await cache.respond(to: request(.get, "/evil"), fetch: origin.fetch))
            let victim = try await cache.respond(to: request(.get, "/victim"), fetch: origin.fetch)
            #expect(victim.outcome == .hit)
            #expect(try await text(victim) == "/victim")
            let evil = try await cache.respond(to: request(.get, "/evil"), fetch: origin.fetch)
            #expect(try await text(evil) == "poison")
        }
    }

    // MARK: Crafted records

    static func fullRecord() -> [UInt8] {
        var fields = HTTPFields()
        fields[.cacheControl] = "max-age=60"
        fields[.eTag] = "\"x\""
        let stored = StoredResponse(
            response: HTTPResponse(status: .ok, headerFields: fields),
            requestTime: t0,
            responseTime: t0,
            varyingFields: [.init(name: "accept", value: "a"), .init(name: "cookie", value: nil)],
            forcedExpiry: t0 + 10,
            bodyLength: 2,
            userInfo: ["a": "1", "b\u{0}\r\n": "2\u{0}"]
        )
        return VariantRecord.encode([VariantRecord(stored: stored, bodyKey: "b 1", isMemoryOnly: false)])
    }

    @Test(
        "User info of exactly 32 entries and 4096 bytes round-trips; one entry or one byte more is refused and malformed"
    )
    func userInfoAtTheLimits() throws {
        // 32 entries of 128 bytes each: "kNN" keys padded with values to 128 bytes.
        var atLimit: [String: String] = [:]
        for index in 0..<CacheProposal.maximumUserInfoCount {
            let key = "k" + String(index).leftPadded(to: 2)
            atLimit[key] = String(repeating: "v", count: 128 - key.utf8.count)
        }
        try CacheProposal.validate(userInfo: atLimit)
        let record = WillCacheBodyAndUserInfoTests.record(userInfo: atLimit)
        #expect(try VariantRecord.decode(Data(VariantRecord.encode([record]))) == [record])
        var overSize = atLimit
        overSize["k00"]! += "v"
        var overCount = atLimit
        overCount["k00"] = nil
        overCount["a"] = "v"
        overCount["b"] = "v"
        for userInfo in [overSize, overCount] {
            #expect {
                try CacheProposal.validate(userInfo: userInfo)
            } throws: { ($0 as? StowageError)?.code == .tooLarge }
            let bytes = VariantRecord.encode([WillCacheBodyAndUserInfoTests.record(userInfo: userInfo)])
            #expect(throws: (any Error).self) { try VariantRecord.decode(Data(bytes)) }
        }
    }

    @Test("A version 2 record cut at every byte offset decodes as malformed, never a trap")
    func truncatedAtEveryOffset() throws {
        let bytes = Self.fullRecord()
        #expect(try VariantRecord.decode(Data(bytes)).count == 1)
        for end in 0..<bytes.count {
            #expect(throws: (any Error).self) { try VariantRecord.decode(Data(bytes[..<end])) }
        }
    }

    @Test(
        "A crafted record with a body length of 2^62, a duplicate user-info key or invalid UTF-8 in the user info is malformed"
    )
    func craftedUserInfoAndLengths() throws {
        let stored = StoredResponse(
            response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=60"]),
            requestTime: t0,
            responseTime: t0,
            bodyLength: 1 << 62,
            userInfo: ["a": "1", "b": "2"]
        )
        let bytes = VariantRecord.encode([VariantRecord(stored: stored, bodyKey: "b 1", isMemoryOnly: false)])
        // Body length 2^62 decodes (no allocation follows from it) or is malformed: never a trap.
        _ = try? VariantRecord.decode(Data(bytes))
        // The user info: count, then "a" "1" "b" "2" as 4-byte lengths + 1 byte each.
        let section = bytes.count - (4 + 4 * 5)
        var duplicate = bytes
        duplicate[section + 4 + 10 + 4] = UInt8(ascii: "a")
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(duplicate)) }
        var invalid = bytes
        invalid[section + 4 + 4] = 0xC0
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(invalid)) }
        var emptyKey = bytes
        emptyKey.replaceSubrange(section + 4..<section + 9, with: [0, 0, 0, 0])
        #expect(try VariantRecord.decode(Data(emptyKey)).first?.stored.userInfo == ["": "1", "b": "2"])
        var bomb = bytes
        bomb.replaceSubrange(section + 4..<section + 8, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(bomb)) }
    }
}

/// `heuristicFreshness` off (NSURLCache's rule): responses with stale or unusable explicit
/// freshness may be stored, as RFC 9111 §3 allows, but never served without the origin.
@Suite struct ExplicitFreshnessAttackTests {
    @Test(
        "heuristicFreshness off: invalid, zero or past freshness is stored at most as stale; the next request reaches the origin",
        arguments: [
            [("Cache-Control", "max-age=0")],
            [("Cache-Control", "max-age=1e99")],
            [("Cache-Control", "max-age=-1")],
            [("Cache-Control", "max-age=NaN")],
            [("Cache-Control", "max-age=60, max-age=120")],
            [("Expires", "0")],
            [("Expires", "not a date")],
            [("Expires", "Thu, 01 Jan 1970 00:00:00 GMT")],
            [("Cache-Control", "s-maxage=600")],
            [("Cache-Control", "public")],
            [("Cache-Control", "public, immutable")],
            [("Cache-Control", "stale-while-revalidate=600")],
            [("Cache-Control", "private"), ("Last-Modified", "Thu, 01 Jan 1970 00:00:00 GMT")],
        ]
    )
    func unusableFreshnessIsNotServed(_ pairs: [(String, String)]) async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) { $0.rules.heuristicFreshness = false }
            let origin = TestOrigin { _, n in ok("v\(n)", pairs, clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            clock.advance(by: .seconds(1))
            let second = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(second.outcome != .hit, "\(second.trace)")
            #expect(try await text(second) == "v2")
            #expect(origin.count == 2)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
