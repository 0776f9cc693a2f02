import Foundation
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
        guard keepsRecentAnswers else { return memoryAnswer(to: request)?.served }
        if let kept = recentAnswers.answer(to: request), isCurrent(kept.answer) { return kept.answer.served }
        guard let answer = memoryAnswer(to: request) else { return nil }
        recentAnswers.keep(answer, for: request)
        return answer.served
    }

    /// Whether ``respondFromMemory(to:)`` gives an answer again without deciding again
    /// (``RecentAnswers``).
    var keepsRecentAnswers: Bool { recentAnswers.maximumBytes > 0 }

    /// ``respondFromMemory(to:)`` with how long the answer stays the same: a server that sees the
    /// same request again may send the same bytes while ``isCurrent(_:)`` holds, without
    /// deciding again.
    ///
    /// - Parameter request: The request, with scheme and authority set.
    /// - Returns: The answer and its validity; `nil` as for ``respondFromMemory(to:)``.
    public func memoryAnswer(to request: HTTPRequest) -> MemoryAnswer? {
        guard mode != .disabled, request.method == .get || request.method == .head else { return nil }
        let request = rules.keyRules.removingIgnoredParameters(from: request)
        if !configuration.bypass.isEmpty, configuration.bypass.contains(where: { $0.matches(request) }) { return nil }
        // §5.2.1.5: a request with no-store does not consult the cache (`respond` forwards it).
        if request.headerFields[.cacheControl] != nil, request.headerFields.cacheControl.noStore { return nil }
        let recordKey = Self.recordKey(rules.key(for: request))
        // Memory must not outlive a clear of the disk cache by another process (`stowage
        // clear-caches` on a running proxy's directory): emptied first when one happened.
        levels.followStoreGeneration()
        guard case .variants(let records) = memory.value(forKey: recordKey),
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
        let validUntil = Self.nextChange(age: reused.age, ttl: reused.ttl, now: now)
        // A request with directives of its own (max-age, min-fresh, max-stale, no-cache) may be
        // decided otherwise as the response ages; any other, only when the response goes stale.
        let asksNothing =
            request.headerFields[.cacheControl] == nil && request.headerFields[.pragma] == nil && outcome == .hit
        finish(&reused.served, for: request, trace: trace)
        return MemoryAnswer(
            served: reused.served,
            workedOutAtSeconds: now,
            validUntilSeconds: validUntil,
            decisionValidUntilSeconds: asksNothing ? max(validUntil, now + reused.ttl) : validUntil,
            recordKey: recordKey,
            records: records,
            stored: record.stored
        )
    }

    /// Whether `answer`'s decision still stands: the same records in memory and, for a request
    /// without directives of its own, a response still fresh. The response is then the same
    /// but for its `Age` and the `ttl` of its `Cache-Status` (``currentFields(of:)``) and its
    /// trace; until ``MemoryAnswer/validUntil`` those are the same too (``isCurrent(_:)``).
    public func decisionStands(_ answer: MemoryAnswer) -> Bool {
        guard now < answer.decisionValidUntilSeconds else { return false }
        return recordsAreCurrent(answer)
    }

    /// ``decisionStands(_:)`` at `now`, for a caller that last found it standing when memory's
    /// contents were at version `seen` (``MemoryCache/contentVersion``): while they have not
    /// changed since, only the time is compared; otherwise the records are looked up again
    /// (which also keeps them recently used). `seen` `nil` always looks them up.
    ///
    /// - Returns: The version of memory's contents at which the decision stands; `nil` when it
    ///   does not.
    package func decisionStands(_ kept: KeptMemoryAnswer, now: Double, seenAt seen: UInt64?) -> UInt64? {
        guard now < kept.answer.decisionValidUntilSeconds else { return nil }
        // Read before the lookup: a change after it moves the version past the one returned.
        let version = memoryContentVersion
        if version == seen { return version }
        return recordsInMemory(kept.answer) ? version : nil
    }

    /// The version of memory's contents (``MemoryCache/contentVersion``), read before an answer
    /// is worked out from them: ``decisionStands(_:now:seenAt:)`` with it is never wrong, at
    /// worst a lookup more.
    package var memoryContentVersion: UInt64 {
        levels.followStoreGeneration()
        return memory.contentVersion
    }

    /// The `Age` and `Cache-Status` values of `answer` now, as ``respondFromMemory(to:)`` would
    /// set them, and until when they stay so: for a server that sends an answer again while
    /// ``decisionStands(_:)``.
    public func currentFields(of answer: MemoryAnswer) -> (age: String, cacheStatus: String, validUntil: Date) {
        let fields = currentFieldsSeconds(stored: answer.stored, outcome: answer.served.outcome)
        return (fields.age, fields.cacheStatus, Date(timeIntervalSince1970: fields.validUntil))
    }

    /// ``currentFields(of:)`` with the time in seconds since 1970, for the proxy's event-loop
    /// hit path, which compares it on every request.
    package func currentFieldsSeconds(
        of kept: KeptMemoryAnswer
    ) -> (age: String, cacheStatus: String, validUntil: Double) {
        currentFieldsSeconds(stored: kept.answer.stored, outcome: kept.outcome)
    }

    private func currentFieldsSeconds(
        stored: StoredResponse,
        outcome: CacheOutcome
    ) -> (age: String, cacheStatus: String, validUntil: Double) {
        let now = self.now
        let age = rules.currentAgeSeconds(of: stored, now: now)
        let ttl = rules.freshnessSeconds(of: stored) - age
        return (
            String(Int(max(0, age))), status(outcome, ttl: ttl).description,
            Self.nextChange(age: age, ttl: ttl, now: now)
        )
    }

    /// Whether `answer` is still the answer to its request: its time has not run out (nor been
    /// set back before it was worked out) and the records it was worked out from are still the
    /// ones in memory (not replaced, freshened by a 304, purged, invalidated, evicted, or
    /// cleared with the disk cache by another process).
    /// An O(1) check while nothing changed.
    public func isCurrent(_ answer: MemoryAnswer) -> Bool {
        // Not before the time it was worked out either: a clock set back (an NTP step) would
        // otherwise keep the `Age` of a later time until the clock caught up.
        let now = self.now
        guard now < answer.validUntilSeconds, now >= answer.workedOutAtSeconds else { return false }
        return recordsAreCurrent(answer)
    }

    private func recordsAreCurrent(_ answer: MemoryAnswer) -> Bool {
        levels.followStoreGeneration()
        return recordsInMemory(answer)
    }

    /// Whether the records `answer` was worked out from are the ones in memory.
    private func recordsInMemory(_ answer: MemoryAnswer) -> Bool {
        guard case .variants(let records) = memory.value(forKey: answer.recordKey) else { return false }
        return records == answer.records  // the same storage compares in O(1)
    }

    /// When an answer worked out at `now`, with the response's `age` and remaining freshness
    /// `ttl` then, can first differ: the next whole second of its age (the `Age` field, the
    /// request's `max-age` test) or of its remaining freshness (`Cache-Status`'s `ttl`,
    /// freshness itself, `min-fresh`). Not after `now` when either is on a whole second.
    static func nextChange(age: Double, ttl: Double, now: Double) -> Double {
        let untilAgeTicks = age < 0 ? -age : age.rounded(.down) + 1 - age
        let untilTTLTicks = ttl - ttl.rounded(.down)
        return now + min(untilAgeTicks, untilTTLTicks)
    }
}

/// An answer from memory (``HTTPCache/memoryAnswer(to:)``) and what it depends on.
public struct MemoryAnswer: Sendable {
    /// The response, as ``HTTPCache/respondFromMemory(to:)`` gives it.
    public let served: CachedResponse
    /// The cache clock's time from which the same request may get another answer: its age or
    /// remaining freshness reaches the next whole second.
    public var validUntil: Date { Date(timeIntervalSince1970: validUntilSeconds) }
    /// The cache clock's time from which the decision may change (``HTTPCache/decisionStands(_:)``);
    /// not before ``validUntil``.
    public var decisionValidUntil: Date { Date(timeIntervalSince1970: decisionValidUntilSeconds) }
    /// The cache clock's time, in seconds since 1970, at which it was worked out: before it
    /// (the clock set back) it is not current either.
    package let workedOutAtSeconds: Double
    /// ``validUntil`` in seconds since 1970, as the hit paths compare it.
    package let validUntilSeconds: Double
    /// ``decisionValidUntil`` in seconds since 1970.
    package let decisionValidUntilSeconds: Double
    let recordKey: String
    let records: [VariantRecord]
    let stored: StoredResponse
}

/// A ``MemoryAnswer`` held by reference, for a server that keeps answers and checks them on
/// every request: passing it costs one reference count, where the answer itself (a dozen
/// references) is copied field by field.
package final class KeptMemoryAnswer: Sendable {
    package let answer: MemoryAnswer
    /// The answer's outcome.
    package let outcome: CacheOutcome

    package init(_ answer: MemoryAnswer) {
        self.answer = answer
        outcome = answer.served.outcome
    }
}
