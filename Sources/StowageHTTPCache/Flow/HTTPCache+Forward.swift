import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore

extension HTTPCache {
    /// Fetches `request` from the origin and stores the response when allowed. With `collapse`,
    /// concurrent callers for the same key wait for one fetch and then read the stored response.
    func forward(
        _ request: HTTPRequest,
        key: CacheKey,
        outcome: CacheOutcome,
        collapse: Bool,
        fetch: @escaping HTTPFetch
    ) async throws -> CachedResponse {
        let collapseKey = key.uri
        let leads: Bool
        // A disabled cache stores nothing a waiting request could be served: each one fetches.
        if collapse, mode != .disabled, configuration.collapsesRequests, request.method == .get,
            !CacheRules.isConditional(request)
        {
            leads = collapser.tryLead(collapseKey)
            if !leads {
                let stored = await collapser.wait(for: collapseKey, timeout: configuration.collapseTimeout)
                if stored, var served = try await storedHit(for: request, key: key) {
                    served.status.collapsed = true
                    served.trace.append("collapsed: waited for another request's fetch and served what it stored")
                    return served
                }
                var alone = try await forward(request, key: key, outcome: outcome, collapse: false, fetch: fetch)
                alone.trace.insert(
                    "collapsed: the other request stored nothing usable (or timed out): fetched alone",
                    at: 0
                )
                return alone
            }
            // A leader that looked the key up just before the previous leader stored and
            // finished must not fetch again: look once more, now that no one else can lead.
            if leads {
                let served: CachedResponse?
                do {
                    served = try await storedHit(for: request, key: key)
                } catch {
                    collapser.finish(collapseKey, stored: false)
                    throw error
                }
                if var served {
                    collapser.finish(collapseKey, stored: true)
                    served.trace.append("stored by a concurrent request after this one's lookup: served from the cache")
                    return served
                }
            }
        } else {
            leads = false
        }
        let finish: @Sendable (Bool) -> Void = { [collapser] stored in
            if leads { collapser.finish(collapseKey, stored: stored) }
        }
        let exchanged: OriginExchange
        do {
            exchanged = try await exchange(request, through: fetch)
        } catch {
            finish(false)
            throw error
        }
        let response = exchanged.response
        let store: StoreOutcome
        do {
            store = try await storeIfAllowed(exchanged, for: request, key: key, onDone: finish)
        } catch {
            finish(false)
            throw error
        }
        if !store.isUnderWay { finish(false) }
        var served = CachedResponse(
            response: response,
            body: store.body,
            status: status(outcome, after: store, response)
        )
        served.userInfo = store.userInfo
        served.trace = ["fetched from the origin: \(response.status.code)", store.note]
        return served
    }

    /// The stored response for `request` if one may be served now without the origin: what a
    /// concurrent request for the same key fetched and stored.
    private func storedHit(for request: HTTPRequest, key: CacheKey) async throws -> CachedResponse? {
        let now = self.now
        guard let record = selectVariant(request, in: try await variants(for: key)),
            case .serve = rules.decide(request, stored: record.stored, now: now)
        else { return nil }
        return try await serve(record, to: request, now: now, outcome: .hit)
    }

    /// Unsafe methods: forwarded as they are, then §4.4 invalidation.
    func forwardUnsafe(
        _ request: HTTPRequest,
        body: HTTPBody?,
        fetch: @escaping HTTPFetch
    ) async throws -> CachedResponse {
        let (response, responseBody) = try await fetch(request, body)
        try await invalidate(after: request, response: response)
        var served = CachedResponse(
            response: response,
            body: responseBody,
            status: status(.bypass, forwardStatus: response.status.code, detail: "method")
        )
        served.trace = [
            "fetched from the origin: \(response.status.code); not stored (§3 only GET responses are stored)"
        ]
        return served
    }

    /// The `Cache-Status` of a response fetched from the origin, after `store` decided about it.
    func status(_ outcome: CacheOutcome, after store: StoreOutcome, _ response: HTTPResponse) -> CacheStatus {
        status(
            outcome,
            forwardStatus: response.status.code,
            stored: store.isCommitted,
            detail: store.cacheStatusDetail
        )
    }

    /// Bodies up to this size with a known length are read whole before the response is
    /// answered, so `Cache-Status` says `stored` only when the store committed, and a body the
    /// origin cuts short is an error instead of half a response (nginx buffers responses too).
    static let wholeBodyReadLimit: Int64 = 256 * 1024

    /// What ``storeIfAllowed(_:for:key:onDone:)`` did.
    struct StoreOutcome {
        /// The body to hand to the caller.
        var body: HTTPBody
        /// A store started (committed already, or committing as the body is read).
        var isUnderWay: Bool
        /// The store committed before the response is answered.
        var isCommitted: Bool
        /// Why, for traces.
        var note: String
        /// RFC 9211 `detail` for a response not stored for a reason the client may care about.
        var detail: String? = nil
        /// The will-cache hook's user info stored with the response.
        var userInfo: [String: String] = [:]

        /// RFC 9211 `detail`: `storing` for a store still under way — the field goes out with the
        /// head, before the body is read, so it says what is true then: the store has started
        /// (a volume that fills while the body streams fails it later, logged). A store the
        /// cache knew could not fit never starts and says why instead.
        var cacheStatusDetail: String? { detail ?? (isUnderWay && !isCommitted ? "storing" : nil) }
    }

    /// RFC 9211 `detail` of a response not stored because the disk cache has no room for it
    /// (a full volume, or a hard size limit), with no `stored` parameter.
    static let noSpaceDetail = "not-stored-no-space"

    /// Stores the origin's response if the rules, the forced-expiry rules and the will-cache
    /// hook allow it.
    /// Returns the body to hand to the caller (recorded as it is read), whether a store is
    /// under way or committed, and why (for traces); `onDone` reports when it completes.
    ///
    /// - Throws: What reading a small body whole throws (the origin closed or timed out mid-body).
    func storeIfAllowed(
        _ exchanged: OriginExchange,
        for request: HTTPRequest,
        key: CacheKey,
        onDone: @escaping @Sendable (Bool) -> Void
    ) async throws -> StoreOutcome {
        let (response, body) = (exchanged.response, exchanged.body)
        let (requestTime, responseTime) = (exchanged.requestTime, exchanged.responseTime)
        if mode == .disabled {
            return StoreOutcome(
                body: body,
                isUnderWay: false,
                isCommitted: false,
                note: "not stored: the cache is disabled (memoryCapacity and diskCapacity 0, as URLCache's)"
            )
        }
        let forcedRule = configuration.forcedExpiry.first { $0.applies(to: request) }
        if case .notStorable(let reason) = rules.storability(of: response, for: request, forced: forcedRule != nil) {
            return StoreOutcome(body: body, isUnderWay: false, isCommitted: false, note: "not stored: \(reason)")
        }
        if configuration.minimumUses > 1 {
            let count = uses.record(key.uri)
            if count < configuration.minimumUses {
                return StoreOutcome(
                    body: body,
                    isUnderWay: false,
                    isCommitted: false,
                    note: "not stored: requested \(count) of the \(configuration.minimumUses) times minimumUses asks"
                )
            }
        }
        var stored = HTTPResponse(
            status: response.status,
            headerFields: rules.fieldsToStore(response.headerFields, responseTime: responseTime)
        )
        let tags = tags(in: response.headerFields)
        for name in configuration.tagFields { stored.headerFields[values: name] = [] }
        try await recordTags(tags, uri: key.uri)
        // Without a disk tier every response is kept as the will-cache hook's memory-only ones are.
        var memoryOnly = disk == nil
        let originLength = body.length ?? response.headerFields[.contentLength].flatMap({ Int64($0) })
        // The body handed to the caller: the origin's, or the same bytes once read whole.
        var served = body
        var whole = body.bytesInMemory
        var userInfo: [String: String] = [:]
        // Bytes the will-cache hook asked to store instead of the origin's body.
        var replacement: [UInt8]?
        if let hook = configuration.willCache {
            // NSURLSession's `willCacheResponse` sees the data: a body small enough is read
            // whole first, so the hook can read or rewrite it.
            if whole == nil, let originLength, originLength <= Self.wholeBodyReadLimit {
                let bytes = try await body.collect(upTo: Int(Self.wholeBodyReadLimit))
                whole = bytes
                served = HTTPBody(bytes: bytes)
            }
            let proposal: CacheProposal?
            do {
                proposal = try await hook(CacheProposal(request: request, response: stored, body: whole))
                if let proposal { try CacheProposal.validate(userInfo: proposal.userInfo) }
            } catch {
                // Nothing has been written for this response yet, so what was stored for the
                // key before is left whole: the hook's failure costs this store only.
                configuration.logger.warning(
                    "the will-cache hook failed; the response is served but not stored: \(error)",
                    metadata: ["uri": "\(key.uri)"]
                )
                return StoreOutcome(
                    body: served,
                    isUnderWay: false,
                    isCommitted: false,
                    note: "not stored: the will-cache hook threw (\(error)); what was stored before is kept"
                )
            }
            guard let proposal else {
                configuration.logger.debug("will-cache hook refused a response", metadata: ["uri": "\(key.uri)"])
                return StoreOutcome(
                    body: served,
                    isUnderWay: false,
                    isCommitted: false,
                    note: "not stored: the will-cache hook refused it"
                )
            }
            // RFC 9111 §3 applies to what is stored, not only to what the origin sent: a hook
            // that turns the response into a 206, a 304, a `no-store` or a `Vary: *` one must
            // not have it replayed on hits (a 304 to an unconditional GET).
            if case .notStorable(let reason) = rules.storability(
                of: proposal.response,
                for: request,
                forced: forcedRule != nil
            ) {
                return StoreOutcome(
                    body: served,
                    isUnderWay: false,
                    isCommitted: false,
                    note: "not stored: the will-cache hook's response is not storable (\(reason))"
                )
            }
            // §3.1 and §5.2.2.7 apply to the hook's fields as to the origin's: hop-by-hop fields,
            // a shared cache's private fields and unstored cookies stay out of the stored copy.
            stored = HTTPResponse(
                status: proposal.response.status,
                headerFields: rules.fieldsToStore(proposal.response.headerFields, responseTime: responseTime)
            )
            memoryOnly = memoryOnly || proposal.storage == .memoryOnly
            userInfo = proposal.userInfo
            if let bytes = proposal.body, bytes != whole {
                replacement = bytes
                // Hits must not announce the origin's length for the hook's bytes.
                if stored.headerFields[.contentLength] != nil {
                    stored.headerFields[.contentLength] = String(bytes.count)
                }
            }
        }
        let limit = memoryOnly ? memoryBodyLimit : diskBodyLimit
        let length = replacement.map { Int64($0.count) } ?? originLength
        if let length, length > limit {
            let what = replacement == nil ? "the body" : "the will-cache hook's body"
            return StoreOutcome(
                body: served,
                isUnderWay: false,
                isCommitted: false,
                note:
                    "not stored: \(what) (\(length) bytes) is over the \(memoryOnly ? "memory" : "disk") limit of \(limit) bytes"
            )
        }
        if !memoryOnly, let disk {
            do {
                // One statvfs: bounded, run inline. Known before the head goes out, unlike a
                // failure while a streamed body is written.
                try disk.checkRoom(forValueOfLength: length)
            } catch let error as StowageError where error.code == .noSpace {
                configuration.logger.notice(
                    "not storing a response: \(error.message)",
                    metadata: ["uri": "\(key.uri)"]
                )
                return StoreOutcome(
                    body: served,
                    isUnderWay: false,
                    isCommitted: false,
                    note: "not stored: \(error.message)",
                    detail: Self.noSpaceDetail
                )
            }
        }
        let record = VariantRecord(
            stored: StoredResponse(
                response: stored,
                requestSeconds: requestTime,
                responseSeconds: responseTime,
                varyingFields: rules.varyingFields(of: stored, request: request),
                forcedExpirySeconds: forcedRule.map { responseTime + $0.interval.timeInterval },
                userInfo: userInfo
            ),
            bodyKey: Self.makeBodyKey(),
            isMemoryOnly: memoryOnly
        )
        var note = "§3 stored"
        if memoryOnly { note += disk == nil ? " in memory (a memory-only cache)" : " in memory only (will-cache hook)" }
        if let forcedRule {
            note += "; a forced expiry of \(Int(forcedRule.interval.timeInterval)) s overrides its freshness"
        }
        if rules.usesHeuristicFreshness(record.stored), forcedRule == nil {
            note += "; §4.2.2 no explicit freshness: heuristic from Last-Modified"
        }
        if let replacement {
            note += "; the will-cache hook's body (\(replacement.count) bytes) is stored, the origin's is served now"
        }
        if !userInfo.isEmpty { note += "; with \(userInfo.count) user info entries" }
        let recorder = BodyRecorder(cache: self, key: key, record: record, onDone: onDone)
        if let replacement, whole == nil {
            // The origin's body streams to the caller: the hook's bytes are stored only once it
            // has arrived whole (§3.3), not for a response whose connection drops mid-body.
            return StoreOutcome(
                body: recorder.tee(body, storingOnCompletion: replacement),
                isUnderWay: true,
                isCommitted: false,
                note: note + " (once the origin's body has been read)",
                userInfo: userInfo
            )
        }
        if replacement == nil, whole == nil, let originLength, originLength <= Self.wholeBodyReadLimit {
            let bytes = try await body.collect(upTo: Int(Self.wholeBodyReadLimit))
            whole = bytes
            served = HTTPBody(bytes: bytes)
        }
        if let bytes = replacement ?? whole {
            await recorder.append(bytes)
            let committed = await recorder.finish()
            return StoreOutcome(
                body: served,
                isUnderWay: true,
                isCommitted: committed,
                note: committed ? note : "not stored: writing it failed (see the log)",
                userInfo: committed ? userInfo : [:]
            )
        }
        return StoreOutcome(
            body: recorder.tee(body),
            isUnderWay: true,
            isCommitted: false,
            note: note + " (as the body is read)",
            userInfo: userInfo
        )
    }
}
