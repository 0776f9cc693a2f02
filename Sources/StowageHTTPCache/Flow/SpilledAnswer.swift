import Foundation
import Synchronization

/// What a server's form gives the cache to spill (``PreparedForm/spilled()``): the bytes that
/// tell its request apart, and its response as the bytes to send but for the fields the cache
/// sets on every hit (`Age`, `Cache-Status`, and the `Date` a server adds), which come after the
/// head's other fields when it is sent again (``SpilledHit``).
package struct SpilledForm: Sendable {
    /// The request as ``PreparedForm/answers(_:spilledIdentity:)`` compares it.
    package var identity: [UInt8]
    /// The status line and fields, each line ended by CRLF, without the empty line after them.
    package var head: [UInt8]
    package var body: [UInt8]
    /// Whether the server adds `Date` (the origin's response had none): sent again with the
    /// second of that hit.
    package var addsDate: Bool

    package init(identity: [UInt8], head: [UInt8], body: [UInt8], addsDate: Bool) {
        self.identity = identity
        self.head = head
        self.body = body
        self.addsDate = addsDate
    }
}

/// A spilled answer found standing (``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``):
/// the bytes read back and the fields of this hit, for the server to send as
/// `head`, `Age`, `Cache-Status`, `Date` when ``addsDate``, the empty line, and `body`.
package struct SpilledHit: Sendable {
    /// The record as read: record key, identity, head and body.
    package let bytes: [UInt8]
    package let head: Range<Int>
    package let body: Range<Int>
    package let age: String
    package let cacheStatus: String
    package let addsDate: Bool
    /// The cache clock's time of the hit, for the `Date` a server adds.
    package let now: Date
    /// How it is served: a hit.
    package let outcome: CacheOutcome

    package init(
        bytes: [UInt8],
        head: Range<Int>,
        body: Range<Int>,
        age: String,
        cacheStatus: String,
        addsDate: Bool,
        now: Date,
        outcome: CacheOutcome
    ) {
        precondition(
            head.upperBound <= body.lowerBound && body.upperBound <= bytes.count,
            "a spilled hit's parts are in its bytes"
        )
        self.bytes = bytes
        self.head = head
        self.body = body
        self.age = age
        self.cacheStatus = cacheStatus
        self.addsDate = addsDate
        self.now = now
        self.outcome = outcome
    }
}

/// The memory level's entry of an answer spilled to the ``AnswerSpill`` file: where its bytes
/// are and what its decision depends on, in a hundred-odd bytes of memory where the answer,
/// its record and its body held about four kilobytes. Charged to `memoryCapacity`, evicted and
/// cleared with the level's other entries.
///
/// It stands while the response is fresh and the disk holds the same variant records it was
/// worked out from: when the levels' ``CacheLevels/changeCount`` moved since it was last
/// checked (a write, removal or invalidation through this cache), or every ten minutes (so the
/// records' access time stays that of their use, as nginx's `inactive` counts it), the records'
/// fingerprint is read again from the disk index; a removal through another handle or a clear
/// of the disk empties memory, and it with it (``CacheLevels/followStoreChanges()``).
final class SpilledAnswer: Sendable {
    let place: AnswerSpill.Place
    /// The lengths of the record key, the identity and the head at the start of the record.
    let keyLength: UInt32
    let identityLength: UInt32
    let headLength: UInt32
    let addsDate: Bool
    /// ``DiskCache/StoredData/fingerprint`` of the variant records it was worked out from.
    let recordsFingerprint: UInt64
    /// The levels' change count at which the disk last held those records, and the cache
    /// clock's second after which they are looked up again regardless.
    let checkedAtChange: Atomic<UInt64>
    let checkAfterSecond: Atomic<Int64>
    /// RFC 9111 §4.2.3's corrected initial age and response time, and §4.2.1's freshness
    /// lifetime, in seconds: the `Age` and `Cache-Status` `ttl` of any later second follow.
    let correctedInitialAge: Double
    let responseSeconds: Double
    let freshness: Double
    /// Until when its decision stands: the response's end of freshness.
    let decisionValidUntil: Double

    init(
        place: AnswerSpill.Place,
        keyLength: Int,
        form: SpilledForm,
        recordsFingerprint: UInt64,
        checkedAtChange: UInt64,
        checkAfterSecond: Int64,
        correctedInitialAge: Double,
        responseSeconds: Double,
        freshness: Double,
        decisionValidUntil: Double
    ) {
        self.place = place
        self.keyLength = UInt32(keyLength)
        identityLength = UInt32(form.identity.count)
        headLength = UInt32(form.head.count)
        addsDate = form.addsDate
        self.recordsFingerprint = recordsFingerprint
        self.checkedAtChange = Atomic(checkedAtChange)
        self.checkAfterSecond = Atomic(checkAfterSecond)
        self.correctedInitialAge = correctedInitialAge
        self.responseSeconds = responseSeconds
        self.freshness = freshness
        self.decisionValidUntil = decisionValidUntil
    }

    /// What it counts for against `memoryCapacity`: this object (``HeapBytes``).
    static let cost = HeapBytes.object(
        storedBytes: MemoryLayout<AnswerSpill.Place>.stride + 3 * MemoryLayout<UInt32>.stride
            + MemoryLayout<Bool>.stride + 3 * MemoryLayout<UInt64>.stride + 4 * MemoryLayout<Double>.stride
    )

    /// How often the records are looked up again while nothing changed: ten minutes, the disk
    /// level's access-time resolution (``HTTPCache/diskAccessTimeResolution``), and up to half as
    /// much again (``recheckSecond(after:fingerprint:)``).
    static let recheckSeconds: Int64 = 600

    /// The second after which the records of an answer worked out from records of `fingerprint`
    /// are looked up again, when they were last looked up in `second`: ``recheckSeconds`` later,
    /// plus a part of half as much again that differs from answer to answer (their records'
    /// fingerprints). Answers spilled within a minute of each other — every URL of a warm-up —
    /// would otherwise all be looked up again within one minute ten minutes on, and every such
    /// look-up reads the disk index and rewrites its record's access time: a proxy serving 10^5
    /// URLs made 10^5 of them in that minute and its p99 went from 5 to 30 ms
    /// (`Benchmarks/README.md`). Spread over
    /// five minutes (a jittered expiry, the usual cure for expiries a bulk load synchronized), and
    /// kept spread since each look-up's next second follows from its own.
    static func recheckSecond(after second: Int64, fingerprint: UInt64) -> Int64 {
        second + recheckSeconds + Int64(fingerprint % UInt64(recheckSeconds / 2))
    }

    /// Notes that the records were looked up (or a look-up was handed to the rechecks' lane) in
    /// `second`: the next one is due at ``recheckSecond(after:fingerprint:)``.
    func scheduleNextLookUp(after second: Int64) {
        checkAfterSecond.store(
            Self.recheckSecond(after: second, fingerprint: recordsFingerprint),
            ordering: .relaxed
        )
    }
}
