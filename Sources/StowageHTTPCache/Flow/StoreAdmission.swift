import HTTPTypes
import StowageCore

/// What the cache may store of an origin's response, decided without I/O: RFC 9111 §3's
/// storability, the fields a stored copy keeps, the will-cache hook's proposal and the size
/// limits. ``HTTPCache``'s `storeIfAllowed` carries the decision out (counting uses, reading
/// the body, calling the hook, writing).
enum StoreAdmission {
    /// Not stored, and why (for traces); `detail` is RFC 9211's for a reason the client may
    /// care about.
    case refused(note: String, detail: String? = nil)
    /// Stored as `StoreCandidate` says, unless a later step refuses it.
    case admitted(StoreCandidate)
}

/// A response on its way into the cache: what will be stored and where.
struct StoreCandidate {
    /// The response as stored: fields RFC 9111 §3.1 and §5.2.2.7 allow, tag fields removed.
    var response: HTTPResponse
    /// Kept in memory only: a cache without a disk tier, or the will-cache hook asked.
    var isMemoryOnly: Bool
    /// The operator's forced expiry that applies to the request, if any.
    var forcedExpiry: ForcedExpiry?
    /// The will-cache hook's user info.
    var userInfo: [String: String] = [:]
    /// Bytes the will-cache hook asked to store instead of the origin's body.
    var replacement: [UInt8]? = nil
}

extension HTTPCache {
    /// Whether the origin's `response` to `request`, received at `responseTime`, may be stored,
    /// and as what.
    func admission(of response: HTTPResponse, for request: HTTPRequest, responseTime: Double) -> StoreAdmission {
        if mode == .disabled {
            return .refused(
                note: "not stored: the cache is disabled (memoryCapacity and diskCapacity 0, as URLCache's)"
            )
        }
        let forced = configuration.forcedExpiry.first { $0.applies(to: request) }
        if case .notStorable(let reason) = rules.storability(of: response, for: request, forced: forced != nil) {
            return .refused(note: "not stored: \(reason)")
        }
        var stored = HTTPResponse(
            status: response.status,
            headerFields: rules.fieldsToStore(response.headerFields, responseTime: responseTime)
        )
        for name in configuration.tagFields { stored.headerFields[values: name] = [] }
        return .admitted(StoreCandidate(response: stored, isMemoryOnly: disk == nil, forcedExpiry: forced))
    }

    /// `candidate` as the will-cache hook's `proposal` changes it, given the body the hook saw
    /// (`whole`, when it was read whole).
    func admission(
        of proposal: CacheProposal,
        replacing candidate: StoreCandidate,
        for request: HTTPRequest,
        responseTime: Double,
        whole: [UInt8]?
    ) -> StoreAdmission {
        // RFC 9111 §3 applies to what is stored, not only to what the origin sent: a hook that
        // turns the response into a 206, a 304, a `no-store` or a `Vary: *` one must not have
        // it replayed on hits (a 304 to an unconditional GET).
        if case .notStorable(let reason) = rules.storability(
            of: proposal.response,
            for: request,
            forced: candidate.forcedExpiry != nil
        ) {
            return .refused(note: "not stored: the will-cache hook's response is not storable (\(reason))")
        }
        var admitted = candidate
        // §3.1 and §5.2.2.7 apply to the hook's fields as to the origin's: hop-by-hop fields, a
        // shared cache's private fields and unstored cookies stay out of the stored copy.
        admitted.response = HTTPResponse(
            status: proposal.response.status,
            headerFields: rules.fieldsToStore(proposal.response.headerFields, responseTime: responseTime)
        )
        admitted.isMemoryOnly = candidate.isMemoryOnly || proposal.storage == .memoryOnly
        admitted.userInfo = proposal.userInfo
        if let bytes = proposal.body, bytes != whole {
            admitted.replacement = bytes
            // Hits must not announce the origin's length for the hook's bytes.
            if admitted.response.headerFields[.contentLength] != nil {
                admitted.response.headerFields[.contentLength] = String(bytes.count)
            }
        }
        return .admitted(admitted)
    }

    /// Why `candidate` is too large to store, given the origin's body length; `nil` when it fits.
    func sizeRefusal(of candidate: StoreCandidate, originLength: Int64?) -> String? {
        let limit = candidate.isMemoryOnly ? memoryBodyLimit : diskBodyLimit
        guard let length = candidate.replacement.map({ Int64($0.count) }) ?? originLength, length > limit else {
            return nil
        }
        let what = candidate.replacement == nil ? "the body" : "the will-cache hook's body"
        let tier = candidate.isMemoryOnly ? "memory" : "disk"
        return "not stored: \(what) (\(length) bytes) is over the \(tier) limit of \(limit) bytes"
    }

    /// The record `candidate` is stored as, for `request` sent at `requestTime` and answered at
    /// `responseTime`, with a new body key.
    func record(
        of candidate: StoreCandidate,
        for request: HTTPRequest,
        requestTime: Double,
        responseTime: Double
    )
        -> VariantRecord
    {
        VariantRecord(
            stored: StoredResponse(
                response: candidate.response,
                requestSeconds: requestTime,
                responseSeconds: responseTime,
                varyingFields: rules.varyingFields(of: candidate.response, request: request),
                forcedExpirySeconds: candidate.forcedExpiry.map { responseTime + $0.interval.timeInterval },
                userInfo: candidate.userInfo
            ),
            bodyKey: Self.makeBodyKey(),
            isMemoryOnly: candidate.isMemoryOnly
        )
    }

    /// What a trace says of a stored `record` made from `candidate`.
    func storeNote(for candidate: StoreCandidate, record: VariantRecord) -> String {
        var note = "§3 stored"
        if candidate.isMemoryOnly {
            note += disk == nil ? " in memory (a memory-only cache)" : " in memory only (will-cache hook)"
        }
        if let forced = candidate.forcedExpiry {
            note += "; a forced expiry of \(Int(forced.interval.timeInterval)) s overrides its freshness"
        }
        if rules.usesHeuristicFreshness(record.stored), candidate.forcedExpiry == nil {
            note += "; §4.2.2 no explicit freshness: heuristic from Last-Modified"
        }
        if let replacement = candidate.replacement {
            note += "; the will-cache hook's body (\(replacement.count) bytes) is stored, the origin's is served now"
        }
        if !candidate.userInfo.isEmpty { note += "; with \(candidate.userInfo.count) user info entries" }
        return note
    }
}
