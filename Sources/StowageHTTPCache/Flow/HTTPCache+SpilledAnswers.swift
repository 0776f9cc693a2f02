import Foundation
import HTTPTypes
import Logging
import StowageCache
import StowageCore
import Synchronization

/// The ``AnswerSpill`` of an HTTP cache, opened the first time a server spills an answer: a cache
/// no server reads through the disk index never makes the file.
final class AnswerSpillSlot: Sendable {
    /// Holds the spill from its opening to the slot's end.
    private let opened = AtomicLazyReference<AnswerSpill>()
    /// The spill `opened` holds, read on every hit without a reference count of its own: an
    /// inlined atomic load, where `AtomicLazyReference.load()`, a generic call into the
    /// Synchronization library, took 1% of the proxy's samples (`perf`, 10^5 URLs).
    private let published = Atomic<Unmanaged<AnswerSpill>?>(nil)
    private let unavailable = Atomic<Bool>(false)
    /// Hits answered from the spill.
    let hits = Atomic<Int>(0)

    /// The spill, opened by `open` the first time; `nil` when it could not be.
    func spill(opening open: () -> AnswerSpill?) -> AnswerSpill? {
        if let spill = ifOpen ?? opened.load() { return spill }
        if unavailable.load(ordering: .relaxed) { return nil }
        guard let made = open() else {
            unavailable.store(true, ordering: .relaxed)
            return nil
        }
        let spill = opened.storeIfNil(made)
        published.store(Unmanaged.passUnretained(spill), ordering: .releasing)
        return spill
    }

    /// The spill when it is open.
    var ifOpen: AnswerSpill? {
        // `opened` keeps it alive as long as this slot, which the cache asking for it holds.
        published.load(ordering: .acquiring)?.takeUnretainedValue()
    }
}

extension HTTPCache {
    /// The hits answered from spilled answers since the cache opened, and the bytes the spill
    /// file holds now (`0` before a server spilled any).
    package var spilledAnswerFigures: (hits: Int, bytes: Int64) {
        (answerSpills.hits.load(ordering: .relaxed), answerSpills.ifOpen?.byteCount ?? 0)
    }

    /// The most the spill file holds before it starts over; `nil` while no file is open (it
    /// opens at the first request a spilled answer could answer, ``spillKey(for:form:)``).
    package var spillCapacity: Int64? { answerSpills.ifOpen?.capacity }

    /// The file answers worked out from disk reads are spilled to, opened on first use in the
    /// disk cache's directory, at most a quarter of `diskCapacity` (at least 1 MiB); `nil`
    /// without a disk level or when no file can be made there.
    var answerSpill: AnswerSpill? {
        guard let disk else { return nil }
        return answerSpills.spill {
            let capacity = max(1 << 20, configuration.diskCapacity.rawValue / 4)
            let spill = AnswerSpill(directory: disk.directory.path, capacity: capacity)
            if spill == nil {
                configuration.logger.notice(
                    "answers read from disk are not spilled: no anonymous file can be made in the cache directory",
                    metadata: ["directory": "\(disk.directory.path)", "errno": "\(errno)"]
                )
            }
            return spill
        }
    }

    /// The memory level's key of the spilled answer to requests of `hash`, when answers are
    /// spilled in `form` at all: not with key rules that read request fields, nor with bypass
    /// rules (what a spilled answer's request is compared on — method, target, `Host` and the
    /// fields the response varies on — would not be all its answer depends on).
    func spillKey<Form: PreparedForm>(for hash: Int, form: Form.Type) -> String? {
        guard Form.spills, rules.keyRules.headers.isEmpty, configuration.bypass.isEmpty,
            answerSpills.ifOpen != nil || answerSpill != nil
        else {
            return nil
        }
        return HashedMemoryKey.make(prefix: 2, hash: hash)
    }

    /// The hit `spilled` gives `request` now, or `nil` when it does not stand: the response's
    /// freshness ran out, its bytes are gone or damaged, they answer another request (a hash
    /// collision), or the disk no longer holds the records it was worked out from (then it is
    /// removed).
    func spilledHit<Form: PreparedForm>(
        _ spilled: SpilledAnswer,
        underKey key: String,
        to request: Form.Request,
        form: Form.Type,
        now: Double,
        clockNow: Date
    ) -> SpilledHit? {
        guard now < spilled.decisionValidUntil, let spill = answerSpills.ifOpen, let bytes = spill.read(spilled.place)
        else {
            _ = memory.removeValue(forKey: key)
            return nil
        }
        let keyEnd = Int(spilled.keyLength)
        let identityEnd = keyEnd + Int(spilled.identityLength)
        let headEnd = identityEnd + Int(spilled.headLength)
        guard headEnd <= bytes.count, Form.answers(request, spilledIdentity: bytes[keyEnd..<identityEnd]) else {
            return nil
        }
        // Read before the lookup: a change after it moves the count past the one noted.
        let change = levels.changeCount
        let second = Int64(now.rounded(.down))
        if spilled.checkedAtChange.load(ordering: .acquiring) != change {
            // A change since the last look-up: checked before anything is sent.
            let recordKey = String(decoding: bytes[0..<keyEnd], as: UTF8.self)
            guard levels.diskFingerprintWithoutWaiting(recordKey) == spilled.recordsFingerprint else {
                _ = memory.removeValue(forKey: key)
                return nil
            }
            spilled.checkedAtChange.store(change, ordering: .releasing)
            spilled.scheduleNextLookUp(after: second)
        } else if second >= spilled.checkAfterSecond.load(ordering: .relaxed) {
            // Only time since: looked up on the rechecks' lane, not on this thread.
            let recheck = SpilledAnswerRechecks.Recheck(
                recordKey: String(decoding: bytes[0..<keyEnd], as: UTF8.self),
                memoryKey: key,
                answer: spilled
            )
            if spilledRechecks.enqueue(recheck, check: { [self] in recheckSpilled($0) }) {
                spilled.scheduleNextLookUp(after: second)
            }
        }
        answerSpills.hits.add(1, ordering: .relaxed)
        // RFC 9111 §4.2.3 and §4.2.1, as `currentFieldsSeconds` works them out from the record.
        let age = spilled.correctedInitialAge + max(0, now - spilled.responseSeconds)
        let fields = hitFields(age: age, ttl: spilled.freshness - age, outcome: .hit)
        return SpilledHit(
            bytes: bytes,
            head: identityEnd..<headEnd,
            body: headEnd..<bytes.count,
            age: fields.age,
            cacheStatus: fields.cacheStatus,
            addsDate: spilled.addsDate,
            now: clockNow,
            outcome: .hit
        )
    }

    /// Looks up the records `recheck`'s answer was worked out from (rewriting their access time
    /// when it is older than the disk level's resolution) and takes the answer out of memory when
    /// the disk no longer holds them — only that answer: one spilled since under its key stays.
    func recheckSpilled(_ recheck: SpilledAnswerRechecks.Recheck) {
        let fingerprint = levels.diskFingerprintWithoutWaiting(recheck.recordKey)
        guard fingerprint != recheck.answer.recordsFingerprint else { return }
        if case .spilled(let held) = memory.uncountedValue(forKey: recheck.memoryKey), held === recheck.answer {
            _ = memory.removeValue(forKey: recheck.memoryKey)
        }
    }

    /// Whether every variant record among `records` varies on the fields `stored` varies
    /// on. Only then does the record a request selects (RFC 9111 §4.1: the newest that matches)
    /// depend on nothing but those fields, all that a spilled answer's request is compared on
    /// besides the target and `Host`: with a record that varies on another field, a request
    /// that also sends that field may select the newer record, not the spilled one.
    static func variesAlike(_ stored: StoredResponse, among records: [VariantRecord]) -> Bool {
        let names = Set(stored.varyingFields.map(\.name))
        return records.allSatisfy { Set($0.stored.varyingFields.map(\.name)) == names }
    }

    /// Spills `answer`, worked out from a disk read begun at `mark`, as the form `prepare` gives
    /// for it, and keeps its ``SpilledAnswer`` in memory under `key`: only a hit whose decision
    /// stands until the response goes stale (a request asking nothing of its own) and whose
    /// records were read from the disk index, and only while no clear or removal through
    /// another handle came since `mark` (memory, emptied by it, must not get it back).
    ///
    /// - Returns: The form prepared, when `prepare` gave one, and whether it was spilled.
    func spill<Form: PreparedForm>(
        _ answer: MemoryAnswer,
        underKey key: String,
        readAt mark: CacheLevels<MemoryEntry>.ReadMark,
        now: Date,
        prepare: (PreparationStep<Form>) -> Form?
    ) -> (form: Form, spilled: Bool)? {
        guard let fingerprint = answer.recordsFingerprint, answer.served.outcome == .hit,
            answer.decisionValidUntilSeconds > answer.validUntilSeconds,
            Self.variesAlike(answer.stored, among: answer.records),
            let spill = answerSpill, let form = prepare(.decided(answer, now: now))
        else { return nil }
        let recordKey = Array(answer.recordKey.utf8)
        guard let spilledForm = form.spilled(),
            let place = spill.append(recordKey, spilledForm.identity, spilledForm.head, spilledForm.body)
        else { return (form, false) }
        let stored = answer.stored
        let entry = MemoryEntry.spilled(
            SpilledAnswer(
                place: place,
                keyLength: recordKey.count,
                form: spilledForm,
                recordsFingerprint: fingerprint,
                checkedAtChange: mark.change,
                checkAfterSecond: SpilledAnswer.recheckSecond(
                    after: Int64(answer.workedOutAtSeconds.rounded(.down)),
                    fingerprint: fingerprint
                ),
                correctedInitialAge: rules.correctedInitialAgeSeconds(of: stored),
                responseSeconds: stored.responseSeconds,
                freshness: rules.freshnessSeconds(of: stored),
                decisionValidUntil: answer.decisionValidUntilSeconds
            )
        )
        memory.setUncountedValue(entry, forKey: key, cost: entry.charge(forKey: key))
        // A clear or another handle's removal since the read emptied memory before this entry
        // was in it: it goes too.
        guard levels.storeUnchanged(since: mark) else {
            _ = memory.removeValue(forKey: key)
            return (form, false)
        }
        return (form, true)
    }

    /// Spills `kept`, an answer memory holds in full, while memory evicts for its capacity
    /// (``MemoryEvictionWatch``): its records and body are read again from the disk index and,
    /// when they are the records memory holds, the answer is spilled as a disk read's is and
    /// memory lets the kept answer, the records and the body go, keeping the place (about 280
    /// bytes where they took about four kilobytes for a 1 KiB response). The room goes to more
    /// answers: with 100,000 URLs and 64 MB, answers kept in full when they were stored took the
    /// room of spilled ones, which then were read from disk and spilled again, again and again.
    ///
    /// - Returns: The spilled answer's form; `nil` when it cannot be (the records not on disk yet,
    ///   kept in memory only, or another copy there; several variants of the URL; an answer that
    ///   does not spill), and then `kept` is not tried again.
    func spillKept<Form: PreparedForm>(
        _ kept: PreparedAnswer,
        preparedKey: String,
        spillKey: String,
        cacheRequest: HTTPRequest,
        now: Date,
        prepare: (PreparationStep<Form>) -> Form?
    ) -> MemoryHit<Form>? {
        // What `spill` requires and memory already tells, before reading the disk index.
        guard kept.outcome == .hit, Self.variesAlike(kept.stored, among: kept.records) else {
            kept.spillDeclined.store(true, ordering: .relaxed)
            return nil
        }
        let mark = levels.beginRead()
        // The variants of a URL share the place of one spilled answer (the target and `Host`
        // find it): spilled, answers to requests for two of them in turn would each push the
        // other's out, and every hit would read the disk index again. They stay in full.
        guard kept.records.count == 1,
            let answer = memoryAnswer(
                to: cacheRequest,
                readsDiskIndex: true,
                keepsDiskReads: false,
                readsMemory: false
            ),
            answer.records == kept.records,
            let spilled = spill(answer, underKey: spillKey, readAt: mark, now: now, prepare: prepare),
            spilled.spilled
        else {
            kept.spillDeclined.store(true, ordering: .relaxed)
            return nil
        }
        _ = memory.removeValue(forKey: preparedKey)
        // Only what is still the copy spilled from: a store since put another one there.
        if case .variants(let held) = memory.uncountedValue(forKey: kept.recordKey), held == kept.records {
            _ = memory.removeValue(forKey: kept.recordKey)
        }
        if let bodyKey = answer.selectedRecord?.bodyKey {
            _ = memory.removeValue(forKey: bodyKey)
        }
        return .formed(spilled.form, answer)
    }

    /// Keeps in memory the records and body `answer` read from the disk index, when its answer was
    /// not spilled: the next request for it is then answered from memory, as it is where nothing
    /// spills, not from the index again. Nothing is kept when anything changed since the read
    /// began at `mark` (``CacheLevels/keepInMemory(_:forKey:cost:readAt:)``), nor a body over the
    /// memory level's entry limit or of another length than its record gives.
    func keepDiskRead(_ answer: MemoryAnswer, readAt mark: CacheLevels<MemoryEntry>.ReadMark) {
        let records = MemoryEntry.variants(answer.records)
        guard
            levels.keepInMemory(
                records,
                forKey: answer.recordKey,
                cost: records.charge(forKey: answer.recordKey),
                readAt: mark
            ),
            let record = answer.selectedRecord,
            let bytes = answer.served.body.bytesInMemory, Int64(bytes.count) <= memoryBodyLimit,
            record.stored.bodyLength.map({ $0 == Int64(bytes.count) }) ?? true
        else { return }
        let body = MemoryEntry.body(bytes)
        _ = levels.keepInMemory(body, forKey: record.bodyKey, cost: body.charge(forKey: record.bodyKey), readAt: mark)
    }
}
