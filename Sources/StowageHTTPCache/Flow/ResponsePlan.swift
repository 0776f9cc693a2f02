import HTTPTypes

/// What ``HTTPCache/respond(to:body:policy:fetch:)`` does with a request: decided from the
/// request, the `URLCache` policy and what the lookup found, with no storage or network I/O.
/// ``HTTPCache`` carries it out (`perform`); the decision is tested apart from its effects.
indirect enum ResponsePlan: Hashable {
    /// RFC 9111 §4.4: an unsafe method goes to the origin, then what its success touches is
    /// invalidated.
    case forwardUnsafe
    /// The origin answers `request` (the caller's, or one the plan changed); the response is
    /// stored when storable. `collapse`: concurrent requests for the URL wait for this fetch.
    case forward(HTTPRequest, outcome: CacheOutcome, collapse: Bool)
    /// The stored responses must be looked up before anything is decided.
    case lookUp
    /// Serve `record` (its outcome worked out from its age when `nil`), noting `note` once it
    /// is served; if its body is gone, `otherwise`.
    case serve(VariantRecord, outcome: CacheOutcome?, note: String?, otherwise: Fallback)
    /// RFC 5861 `stale-while-revalidate`: serve `record` now and refresh it in the background;
    /// if its body is gone, forward.
    case serveStaleAndRevalidate(VariantRecord)
    /// Validate `record` with a conditional request to the origin.
    case validate(VariantRecord)
    /// `returnCacheDataDontLoad` with nothing stored: `StowageError` `.notCached`.
    case notCached
    /// RFC 9111 §5.2.1.7 `only-if-cached` with nothing usable: a 504.
    case unsatisfiable

    /// What a ``serve(_:outcome:note:otherwise:)`` plan does when the stored body is gone.
    enum Fallback: Hashable {
        /// Forward to the origin, collapsing concurrent requests, noting `note` when given.
        case forward(note: String?)
        /// `returnCacheDataDontLoad`: the origin is not contacted.
        case notCached
    }
}

extension HTTPCache {
    /// The plan before the lookup: requests the cache does not consult are forwarded at once.
    /// Returns ``ResponsePlan/lookUp`` for the rest.
    func plan(for request: HTTPRequest, policy: RequestCachePolicy, noting trace: inout [TraceNote]) -> ResponsePlan {
        guard request.method == .get || request.method == .head else {
            trace.append(
                "§4.4 \(request.method) is not cacheable: forwarded, then stored responses it touches are invalidated"
            )
            return .forwardUnsafe
        }
        if policy != .useProtocolCachePolicy { trace.append("policy \(policy)") }
        if let rule = configuration.bypass.first(where: { $0.matches(request) }) {
            trace.append("bypass (\(rule)): the cache is not consulted; the response is stored when storable")
            return .forward(request, outcome: .bypass, collapse: false)
        }
        if policy == .reloadIgnoringLocalAndRemoteCacheData {
            trace.append(
                "reloadIgnoringLocalAndRemoteCacheData: the cache is not consulted; no-cache asks caches upstream to reload"
            )
            return .forward(Self.reloadingEverywhere(request), outcome: .miss, collapse: false)
        }
        let requestCC = request.headerFields.cacheControl
        if policy == .reloadIgnoringLocalCacheData || requestCC.noStore {
            trace.append(
                requestCC.noStore
                    ? "§5.2.1.5 the request has no-store: the cache is not consulted"
                    : "reloadIgnoringLocalCacheData: the cache is not consulted"
            )
            return .forward(request, outcome: .miss, collapse: false)
        }
        return .lookUp
    }

    /// The plan once the lookup has found `record` (the variant selected for `request`, or
    /// `nil`) at `now`: the policy's rule, or RFC 9111's decision for `useProtocolCachePolicy`.
    func plan(
        for request: HTTPRequest,
        policy: RequestCachePolicy,
        found record: VariantRecord?,
        now: Double,
        noting trace: inout [TraceNote]
    ) -> ResponsePlan {
        let miss = ResponsePlan.forward(request, outcome: .miss, collapse: true)
        let bodyGone = ResponsePlan.Fallback.forward(note: "the stored body is gone: forwarded")
        switch policy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            let otherwise: ResponsePlan.Fallback = policy == .returnCacheDataDontLoad ? .notCached : .forward(note: nil)
            guard let record else {
                if policy == .returnCacheDataDontLoad {
                    trace.append("returnCacheDataDontLoad: nothing stored, the origin is not contacted")
                    return .notCached
                }
                return miss
            }
            return .serve(
                record,
                outcome: nil,
                note: "\(policy): the stored response is used whatever its age",
                otherwise: otherwise
            )
        case .reloadRevalidatingCacheData:
            guard let record else { return miss }
            trace.append("reloadRevalidatingCacheData: validate with the origin")
            return .validate(record)
        case .useProtocolCachePolicy, .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData:
            break
        }
        switch rules.decide(request, stored: record?.stored, now: now, noting: &trace) {
        case .serve(let outcome):
            guard let record else { return miss }
            return .serve(record, outcome: outcome, note: nil, otherwise: bodyGone)
        case .serveStaleAndRevalidate:
            guard let record else { return miss }
            return .serveStaleAndRevalidate(record)
        case .validate:
            guard let record else { return miss }
            return .validate(record)
        case .forward:
            return miss
        case .unsatisfiable:
            return .unsatisfiable
        }
    }
}
