import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore
import Synchronization

extension HTTPCache {
    /// The one entry point of the hit paths that answer on a server's event loop: the answer to
    /// `request` when ``respond(to:body:policy:fetch:)`` would serve it from memory without
    /// contacting the origin (a stored response that is fresh, or stale within the request's
    /// `max-stale`, whose record and body are both held in memory, or, with `readsDiskIndex`, in
    /// memory or the disk cache's index); `nil` in every other case, and the caller then calls
    /// `respond`, which answers the same request the same way.
    ///
    /// With `readsDiskIndex`, a record or body memory does not hold is read from the disk index
    /// on the calling thread (``CacheLevels/readBelowMemoryWithoutWaiting(_:through:)``: one indexed
    /// `SELECT`, no file read, nothing awaited) and kept in memory as `respond`'s read keeps it:
    /// the hit path of nginx, which reads a cached file on the worker that read the request. A
    /// miss there costs the caller one index lookup before `respond` looks again.
    ///
    /// The answer is kept, as the server's `Form` of it (the bytes it writes), in the memory
    /// level itself under `hash`, charged to `memoryCapacity` and evicted as responses are. The
    /// same request again gets the same form without deciding again while it stands: within the
    /// second its `Age` and `Cache-Status` stay the same, and while the records it was worked out
    /// from are the ones in memory. That is checked against the memory level's own content
    /// version and records on every use, so a purge, an invalidation, a replacement, an eviction
    /// or a clear of the disk cache by another process ends it with nothing else to empty.
    ///
    /// - Parameters:
    ///   - request: The request as the server has it.
    ///   - hash: `request`'s hash as the form tells requests apart (method, target, fields).
    ///   - prepares: Whether to keep a form at all (`false`: decide, keep nothing).
    ///   - readsDiskIndex: Whether a record or body missing from memory is looked up in the disk
    ///     index without waiting (`false`: memory alone).
    ///   - spillHash: With `readsDiskIndex`, the hash of `request` as spilled answers tell requests
    ///     apart (``PreparedForm/answers(_:spilledIdentity:)``), for a request whose answer depends
    ///     on nothing else of it; `nil`: its answer is not spilled nor looked up there.
    ///   - cacheRequest: The request as the cache keys it (scheme and authority set); `nil` when
    ///     the server answers it otherwise. Called only when the cache decides.
    ///   - prepare: The form for a decision or a refresh (``PreparationStep``).
    /// - Returns: The prepared form that stands, or the answer decided now and not kept; `nil`
    ///   when the answer needs storage, the origin or a decision `respond` makes asynchronously.
    package func answerFromMemory<Form: PreparedForm>(
        to request: Form.Request,
        hash: Int,
        prepares: Bool,
        readsDiskIndex: Bool = false,
        spillHash: Int? = nil,
        cacheRequest: (Form.Request) -> HTTPRequest?,
        prepare: (PreparationStep<Form>) -> Form?
    ) -> MemoryHit<Form>? {
        guard prepares, keepsPreparedAnswers else {
            guard let cacheRequest = cacheRequest(request),
                let answer = memoryAnswer(to: cacheRequest, readsDiskIndex: readsDiskIndex)
            else {
                return nil
            }
            return .decided(answer)
        }
        // Memory must not outlive a clear of the disk cache by another process: emptied, with
        // the prepared answers in it, first when one happened.
        levels.followStoreChanges()
        let key = Self.preparedKey(hash)
        let clockNow = configuration.clock.now()
        let now = clockNow.timeIntervalSince1970
        var found = false
        if case .prepared(let kept) = memory.uncountedValue(forKey: key), let form = kept.form as? Form,
            form.answers(request)
        {
            found = true
            // Within the second its fields were worked out for (and not before it: the clock set
            // back), memory contents unchanged since are enough; else the records are looked up.
            let fieldsCurrent = now < kept.fieldsValidUntil && now >= kept.fieldsValidFrom
            let seen = kept.seenAt.load(ordering: .relaxed)
            if let version = decisionStands(kept, now: now, seenAt: fieldsCurrent ? seen : nil) {
                // While memory evicts, an answer kept in full is spilled: its room holds many
                // spilled ones (HTTPCache+SpilledAnswers.swift).
                if readsDiskIndex, let spillHash, !kept.spillDeclined.load(ordering: .relaxed),
                    memoryEvictions.isEvicting(
                        evictionCount: memory.limitEvictionCount,
                        second: Int64(now.rounded(.down))
                    ),
                    let spillKey = spillKey(for: spillHash, form: Form.self),
                    let cacheRequest = cacheRequest(request),
                    let hit = spillKept(
                        kept,
                        preparedKey: key,
                        spillKey: spillKey,
                        cacheRequest: cacheRequest,
                        now: clockNow,
                        prepare: prepare
                    )
                {
                    return hit
                }
                if fieldsCurrent, form.stands(at: clockNow) {
                    if version != seen { kept.seenAt.store(version, ordering: .relaxed) }
                    return .prepared(form, kept)
                }
                let fields = currentFieldsSeconds(stored: kept.stored, outcome: kept.outcome)
                if let refreshed = prepare(
                    .refresh(form, age: fields.age, cacheStatus: fields.cacheStatus, now: clockNow)
                ) {
                    let renewed = PreparedAnswer(
                        refreshing: kept,
                        form: refreshed,
                        from: now,
                        until: fields.validUntil,
                        seenAt: version
                    )
                    let renewedEntry = MemoryEntry.prepared(renewed)
                    memory.setUncountedValue(renewedEntry, forKey: key, cost: renewedEntry.charge(forKey: key))
                    return .prepared(refreshed, renewed)
                }
            }
        }
        // Answers read from the disk index are spilled, not their records and bodies kept
        // (HTTPCache+SpilledAnswers.swift).
        let spillKey: String? =
            if readsDiskIndex, let spillHash { self.spillKey(for: spillHash, form: Form.self) } else { nil }
        var spillFound = false
        if let spillKey, case .spilled(let spilled) = memory.uncountedValue(forKey: spillKey) {
            spillFound = true
            if let hit = spilledHit(
                spilled,
                underKey: spillKey,
                to: request,
                form: Form.self,
                now: now,
                clockNow: clockNow
            ) {
                // A kept answer to this request that no longer stood goes: the spill answers it
                // now. Left, it would hold its records (their entry gone, with a spill from
                // memory, say) beyond `memoryCapacity`, and every hit would look them up again.
                if found { _ = memory.removeValue(forKey: key) }
                return .spilled(hit)
            }
        }
        // Read before the answer is worked out, so a change meanwhile is seen as one.
        let version = memory.contentVersion
        let mark = spillKey != nil ? levels.beginRead() : nil
        guard let cacheRequest = cacheRequest(request),
            let answer = memoryAnswer(to: cacheRequest, readsDiskIndex: readsDiskIndex, keepsDiskReads: spillKey == nil)
        else {
            if spillFound, let spillKey { _ = memory.removeValue(forKey: spillKey) }
            // A prepared answer that no longer stands goes at once, its bytes with it.
            if found { _ = memory.removeValue(forKey: key) }
            return nil
        }
        // An answer read from the disk index is not kept: most such requests are not seen again
        // before memory lets them go, and the form would take the room of responses (its record
        // and body are in memory now, so the same request again is kept then). Nor could it be:
        // a kept answer holds its records uncharged (PreparedAnswer.cost counts on the records'
        // own entry), and records memory did not keep (more than it holds, or a change since the
        // read) would be held beyond `memoryCapacity`. A kept answer that no longer stood goes.
        // With a form that spills, the answer is kept in the spill file instead, its place in
        // memory (HTTPCache+SpilledAnswers.swift).
        if answer.readFromDisk {
            if found { _ = memory.removeValue(forKey: key) }
            guard let mark, let spillKey else { return .decided(answer) }
            let spilled = spill(answer, underKey: spillKey, readAt: mark, now: clockNow, prepare: prepare)
            // Not spilled (served stale, variants varying on other fields, too large for the
            // file): memory keeps the read instead, as it does when nothing spills.
            // Records that came from memory were not read (no fingerprint), and a body read for
            // them was kept by `memoryAnswer` already.
            if spilled?.spilled != true, answer.recordsFingerprint != nil { keepDiskRead(answer, readAt: mark) }
            return spilled.map { .formed($0.form, answer) } ?? .decided(answer)
        }
        guard let form = prepare(.decided(answer, now: clockNow)) else { return .decided(answer) }
        let kept = PreparedAnswer(
            answer: answer,
            form: form,
            keepsResponse: Form.usesResponse,
            fieldsValidFrom: answer.workedOutAtSeconds,
            fieldsValidUntil: answer.validUntilSeconds,
            seenAt: version
        )
        let keptEntry = MemoryEntry.prepared(kept)
        memory.setUncountedValue(keptEntry, forKey: key, cost: keptEntry.charge(forKey: key))
        return .prepared(form, kept)
    }

    /// The memory level's key of a prepared answer to requests of `hash` (``HashedMemoryKey``).
    static func preparedKey(_ hash: Int) -> String {
        HashedMemoryKey.make(prefix: 1, hash: hash)
    }

    /// Answers `request` at once, without suspending, when ``respond(to:body:policy:fetch:)``
    /// would serve it from memory (``answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``,
    /// which keeps the answer given for the same request again). `nil` in every other case.
    func respondFromMemory(to request: HTTPRequest) -> CachedResponse? {
        let identity = RequestIdentity(request)
        let hit = answerFromMemory(
            to: identity,
            hash: identity.hashValue,
            prepares: true,
            cacheRequest: { _ in request },
            prepare: { step -> AnsweredRequest? in
                guard case .decided = step else { return nil }  // decided again: its trace is of now
                return AnsweredRequest(identity)
            }
        )
        switch hit {
        case .prepared(_, let kept): return kept.served
        case .decided(let answer), .formed(_, let answer): return answer.served
        case .spilled, nil: return nil  // its form spills nothing
        }
    }

    /// Whether answers are kept in memory to be given again: not while the logger is at debug
    /// level, where each decision is logged.
    var keepsPreparedAnswers: Bool { mode != .disabled && configuration.logger.logLevel > .debug }

    /// ``respondFromMemory(to:)`` with how long the answer stays the same: a server that sees the
    /// same request again may send the same bytes while ``isCurrent(_:)`` holds, without
    /// deciding again.
    ///
    /// - Parameters:
    ///   - request: The request, with scheme and authority set.
    ///   - readsDiskIndex: Whether a record or body missing from memory is looked up in the disk
    ///     index without waiting (``CacheLevels/readBelowMemoryWithoutWaiting(_:through:)``) and kept in
    ///     memory; `false`: memory alone.
    /// - Returns: The answer and its validity; `nil` as for ``respondFromMemory(to:)``.
    ///   - keepsDiskReads: Whether what is read from the disk index is kept in memory (`false`:
    ///     the caller spills the answer instead, and the answer carries the records' fingerprint).
    ///   - readsMemory: Whether records and body are looked up in memory first (`false`, with
    ///     `readsDiskIndex`: the disk index alone, for an answer memory holds that is spilled).
    func memoryAnswer(
        to request: HTTPRequest,
        readsDiskIndex: Bool = false,
        keepsDiskReads: Bool = true,
        readsMemory: Bool = true
    ) -> MemoryAnswer? {
        guard mode != .disabled, request.method == .get || request.method == .head else { return nil }
        let request = rules.keyRules.removingIgnoredParameters(from: request)
        if !configuration.bypass.isEmpty, configuration.bypass.contains(where: { $0.matches(request) }) { return nil }
        // §5.2.1.5: a request with no-store does not consult the cache (`respond` forwards it).
        if request.headerFields[.cacheControl] != nil, request.headerFields.cacheControl.noStore { return nil }
        let recordKey = Self.recordKey(rules.key(for: request))
        // Memory must not outlive a clear of the disk cache by another process (`stowage
        // clear-caches` on a running proxy's directory): emptied first when one happened.
        levels.followStoreChanges()
        var readFromDisk = false
        var recordsFingerprint: UInt64?
        guard
            let records = recordsWithoutWaiting(
                recordKey,
                readingMemory: readsMemory,
                readingDiskIndex: readsDiskIndex,
                keeping: keepsDiskReads,
                fingerprint: &recordsFingerprint,
                fromDisk: &readFromDisk
            ),
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
            // Records memory holds carry no disk fingerprint, so the answer cannot be spilled:
            // a body read for them is kept, else every hit would read it from disk again (memory
            // lets a body go before its records, which hits keep in use).
            let keepsBody = keepsDiskReads || !readFromDisk
            guard
                let body = bodyWithoutWaiting(
                    of: record,
                    readingMemory: readsMemory,
                    readingDiskIndex: readsDiskIndex,
                    keeping: keepsBody,
                    fromDisk: &readFromDisk
                )
            else { return nil }
            reused.served.body = body
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
            stored: record.stored,
            readFromDisk: readFromDisk,
            recordsFingerprint: recordsFingerprint
        )
    }

    /// The variant records under `recordKey` in memory (when `readingMemory`), else, with `readingDiskIndex`, in the
    /// disk index (kept in memory then when `keeping`, else their disk copy's fingerprint set,
    /// and `fromDisk` set); `nil` when neither holds them.
    private func recordsWithoutWaiting(
        _ recordKey: String,
        readingMemory: Bool,
        readingDiskIndex: Bool,
        keeping: Bool,
        fingerprint: inout UInt64?,
        fromDisk: inout Bool
    ) -> [VariantRecord]? {
        if readingMemory, case .variants(let records) = memory.value(forKey: recordKey) { return records }
        guard readingDiskIndex else { return nil }
        let reading = RecordsReading(cache: self)
        if keeping {
            guard let records = levels.readBelowMemoryWithoutWaiting(recordKey, through: reading) else { return nil }
            fromDisk = true
            return records
        }
        guard let read = levels.readBelowMemoryKeepingNothingWithoutWaiting(recordKey, through: reading) else {
            return nil
        }
        fromDisk = true
        fingerprint = read.fingerprint
        return read.found
    }

    /// The body of `record` in memory (when `readingMemory`), else, with `readingDiskIndex`, in the disk index (kept in
    /// memory then, up to the memory level's entry limit, and `fromDisk` set); `nil` when neither
    /// holds it whole.
    private func bodyWithoutWaiting(
        of record: VariantRecord,
        readingMemory: Bool,
        readingDiskIndex: Bool,
        keeping: Bool,
        fromDisk: inout Bool
    ) -> HTTPBody? {
        if readingMemory, case .body(let bytes) = memory.value(forKey: record.bodyKey) { return HTTPBody(bytes: bytes) }
        guard readingDiskIndex else { return nil }
        let reading = BodyReading(cache: self, record: record)
        let body =
            keeping
            ? levels.readBelowMemoryWithoutWaiting(record.bodyKey, through: reading)
            : levels.readBelowMemoryKeepingNothingWithoutWaiting(record.bodyKey, through: reading)?.found
        guard let body else { return nil }
        fromDisk = true
        return body
    }

    /// Whether `answer`'s decision still stands: the same records in memory and, for a request
    /// without directives of its own, a response still fresh. The response is then the same
    /// but for its `Age` and the `ttl` of its `Cache-Status` (``currentFields(of:)``) and its
    /// trace; until ``MemoryAnswer/validUntil`` those are the same too (``isCurrent(_:)``).
    func decisionStands(_ answer: MemoryAnswer) -> Bool {
        guard now < answer.decisionValidUntilSeconds else { return false }
        return recordsAreCurrent(answer)
    }

    /// Whether `kept`'s decision stands at `now`, for a caller that last found it standing when
    /// memory's contents were at version `seen` (``MemoryCache/contentVersion``): while they
    /// have not changed since, only the time is compared; otherwise the records are looked up
    /// again (which also keeps them recently used). `seen` `nil` always looks them up.
    ///
    /// - Returns: The version of memory's contents at which the decision stands; `nil` when it
    ///   does not.
    private func decisionStands(_ kept: PreparedAnswer, now: Double, seenAt seen: UInt64?) -> UInt64? {
        guard now < kept.decisionValidUntil else { return nil }
        // Read before the lookup: a change after it moves the version past the one returned.
        let version = memory.contentVersion
        if version == seen { return version }
        guard case .variants(let records) = memory.value(forKey: kept.recordKey) else { return nil }
        return records == kept.records ? version : nil  // the same storage compares in O(1)
    }

    /// The `Age` and `Cache-Status` values of `answer` now, as ``respondFromMemory(to:)`` would
    /// set them, and until when they stay so: for a server that sends an answer again while
    /// ``decisionStands(_:)``.
    func currentFields(of answer: MemoryAnswer) -> (age: String, cacheStatus: String, validUntil: Date) {
        let fields = currentFieldsSeconds(stored: answer.stored, outcome: answer.served.outcome)
        return (fields.age, fields.cacheStatus, Date(timeIntervalSince1970: fields.validUntil))
    }

    func currentFieldsSeconds(
        stored: StoredResponse,
        outcome: CacheOutcome
    ) -> (age: String, cacheStatus: String, validUntil: Double) {
        let now = self.now
        let age = rules.currentAgeSeconds(of: stored, now: now)
        let ttl = rules.freshnessSeconds(of: stored) - age
        let fields = hitFields(age: age, ttl: ttl, outcome: outcome)
        return (fields.age, fields.cacheStatus, Self.nextChange(age: age, ttl: ttl, now: now))
    }

    /// The `Age` (RFC 9111 §5.1, whole seconds, never negative) and `Cache-Status` values of a
    /// response of current age `age` and remaining freshness `ttl`, served as `outcome`: one
    /// place for answers kept in memory and spilled ones alike.
    func hitFields(age: Double, ttl: Double, outcome: CacheOutcome) -> (age: String, cacheStatus: String) {
        (String(Int(max(0, age))), status(outcome, ttl: ttl).description)
    }

    /// Whether `answer` is still the answer to its request: its time has not run out (nor been
    /// set back before it was worked out) and the records it was worked out from are still the
    /// ones in memory (not replaced, freshened by a 304, purged, invalidated, evicted, or
    /// cleared with the disk cache by another process).
    /// An O(1) check while nothing changed.
    func isCurrent(_ answer: MemoryAnswer) -> Bool {
        // Not before the time it was worked out either: a clock set back (an NTP step) would
        // otherwise keep the `Age` of a later time until the clock caught up.
        let now = self.now
        guard now < answer.validUntilSeconds, now >= answer.workedOutAtSeconds else { return false }
        return recordsAreCurrent(answer)
    }

    private func recordsAreCurrent(_ answer: MemoryAnswer) -> Bool {
        levels.followStoreChanges()
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
package struct MemoryAnswer: Sendable {
    /// The response, as ``HTTPCache/respond(to:body:policy:fetch:)`` gives it from memory.
    package let served: CachedResponse
    /// The cache clock's time, in seconds since 1970, at which it was worked out: before it
    /// (the clock set back) it is not current either.
    let workedOutAtSeconds: Double
    /// The cache clock's time from which the same request may get another answer: its age or
    /// remaining freshness reaches the next whole second.
    let validUntilSeconds: Double
    /// The cache clock's time from which the decision may change (``HTTPCache/decisionStands(_:)``);
    /// not before ``validUntilSeconds``.
    let decisionValidUntilSeconds: Double
    let recordKey: String
    let records: [VariantRecord]
    let stored: StoredResponse
    /// Whether its record or body was read from the disk index (not kept as a prepared answer).
    let readFromDisk: Bool
    /// The fingerprint of the variant records' disk copy, when they were read from the disk
    /// index and not kept in memory (``DiskCache/StoredData/fingerprint``): what a spilled
    /// answer is checked against (``SpilledAnswer``).
    let recordsFingerprint: UInt64?

    /// ``validUntilSeconds`` as an instant of the cache's clock.
    var validUntil: Date { Date(timeIntervalSince1970: validUntilSeconds) }
    /// The variant record the answer was worked out from, among ``records``.
    var selectedRecord: VariantRecord? { records.first { $0.stored == stored } }

    /// ``decisionValidUntilSeconds`` as an instant of the cache's clock.
    var decisionValidUntil: Date { Date(timeIntervalSince1970: decisionValidUntilSeconds) }
}
