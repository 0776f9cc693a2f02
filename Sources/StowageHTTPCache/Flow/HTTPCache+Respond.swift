import Foundation
import HTTPTypes
import Logging
import StowageCache
import Tracing

extension HTTPCache {
    /// Answers `request` from the cache or the origin, following `policy` and RFC 9111.
    ///
    /// - Fresh stored responses are served with `Age`; stale ones are validated with a
    ///   conditional request the cache builds, and a 304 refreshes and serves them.
    /// - A 304 reaches the caller only when the caller's request was conditional itself (and
    ///   its condition holds).
    /// - Storable responses are stored as their body streams through to the caller; concurrent
    ///   requests for one uncached URL wait for that single fetch (``Configuration/collapsesRequests``).
    /// - Unsafe methods go to the origin and invalidate what their success touches (§4.4).
    /// - Query parameters that ``CacheKeyRules/ignoredQueryParameters`` leaves out of the key
    ///   are removed before the request goes to the origin, so what is stored under a key
    ///   cannot depend on them (``CacheKeyRules/removingIgnoredParameters(from:)``).
    ///
    /// - Parameters:
    ///   - request: The request, with scheme and authority set (they form the cache key).
    ///   - body: The request body, for methods that have one.
    ///   - policy: One of `URLCache`'s five policies; default ``RequestCachePolicy/useProtocolCachePolicy``.
    ///   - fetch: Sends a request to the origin.
    /// - Returns: The response, its body and how it was served.
    /// - Throws: `StowageError` `.notCached` for a miss under
    ///   ``RequestCachePolicy/returnCacheDataDontLoad``; what `fetch` throws when the origin
    ///   fails and no stale response may stand in (RFC 5861 `stale-if-error`).
    public func respond(
        to request: HTTPRequest,
        body: HTTPBody? = nil,
        policy: RequestCachePolicy = .useProtocolCachePolicy,
        fetch: @escaping HTTPFetch
    ) async throws -> CachedResponse {
        // A hit held in memory needs no suspension: answered as the event loop of a server is.
        // No span for it either: a memory hit makes no tracing call (HTTPCacheTracing).
        if policy == .useProtocolCachePolicy, let served = respondFromMemory(to: request) { return served }
        return try await levels.activeTracer.withSpanIfTracing(HTTPCacheTracing.SpanName.respond) { span in
            var trace: [TraceNote] = []
            trace.reserveCapacity(4)  // a hit notes 3 steps: one allocation, not one per growth
            let request = rules.keyRules.removingIgnoredParameters(from: request)
            if span.isRecording { recordRequest(request, on: span) }
            var served = try await respond(to: request, body: body, policy: policy, fetch: fetch, trace: &trace)
            finish(&served, for: request, trace: trace)
            if span.isRecording { recordAnswer(served, on: span) }
            return served
        }
    }

    /// What every answer gets on its way out: the decision's steps before the response's own,
    /// tag fields removed, and the decision logged at debug level.
    func finish(_ served: inout CachedResponse, for request: HTTPRequest, trace: [TraceNote]) {
        served.notes = served.notes.isEmpty ? trace : trace + served.notes
        // Tags are for the operator's bans, not for clients (as CDNs strip Surrogate-Key).
        for name in configuration.tagFields { served.response.headerFields[values: name] = [] }
        configuration.logger.debug(
            "cache decision",
            metadata: [
                "uri": "\(rules.key(for: request).uri)", "outcome": "\(served.outcome)",
                "trace": "\(served.trace.joined(separator: " | "))",
            ]
        )
    }

    /// `request` with `no-cache` added to its `Cache-Control` (its other directives kept) and
    /// `Pragma: no-cache` for HTTP/1.0 caches: every cache on the way reloads (§5.2.1.4, §5.4).
    static func reloadingEverywhere(_ request: HTTPRequest) -> HTTPRequest {
        var request = request
        if !request.headerFields.cacheControl.noCache {
            let directives = request.headerFields[values: .cacheControl] + ["no-cache"]
            request.headerFields[.cacheControl] = directives.joined(separator: ", ")
        }
        let pragma = request.headerFields[values: .pragma]
        if !pragma.contains(where: {
            $0.split(separator: ",").contains { $0.trimmingWhitespace().lowercased() == "no-cache" }
        }) {
            request.headerFields.append(HTTPField(name: .pragma, value: "no-cache"))
        }
        return request
    }

    /// ``respond(to:body:policy:fetch:)``, noting in `trace` why it answers as it does; the
    /// steps after the decision (validation, storing) come in the response's own trace.
    ///
    /// The decision is ``ResponsePlan``'s (no I/O); this looks the request up when the plan
    /// asks to and carries the plan out.
    private func respond(
        to request: HTTPRequest,
        body: HTTPBody?,
        policy: RequestCachePolicy,
        fetch: @escaping HTTPFetch,
        trace: inout [TraceNote]
    ) async throws -> CachedResponse {
        var plan = plan(for: request, policy: policy, noting: &trace)
        var now = self.now
        if plan == .lookUp {
            let records = try await variants(for: rules.key(for: request))
            let record = selectVariant(request, in: records)
            trace.append(lookupNote(records: records, found: record != nil))
            now = self.now  // ages are worked out from after the lookup, as served
            plan = self.plan(for: request, policy: policy, found: record, now: now, noting: &trace)
        }
        return try await perform(plan, for: request, body: body, now: now, fetch: fetch, trace: &trace)
    }

    /// Carries out `plan` for `request`, decided at `now`: the effects of the decision.
    private func perform(
        _ plan: ResponsePlan,
        for request: HTTPRequest,
        body: HTTPBody?,
        now: Double,
        fetch: @escaping HTTPFetch,
        trace: inout [TraceNote]
    ) async throws -> CachedResponse {
        let key = rules.key(for: request)
        switch plan {
        case .forwardUnsafe:
            return try await forwardUnsafe(request, body: body, fetch: fetch)
        case .forward(let forwarded, let outcome, let collapse):
            return try await forward(forwarded, key: key, outcome: outcome, collapse: collapse, fetch: fetch)
        case .lookUp:
            preconditionFailure("respond(to:body:policy:fetch:trace:) looks the request up before performing")
        case .serve(let record, let outcome, let note, let otherwise):
            if let served = try await serve(record, to: request, now: now, outcome: outcome) {
                if let note { trace.append(note) }
                return served
            }
            switch otherwise {
            case .forward(let note):
                if let note { trace.append(note) }
                return try await forward(request, key: key, outcome: .miss, collapse: true, fetch: fetch)
            case .notCached:
                trace.append("returnCacheDataDontLoad: nothing stored, the origin is not contacted")
                throw Self.notCachedError(key)
            }
        case .serveStaleAndRevalidate(let record):
            guard let served = try await serve(record, to: request, now: now, outcome: .stale) else {
                trace.append("the stored body is gone: forwarded")
                return try await forward(request, key: key, outcome: .miss, collapse: true, fetch: fetch)
            }
            revalidateInBackground(request, record: record, key: key, fetch: fetch)
            return served
        case .validate(let record):
            return try await validate(request, record: record, key: key, fetch: fetch)
        case .notCached:
            throw Self.notCachedError(key)
        case .unsatisfiable:
            var response = HTTPResponse(status: .gatewayTimeout)
            response.headerFields[.contentLength] = "0"
            return CachedResponse(
                response: response,
                body: .empty,
                status: status(.miss, detail: "only-if-cached")
            )
        }
    }

    /// What the lookup found, for traces.
    func lookupNote(records: [VariantRecord], found: Bool) -> String {
        if records.isEmpty { return "lookup: nothing stored for this URI" }
        if found {
            return records.count == 1 ? "lookup: a stored response" : "lookup: \(records.count) variants, one matches"
        }
        let vary = Set(records.flatMap { $0.stored.varyingFields.map(\.name) }).sorted().joined(separator: ", ")
        return
            "§4.1 lookup: \(records.count) stored variant(s), none matches this request's \(vary.isEmpty ? "Vary" : vary)"
    }

    // MARK: Serving stored responses

    /// The stored response as served: `Age` set, qualified `no-cache` fields removed, a 304 when
    /// the caller's own conditions hold, no body for HEAD. `nil` when its body is gone.
    func serve(
        _ record: VariantRecord,
        to request: HTTPRequest,
        now: Double,
        outcome: CacheOutcome?
    ) async throws
        -> CachedResponse?
    {
        var reused = reuse(record, to: request, now: now, outcome: outcome)
        if reused.needsBody {
            guard let body = try await body(of: record) else {
                // The body was evicted apart from its record: drop the record, treat as a miss.
                // Here only: with a shared level, the body may be gone because another node
                // replaced the response, and the shared record is then that newer one.
                try await remove(rules.key(for: request), fromSharedLevel: false)
                return nil
            }
            reused.served.body = body
        }
        return reused.served
    }

    /// The part of ``serve(_:to:now:outcome:)`` that needs no storage: the response with `Age`,
    /// its `Cache-Status` and user info, and whether its body must still be read (not for a 304
    /// or a HEAD; until then it is empty).
    func reuse(
        _ record: VariantRecord,
        to request: HTTPRequest,
        now: Double,
        outcome: CacheOutcome?
    ) -> (served: CachedResponse, needsBody: Bool, age: Double, ttl: Double) {
        let stored = record.stored
        // timeToLive(of:now:) is this lifetime minus this age; each is worked out once.
        let age = rules.currentAgeSeconds(of: stored, now: now)
        let ttl = rules.freshnessSeconds(of: stored) - age
        let outcome = outcome ?? (ttl > 0 ? .hit : .stale)
        var response = rules.responseForReuse(stored)
        response.headerFields[.age] = String(Int(max(0, age)))
        let cacheStatus = status(outcome, ttl: ttl)
        var served: CachedResponse
        var needsBody = false
        if CacheRules.isConditional(request), rules.conditionsMatch(request, stored: stored, nowSeconds: now) {
            served = CachedResponse(response: Self.notModified(from: response), body: .empty, status: cacheStatus)
        } else {
            served = CachedResponse(response: response, body: .empty, status: cacheStatus)
            needsBody = request.method != .head
        }
        served.userInfo = stored.userInfo
        return (served, needsBody, age, ttl)
    }

    /// A 304 made from a stored response: the fields RFC 9110 §15.4.5 lists, no content fields.
    static func notModified(from response: HTTPResponse) -> HTTPResponse {
        var notModified = HTTPResponse(status: .notModified)
        for name in [HTTPField.Name.cacheControl, .contentLocation, .date, .eTag, .expires, .vary, .lastModified, .age]
        {
            notModified.headerFields[values: name] = response.headerFields[values: name]
        }
        return notModified
    }

    func status(
        _ outcome: CacheOutcome,
        ttl: Double? = nil,
        forwardStatus: Int? = nil,
        stored: Bool = false,
        collapsed: Bool = false,
        detail: String? = nil
    ) -> CacheStatus {
        CacheStatus(
            cacheName: configuration.name,
            outcome: outcome,
            forwardStatus: forwardStatus,
            timeToLive: ttl.map { Int($0.rounded(.down)) },
            stored: stored,
            collapsed: collapsed,
            detail: detail
        )
    }
}
