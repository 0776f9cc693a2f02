import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// NSURLSession's `willCacheResponse` returns a new `NSCachedURLResponse` with new `data` and
/// `userInfo`; the will-cache hook does the same, and the stored record keeps the user info.
@Suite struct WillCacheBodyAndUserInfoTests {
    struct HookFailure: Error {}

    static let info = ["origin": "catalog", "nul and controls": "a\u{0}b\n\r\u{1}\u{7F}", "": "empty key"]

    @Test(
        "A will-cache hook that rewrites the body: the miss is served the origin's body, hits the rewritten one from memory, from disk and after reopening"
    )
    func rewrittenBodyIsServedOnHits() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.willCache = { proposal in
                    var proposal = proposal
                    let original = String(decoding: try #require(proposal.body), as: UTF8.self)
                    proposal.body = Array("rewritten \(original)".utf8)
                    proposal.userInfo = Self.info
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in
                ok("v\(n)", [("Cache-Control", "max-age=600"), ("Content-Length", "2")], clock: clock)
            }
            do {
                let cache = try makeCache(root, clock: clock, configure: configure)
                let miss = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(try await text(miss) == "v1", "the caller is served the origin's body")
                #expect(miss.status.stored)
                #expect(miss.userInfo == Self.info)
                let hit = try await cache.respond(to: request(), fetch: origin.fetch)
                #expect(hit.outcome == .hit)
                #expect(try await text(hit) == "rewritten v1")
                #expect(hit.response.headerFields[.contentLength] == "12", "Content-Length follows the stored body")
                #expect(hit.userInfo == Self.info)
                #expect(cache.statistics.disk.hits == 0, "served from memory")
            }
            let reopened = try makeCache(root, clock: clock, configure: configure)
            let fromDisk = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(fromDisk.outcome == .hit)
            #expect(try await text(fromDisk) == "rewritten v1")
            #expect(fromDisk.userInfo == Self.info)
            #expect(reopened.statistics.disk.hits > 0, "served from disk")
            #expect(origin.count == 1)
        }
    }

    @Test("User info with control characters and NUL round-trips: on the miss, hits, after a 304 and after reopening")
    func userInfoRoundTrips() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.userInfo = Self.info
                    return proposal
                }
            }
            let origin = TestOrigin { request, n in
                if request.headerFields[.ifNoneMatch] != nil {
                    return (
                        response(
                            304,
                            [("ETag", "\"a\""), ("Cache-Control", "max-age=60")],
                            date: clock.now
                        ), []
                    )
                }
                return ok("v\(n)", [("Cache-Control", "max-age=60"), ("ETag", "\"a\"")], clock: clock)
            }
            let cache = try makeCache(root, clock: clock, configure: configure)
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).userInfo == Self.info)
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).userInfo == Self.info)
            clock.advance(by: .seconds(120))
            let revalidated = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(revalidated.outcome == .revalidated)
            #expect(revalidated.userInfo == Self.info, "a 304 freshens the fields and keeps the user info")
            let reopened = try makeCache(root, clock: clock, configure: configure)
            let hit = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(hit.userInfo == Self.info)
            #expect(try await text(hit) == "v1")
        }
    }

    @Test("A will-cache hook that throws: the response is served, not stored, and the response stored before is kept")
    func throwingHookKeepsWhatWasStored() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.willCache = { proposal in
                    if proposal.body == Array("v2".utf8) { throw HookFailure() }
                    var proposal = proposal
                    proposal.userInfo = ["version": "1"]
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock) }
            let cache = try makeCache(root, clock: clock, configure: configure)
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v1")
            let reloaded = try await cache.respond(
                to: request(),
                policy: .reloadIgnoringLocalCacheData,
                fetch: origin.fetch
            )
            #expect(try await text(reloaded) == "v2", "the caller gets the response the hook failed on")
            #expect(!reloaded.status.stored)
            #expect(reloaded.userInfo.isEmpty)
            #expect(reloaded.trace.contains { $0.contains("will-cache hook threw") })
            let hit = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(hit.outcome == .hit)
            #expect(try await text(hit) == "v1")
            let reopened = try makeCache(root, clock: clock, configure: configure)
            let fromDisk = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(fromDisk) == "v1")
            #expect(fromDisk.userInfo == ["version": "1"])
            #expect(origin.count == 2)
        }
    }

    @Test(
        "A will-cache hook that returns a body over the per-entry limit: the origin's body is served, nothing is stored, the earlier entry is kept"
    )
    func oversizeBodyFromHookIsNotStored() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.memoryCapacity = ByteCount(100_000)
                $0.diskCapacity = ByteCount(1_000_000)  // 5 %: 50 000 bytes
                $0.willCache = { proposal in
                    guard proposal.body == Array("v2".utf8) else { return proposal }
                    var proposal = proposal
                    proposal.body = [UInt8](repeating: 0x61, count: 50_001)
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock) }
            _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
            let reloaded = try await cache.respond(
                to: request(),
                policy: .reloadIgnoringLocalCacheData,
                fetch: origin.fetch
            )
            #expect(try await text(reloaded) == "v2")
            #expect(!reloaded.status.stored)
            #expect(
                reloaded.trace.contains { $0.contains("will-cache hook's body (50001 bytes) is over the disk limit") }
            )
            #expect(try await text(try await cache.respond(to: request(), fetch: origin.fetch)) == "v1")
            #expect(origin.count == 2)
        }
    }

    @Test("User info over the limits is refused as tooLarge: the response is served and not stored")
    func oversizeUserInfoIsRefused() async throws {
        let tooMany = Dictionary(uniqueKeysWithValues: (0...CacheProposal.maximumUserInfoCount).map { ("k\($0)", "v") })
        let tooLarge = ["k": String(repeating: "x", count: CacheProposal.maximumUserInfoSize)]
        for userInfo in [tooMany, tooLarge] {
            #expect {
                try CacheProposal.validate(userInfo: userInfo)
            } throws: { ($0 as? StowageError)?.code == .tooLarge }
        }
        try CacheProposal.validate(userInfo: ["k": String(repeating: "x", count: CacheProposal.maximumUserInfoSize - 1)]
        )
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock) {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.userInfo = tooLarge
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock) }
            let first = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(try await text(first) == "v1")
            #expect(!first.status.stored)
            #expect(first.trace.contains { $0.contains("too large: the user info") })
            #expect(try await cache.respond(to: request(), fetch: origin.fetch).outcome == .miss)
        }
    }

    // MARK: Stored-record format

    static func record(userInfo: [String: String]) -> VariantRecord {
        let stored = StoredResponse(
            response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=60"]),
            requestTime: t0,
            responseTime: t0,
            bodyLength: 2,
            userInfo: userInfo
        )
        return VariantRecord(stored: stored, bodyKey: "b 1", isMemoryOnly: false)
    }

    @Test("A record written before user info (format version 1) still reads, with no user info")
    func versionOneRecordReads() throws {
        let record = Self.record(userInfo: [:])
        let old = VariantRecord.encode([record], version: VariantRecord.formatVersionWithoutUserInfo)
        #expect(old.first == 1)
        #expect(try VariantRecord.decode(Data(old)) == [record])
        let withInfo = Self.record(userInfo: Self.info)
        #expect(try VariantRecord.decode(Data(VariantRecord.encode([withInfo]))) == [withInfo])
    }

    @Test("A truncated or garbled user-info section decodes as malformed (a miss), never a trap")
    func garbledUserInfoIsMalformed() throws {
        let bytes = VariantRecord.encode([Self.record(userInfo: ["key": "value"])])
        let section = bytes.count - (4 + 4 + 3 + 4 + 5)
        for end in section..<bytes.count {
            #expect(throws: (any Error).self) { try VariantRecord.decode(Data(bytes[..<end])) }
        }
        var hugeCount = bytes
        hugeCount.replaceSubrange(section..<section + 4, with: [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(hugeCount)) }
        var hugeLength = bytes
        hugeLength.replaceSubrange(section + 4..<section + 8, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(hugeLength)) }
        var badUTF8 = bytes
        badUTF8[section + 8] = 0xFF
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(badUTF8)) }
        var unknownVersion = bytes
        unknownVersion[0] = 3
        #expect(throws: (any Error).self) { try VariantRecord.decode(Data(unknownVersion)) }
    }

    @Test("A stored record cut short in its user info is a miss after reopening: fetched again, no crash")
    func truncatedRecordOnDiskIsAMiss() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let configure: (inout HTTPCache.Configuration) -> Void = {
                $0.willCache = { proposal in
                    var proposal = proposal
                    proposal.userInfo = ["key": "value"]
                    return proposal
                }
            }
            let origin = TestOrigin { _, n in ok("v\(n)", [("Cache-Control", "max-age=600")], clock: clock) }
            do {
                let cache = try makeCache(root, clock: clock, configure: configure)
                _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
                let disk = try #require(cache.disk)
                let recordKey = HTTPCache.recordKey(cache.rules.key(for: request()))
                let data = try #require(try await disk.data(forKey: recordKey))
                try await disk.setData(data.dropLast(3), forKey: recordKey)
            }
            let reopened = try makeCache(root, clock: clock, configure: configure)
            let served = try await reopened.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .miss)
            #expect(try await text(served) == "v2")
            #expect(try await reopened.respond(to: request(), fetch: origin.fetch).userInfo == ["key": "value"])
        }
    }
}
