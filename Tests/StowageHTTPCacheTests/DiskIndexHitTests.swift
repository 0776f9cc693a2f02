import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache

/// `HTTPCache.memoryAnswer(to:readsDiskIndex: true)`: the answer a server's event loop gives
/// from the disk index without waiting must be the answer `respond` gives from disk, must keep
/// the record and body in memory as `respond`'s read does, and must leave to `respond` every
/// case it cannot answer by one indexed read (a miss, a body in a file, a removed response).
@Suite("HTTPCache answers from the disk index without waiting")
struct DiskIndexHitTests {
    private static let fresh = [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]

    /// A cache at `root` that stored `body` for `request()`, closed, and a second handle on the
    /// same directory: the response is on disk, its memory empty.
    private func reopenedWithStoredResponse(
        _ root: URL,
        clock: ManualClock,
        body: String = "stored body",
        configure: @escaping (inout HTTPCache.Configuration) -> Void = { _ in }
    ) async throws -> (HTTPCache, TestOrigin) {
        let origin = TestOrigin { _, _ in ok(body, Self.fresh, clock: clock) }
        let first = try makeCache(root, clock: clock, kind: .shared, configure: configure)
        _ = try await text(try await first.respond(to: request(), fetch: origin.fetch))
        try await first.close()
        let reopened = try makeCache(root, clock: clock, kind: .shared, configure: configure)
        return (reopened, origin)
    }

    @Test("a response only on disk is answered from the index exactly as respond answers it, and kept in memory")
    func diskHitMatchesRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, origin) = try await reopenedWithStoredResponse(root, clock: clock)
            clock.advance(by: .seconds(7))
            #expect(cache.memoryAnswer(to: request()) == nil, "memory alone does not hold it")
            let fast = try #require(cache.memoryAnswer(to: request(), readsDiskIndex: true)).served
            #expect(fast.outcome == .hit)
            #expect(fast.response.headerFields[.age] == "7")
            #expect(fast.body.bytesInMemory == Array("stored body".utf8))
            // Kept in memory as respond's read keeps what it finds on disk.
            let fromMemory = try #require(cache.memoryAnswer(to: request())).served
            #expect(fromMemory.response == fast.response)
            let slow = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(slow.response == fast.response)
            #expect(slow.status.description == fast.status.description)
            #expect(slow.trace == fast.trace, "\(slow.trace)")
            #expect(origin.count == 1)
            #expect(cache.disk?.statistics.hits == 2, "one hit for the record and one for the body")
            try await cache.close()
        }
    }

    @Test("a miss and a stale response are left to respond; a HEAD gets the fields without reading the body")
    func leftToRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, _) = try await reopenedWithStoredResponse(root, clock: clock)
            #expect(cache.memoryAnswer(to: request(.get, "/other"), readsDiskIndex: true) == nil)
            #expect(cache.disk?.statistics.misses == 0, "a miss is counted by respond's read alone")
            let head = try #require(cache.memoryAnswer(to: request(.head, "/resource"), readsDiskIndex: true))
            #expect(head.served.response.status.code == 200)
            #expect(head.served.body.bytesInMemory?.isEmpty ?? true)
            #expect(cache.disk?.statistics.hits == 1, "the record alone was read")
            clock.advance(by: .seconds(61))
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil, "stale: respond validates")
            try await cache.close()
        }
    }

    @Test("a removed response stays removed: neither the index read nor memory answers it")
    func removalIsFinal() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, origin) = try await reopenedWithStoredResponse(root, clock: clock)
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) != nil)
            try await cache.remove(cache.rules.key(for: request()))
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil)
            #expect(cache.memoryAnswer(to: request()) == nil)
            let served = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .miss)
            #expect(origin.count == 2)
            try await cache.close()
        }
    }

    @Test("a removal on disk by another handle is final for the index read, memory emptied with it")
    func clearByAnotherHandleIsFinal() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, _) = try await reopenedWithStoredResponse(root, clock: clock)
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) != nil)
            // Another handle on the same directory (as `stowage clear-caches` on a running proxy's).
            let other = try DiskCache(directory: root.appending(path: "http"))
            _ = try await other.removeAll()
            try await other.close()
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil)
            #expect(cache.memoryAnswer(to: request()) == nil, "memory did not outlive the clear")
            try await cache.close()
        }
    }

    @Test("a body kept in a file is left to respond, which streams it")
    func bodyInFileIsLeftToRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            // Over the disk cache's default inline threshold (16 KiB): stored in a file.
            let body = String(repeating: "f", count: 40_000)
            let (cache, origin) = try await reopenedWithStoredResponse(root, clock: clock, body: body)
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil)
            let served = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .hit)
            #expect(try await text(served) == body)
            #expect(origin.count == 1)
            try await cache.close()
        }
    }

    @Test("bytes in the index that are not a record are left to respond, which removes them")
    func garbledRecordIsLeftToRespond() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, origin) = try await reopenedWithStoredResponse(root, clock: clock)
            let disk = try #require(cache.disk)
            let recordKey = HTTPCache.recordKey(cache.rules.key(for: request()))
            try await disk.setData(Data([0xFF, 0x00, 0x13, 0x37]), forKey: recordKey)
            #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil)
            let served = try await cache.respond(to: request(), fetch: origin.fetch)
            #expect(served.outcome == .miss, "the garbled record read as nothing stored")
            #expect(origin.count == 2)
            try await cache.close()
        }
    }
    @Test("an answer from records memory did not keep is not kept either: a kept answer holds its records uncharged")
    func answerIsNotKeptWithoutItsRecords() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let pad = String(repeating: "p", count: 200)
            let origin = TestOrigin { request, _ in
                let variant = request.headerFields[HTTPField.Name("X-V")!] ?? "-"
                return ok("v" + variant, Self.fresh + [("Vary", "X-V"), ("X-Pad", pad)], clock: clock)
            }
            // Twenty variants of one URL: records that memory charges far more than one answer.
            let first = try makeCache(root, clock: clock, kind: .shared)
            for variant in 0..<20 {
                let variantRequest = request(.get, "/resource", [("X-V", "\(variant)")])
                _ = try await text(try await first.respond(to: variantRequest, fetch: origin.fetch))
            }
            let recordKey = HTTPCache.recordKey(first.rules.key(for: request()))
            guard case .variants(let records) = first.memory.value(forKey: recordKey) else {
                Issue.record("the records are not in memory")
                return
            }
            #expect(records.count == 20)
            let recordsCharge = HTTPCache.MemoryEntry.variants(records).charge(forKey: recordKey)
            try await first.close()
            // A memory that cannot keep the records (they are evicted at once) but has room for an answer.
            let cache = try makeCache(root, clock: clock, kind: .shared) {
                $0.memoryCapacity = ByteCount(Int64(recordsCharge - 1))
            }
            let wanted = request(.get, "/resource", [("X-V", "7")])
            let identity = RequestIdentity(wanted)
            let hit = cache.answerFromMemory(
                to: identity,
                hash: identity.hashValue,
                prepares: true,
                readsDiskIndex: true,
                cacheRequest: { _ in wanted },
                prepare: { step -> AnsweredRequest? in
                    guard case .decided = step else { return nil }
                    return AnsweredRequest(identity)
                }
            )
            #expect(hit != nil, "answered from the disk index")
            let recordsHeld = cache.memory.uncountedValue(forKey: recordKey) != nil
            #expect(!recordsHeld, "the records did not fit in memory")
            // PreparedAnswer.cost leaves out the records, which the records' own entry is charged
            // for: an answer kept without that entry holds their bytes beyond memoryCapacity.
            let answerKept = cache.memory.uncountedValue(forKey: HTTPCache.preparedKey(identity.hashValue)) != nil
            #expect(
                !answerKept,
                "an answer was kept holding \(recordsCharge) bytes of records memory is not charged for"
            )
            #expect(origin.count == 20)
            try await cache.close()
        }
    }

    @Test("a removal is final against index reads racing it: once it returns, no read answers and memory keeps nothing")
    func removalRacingIndexReads() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let cache = try makeCache(root, clock: clock, kind: .shared)
            let origin = TestOrigin { _, _ in ok("body", Self.fresh, clock: clock) }
            for round in 0..<200 {
                _ = try await text(try await cache.respond(to: request(), fetch: origin.fetch))
                cache.levels.dropMemory()  // on disk alone: the next read is an index read
                let stop = Atomic<Bool>(false)
                let stopped = Atomic<Bool>(false)
                let reader = Thread {
                    while !stop.load(ordering: .acquiring) {
                        _ = cache.memoryAnswer(to: request(), readsDiskIndex: true)
                    }
                    stopped.store(true, ordering: .releasing)
                }
                reader.start()
                try await cache.remove(cache.rules.key(for: request()))
                #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil, "round \(round)")
                stop.store(true, ordering: .releasing)
                // Its last read may have begun before the removal returned: wait for it to end.
                while !stopped.load(ordering: .acquiring) { await Task.yield() }
                #expect(cache.memoryAnswer(to: request(), readsDiskIndex: true) == nil, "round \(round)")
                #expect(cache.memoryAnswer(to: request()) == nil, "memory kept a removed response, round \(round)")
            }
            try await cache.close()
        }
    }

    @Test("an answer read from the disk index is given, not kept; the same request again, from memory, is kept")
    func diskAnswerIsNotKept() async throws {
        try await withTemporaryDirectory { root in
            let clock = ManualClock(startingAt: t0)
            let (cache, _) = try await reopenedWithStoredResponse(root, clock: clock)
            func answer() -> MemoryHit<AnsweredRequest>? {
                let identity = RequestIdentity(request())
                return cache.answerFromMemory(
                    to: identity,
                    hash: identity.hashValue,
                    prepares: true,
                    readsDiskIndex: true,
                    cacheRequest: { _ in request() },
                    prepare: { step in
                        guard case .decided = step else { return nil }
                        return AnsweredRequest(identity)
                    }
                )
            }
            guard case .decided(let first) = answer() else {
                Issue.record("the answer read from disk was kept, or none was given")
                return
            }
            #expect(first.readFromDisk)
            guard case .prepared = answer() else {
                Issue.record("the answer from memory was not kept")
                return
            }
            try await cache.close()
        }
    }
}
