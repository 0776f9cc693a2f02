import Foundation
import HTTPTypes
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// What `HTTPCache` may store, decided without I/O: RFC 9111 §3's storability, the fields kept,
/// the will-cache hook's proposal and the size limits.
@Suite struct StoreAdmissionTests {
    private func candidate(
        _ cache: HTTPCache,
        _ pairs: [(String, String)],
        for request: HTTPRequest = request()
    ) throws -> StoreCandidate {
        guard case .admitted(let candidate) = cache.admission(of: response(200, pairs), for: request, responseTime: 0)
        else { throw StowageError(code: .invalidArgument, message: "the response was refused") }
        return candidate
    }

    @Test("A storable response is admitted with the fields a stored copy keeps; others are refused and say why")
    func originResponse() throws {
        try withTemporaryDirectory { root in
            let cache = try makeCache(root, clock: ManualClock(startingAt: t0), kind: .shared) {
                $0.tagFields = [HTTPField.Name("Surrogate-Key")!]
            }
            let admitted = try candidate(
                cache,
                [("Cache-Control", "max-age=60"), ("Surrogate-Key", "a b"), ("Connection", "close")]
            )
            #expect(admitted.response.headerFields[HTTPField.Name("Surrogate-Key")!] == nil)
            #expect(admitted.response.headerFields[.connection] == nil)
            #expect(admitted.isMemoryOnly == false)
            guard
                case .refused(let note, _) = cache.admission(
                    of: response(200, [("Cache-Control", "no-store")]),
                    for: request(),
                    responseTime: 0
                )
            else {
                Issue.record("a no-store response is admitted")
                return
            }
            #expect(note.contains("no-store"))
            guard
                case .refused = cache.admission(
                    of: response(200, [("Cache-Control", "private, max-age=60")]),
                    for: request(),
                    responseTime: 0
                )
            else {
                Issue.record("a shared cache admits a private response")
                return
            }
        }
    }

    @Test("A disabled cache refuses everything")
    func disabled() throws {
        let cache = try HTTPCache(
            directory: nil,
            configuration: {
                var configuration = HTTPCache.Configuration()
                configuration.memoryCapacity = .zero
                return configuration
            }()
        )
        guard case .refused(let note, _) = cache.admission(of: response(200), for: request(), responseTime: 0) else {
            Issue.record("a disabled cache admits a response")
            return
        }
        #expect(note.contains("disabled"))
    }

    @Test(
        "The will-cache hook's proposal: its fields, its body with a matching Content-Length, memory only; an unstorable one is refused"
    )
    func proposal() throws {
        try withTemporaryDirectory { root in
            let cache = try makeCache(root, clock: ManualClock(startingAt: t0))
            let origin = try candidate(cache, [("Cache-Control", "max-age=60"), ("Content-Length", "5")])
            var proposal = CacheProposal(
                request: request(),
                response: origin.response,
                body: Array("hello, world".utf8)
            )
            proposal.storage = .memoryOnly
            proposal.userInfo = ["k": "v"]
            guard
                case .admitted(let admitted) = cache.admission(
                    of: proposal,
                    replacing: origin,
                    for: request(),
                    responseTime: 0,
                    whole: Array("hello".utf8)
                )
            else {
                Issue.record("the hook's proposal is refused")
                return
            }
            #expect(admitted.replacement == Array("hello, world".utf8))
            #expect(admitted.response.headerFields[.contentLength] == "12")
            #expect(admitted.isMemoryOnly)
            #expect(admitted.userInfo == ["k": "v"])
            // The same bytes as the origin's are not a replacement.
            proposal.body = Array("hello".utf8)
            guard
                case .admitted(let same) = cache.admission(
                    of: proposal,
                    replacing: origin,
                    for: request(),
                    responseTime: 0,
                    whole: Array("hello".utf8)
                )
            else {
                Issue.record("the hook's proposal is refused")
                return
            }
            #expect(same.replacement == nil)
            proposal.response.status = .partialContent
            guard
                case .refused(let note, _) = cache.admission(
                    of: proposal,
                    replacing: origin,
                    for: request(),
                    responseTime: 0,
                    whole: nil
                )
            else {
                Issue.record("the hook turned the response into a 206 and it is admitted")
                return
            }
            #expect(note.contains("will-cache hook"))
        }
    }

    @Test("Size limits: memory-only candidates by the memory limit, others by the disk limit")
    func sizeLimits() throws {
        try withTemporaryDirectory { root in
            let cache = try makeCache(root, clock: ManualClock(startingAt: t0)) {
                $0.memoryCapacity = ByteCount(1_000)
                $0.diskCapacity = ByteCount(100_000)
                $0.maximumEntryFraction = 0.5
            }
            var candidate = try candidate(cache, [("Cache-Control", "max-age=60")])
            #expect(cache.sizeRefusal(of: candidate, originLength: 50_000) == nil)
            #expect(cache.sizeRefusal(of: candidate, originLength: 50_001)?.contains("disk limit of 50000") == true)
            #expect(cache.sizeRefusal(of: candidate, originLength: nil) == nil)
            candidate.isMemoryOnly = true
            #expect(cache.sizeRefusal(of: candidate, originLength: 501)?.contains("memory limit of 500") == true)
            candidate.replacement = [UInt8](repeating: 0, count: 600)
            #expect(cache.sizeRefusal(of: candidate, originLength: 10)?.contains("will-cache hook's body") == true)
        }
    }
}
