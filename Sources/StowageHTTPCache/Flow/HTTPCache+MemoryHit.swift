import HTTPTypes
import StowageCache

extension HTTPCache {
    /// Answers `request` at once, without suspending, when ``respond(to:body:policy:fetch:)``
    /// would serve it from memory without contacting the origin: a stored response that is
    /// fresh (or stale within the request's `max-stale`), whose record and body are both held in
    /// memory. `nil` in every other case; the caller then calls `respond`, which answers the same
    /// request the same way whatever this returned.
    ///
    /// The answer is the one `respond` gives under ``RequestCachePolicy/useProtocolCachePolicy``
    /// for a hit: `Age`, `Cache-Status`, a 304 when the request's own conditions hold, no body for
    /// `HEAD`, the trace and the user info. A server answers such requests on its event loop
    /// with it (as the caching proxy does), leaving Swift concurrency for the requests that
    /// need the disk, the shared tier or the origin.
    ///
    /// - Parameter request: The request, with scheme and authority set (they form the cache key).
    /// - Returns: The response, its body in memory and how it was served; `nil` when the answer
    ///   needs storage, the origin or a decision `respond` makes asynchronously.
    public func respondFromMemory(to request: HTTPRequest) -> CachedResponse? {
        guard mode != .disabled, request.method == .get || request.method == .head else { return nil }
        let request = rules.keyRules.removingIgnoredParameters(from: request)
        if !configuration.bypass.isEmpty, configuration.bypass.contains(where: { $0.matches(request) }) { return nil }
        // §5.2.1.5: a request with no-store does not consult the cache (`respond` forwards it).
        if request.headerFields[.cacheControl] != nil, request.headerFields.cacheControl.noStore { return nil }
        let key = rules.key(for: request)
        guard case .variants(let records) = memory.value(forKey: Self.recordKey(key)),
            let record = selectVariant(request, in: records)
        else { return nil }
        var trace: [TraceNote] = []
        trace.reserveCapacity(4)
        trace.append(.text(lookupNote(records: records, found: true)))
        let now = self.now
        guard case .serve(let outcome) = rules.decide(request, stored: record.stored, now: now, noting: &trace) else {
            return nil
        }
        var reused = reuse(record, to: request, now: now, outcome: outcome)
        if reused.needsBody {
            guard case .body(let bytes) = memory.value(forKey: record.bodyKey) else { return nil }
            reused.served.body = HTTPBody(bytes: bytes)
        }
        return finish(reused.served, for: request, trace: trace)
    }
}
