import Foundation
import HTTPTypes
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHTTPCache

/// `HTTPCache`'s decision, planned without storage or network I/O: which requests skip the
/// cache, what each `URLCache` policy does with what the lookup found, and RFC 9111's decision.
@Suite struct ResponsePlanTests {
    /// A cache whose plans are under test; nothing is read or written by planning.
    private func makePlanner(
        _ root: URL,
        configure: (inout HTTPCache.Configuration) -> Void = { _ in }
    ) throws -> HTTPCache {
        try makeCache(root, clock: ManualClock(startingAt: t0), configure: configure)
    }

    /// A record stored at `t0` with `pairs` as its fields.
    private func record(_ pairs: [(String, String)]) -> VariantRecord {
        VariantRecord(stored: stored(response(200, pairs)), bodyKey: "b", isMemoryOnly: false)
    }

    private func plan(
        _ cache: HTTPCache,
        _ request: HTTPRequest,
        policy: RequestCachePolicy = .useProtocolCachePolicy,
        found: VariantRecord?,
        at seconds: Double = 0
    ) -> ResponsePlan {
        var trace: [TraceNote] = []
        let first = cache.plan(for: request, policy: policy, noting: &trace)
        guard first == .lookUp else { return first }
        return cache.plan(
            for: request,
            policy: policy,
            found: found,
            now: t0.timeIntervalSince1970 + seconds,
            noting: &trace
        )
    }

    @Test("Requests the cache does not consult are forwarded before any lookup")
    func forwardedWithoutLookup() throws {
        try withTemporaryDirectory { root in
            let cache = try makePlanner(root) { $0.bypass = [.header(HTTPField.Name("X-Debug")!)] }
            var trace: [TraceNote] = []
            #expect(cache.plan(for: request(.post), policy: .useProtocolCachePolicy, noting: &trace) == .forwardUnsafe)
            let debug = request(.get, "/resource", [("X-Debug", "1")])
            #expect(
                cache.plan(for: debug, policy: .useProtocolCachePolicy, noting: &trace)
                    == .forward(debug, outcome: .bypass, collapse: false)
            )
            let noStore = request(.get, "/resource", [("Cache-Control", "no-store")])
            #expect(
                cache.plan(for: noStore, policy: .useProtocolCachePolicy, noting: &trace)
                    == .forward(noStore, outcome: .miss, collapse: false)
            )
            #expect(
                cache.plan(for: request(), policy: .reloadIgnoringLocalCacheData, noting: &trace)
                    == .forward(request(), outcome: .miss, collapse: false)
            )
            guard
                case .forward(let reload, .miss, false) = cache.plan(
                    for: request(),
                    policy: .reloadIgnoringLocalAndRemoteCacheData,
                    noting: &trace
                )
            else {
                Issue.record("reloadIgnoringLocalAndRemoteCacheData is not a forward")
                return
            }
            #expect(reload.headerFields[.cacheControl] == "no-cache")
            #expect(reload.headerFields[.pragma] == "no-cache")
            #expect(cache.plan(for: request(), policy: .useProtocolCachePolicy, noting: &trace) == .lookUp)
        }
    }

    @Test("RFC 9111's decision on what the lookup found: fresh, stale, nothing, only-if-cached")
    func protocolPolicy() throws {
        try withTemporaryDirectory { root in
            let cache = try makePlanner(root)
            let fresh = record([("Cache-Control", "max-age=60")])
            guard case .serve(fresh, .hit?, nil, .forward) = plan(cache, request(), found: fresh, at: 10) else {
                Issue.record("a fresh response is not served as a hit")
                return
            }
            #expect(plan(cache, request(), found: fresh, at: 120) == .validate(fresh))
            let swr = record([("Cache-Control", "max-age=60, stale-while-revalidate=600")])
            #expect(plan(cache, request(), found: swr, at: 120) == .serveStaleAndRevalidate(swr))
            #expect(plan(cache, request(), found: nil) == .forward(request(), outcome: .miss, collapse: true))
            let onlyIfCached = request(.get, "/resource", [("Cache-Control", "only-if-cached")])
            #expect(plan(cache, onlyIfCached, found: nil) == .unsatisfiable)
        }
    }

    @Test("URLCache's policies: stored data whatever its age, don't-load, revalidate")
    func urlCachePolicies() throws {
        try withTemporaryDirectory { root in
            let cache = try makePlanner(root)
            let old = record([("Cache-Control", "max-age=60")])
            guard
                case .serve(old, nil, .some, .forward(nil)) = plan(
                    cache,
                    request(),
                    policy: .returnCacheDataElseLoad,
                    found: old,
                    at: 3_600
                )
            else {
                Issue.record("returnCacheDataElseLoad does not serve a stale response")
                return
            }
            guard
                case .serve(old, nil, .some, .notCached) = plan(
                    cache,
                    request(),
                    policy: .returnCacheDataDontLoad,
                    found: old,
                    at: 3_600
                )
            else {
                Issue.record("returnCacheDataDontLoad falls back to the origin")
                return
            }
            #expect(plan(cache, request(), policy: .returnCacheDataDontLoad, found: nil) == .notCached)
            #expect(
                plan(cache, request(), policy: .returnCacheDataElseLoad, found: nil)
                    == .forward(request(), outcome: .miss, collapse: true)
            )
            #expect(plan(cache, request(), policy: .reloadRevalidatingCacheData, found: old, at: 1) == .validate(old))
        }
    }
}
