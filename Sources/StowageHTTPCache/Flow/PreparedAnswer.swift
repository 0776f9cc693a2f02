import Foundation
import HTTPTypes
import Synchronization

/// What a server keeps of an answer it prepared from memory: the bytes it writes for it (the
/// caching proxy's HTTP/1 head and body), or the request it answers (``HTTPCache``'s own
/// ``HTTPCache/respond(to:body:policy:fetch:)``, which the Hummingbird and Vapor middleware
/// call). Kept with the answer as one entry of the HTTP cache's memory level
/// (``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``), so its bytes count
/// against `memoryCapacity` and go by the same least-recently-used eviction as responses.
package protocol PreparedForm: AnyObject, Sendable {
    /// The request as the server has it.
    associatedtype Request
    /// Whether this form was prepared for `request`: the same method, target and every field,
    /// byte for byte (whatever a field changes — `Vary`, conditions, `Cache-Control`, the
    /// operator's key fields — a request that differs gets its own entry).
    func answers(_ request: Request) -> Bool
    /// Whether what the form adds of its own (the proxy's `Date`) is still right at `now`.
    func stands(at now: Date) -> Bool
    /// The heap it holds (``HeapBytes``): itself, the request it answers and the response
    /// head and body it keeps. Charged to the memory level with the entry.
    var byteCount: Int { get }
    /// Whether the server needs the cache's response with it (its fields and body): kept, and
    /// its body charged, only then.
    static var usesResponse: Bool { get }
    /// Whether answers worked out from disk reads are spilled in this form (``spilled()``)
    /// rather than their records and bodies kept in memory. Default `false`.
    static var spills: Bool { get }
    /// The form as the cache spills an answer it worked out from a disk read (``SpilledForm``):
    /// `nil` (the default) to spill nothing.
    func spilled() -> SpilledForm?
    /// Whether `request` is the request whose ``SpilledForm/identity`` is `identity`. Default `false`.
    static func answers(_ request: Request, spilledIdentity identity: ArraySlice<UInt8>) -> Bool
}

extension PreparedForm {
    package func stands(at now: Date) -> Bool { true }
    package static var spills: Bool { false }
    package func spilled() -> SpilledForm? { nil }
    package static func answers(_ request: Request, spilledIdentity identity: ArraySlice<UInt8>) -> Bool { false }
}

/// A step of ``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)`` that asks
/// the server for a form.
package enum PreparationStep<Form: PreparedForm> {
    /// The cache decided `answer` now: the form for it, or `nil` to keep none (a `HEAD`, a 304,
    /// no body), with `now` from the cache's clock.
    case decided(MemoryAnswer, now: Date)
    /// `form`'s decision still stands, but its `Age` and `Cache-Status` (or what it added of its
    /// own, ``PreparedForm/stands(at:)``) are those of an earlier second: the same form with
    /// these, or `nil` to have the cache decide again.
    case refresh(Form, age: String, cacheStatus: String, now: Date)
}

/// What ``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)`` gives.
package enum MemoryHit<Form: PreparedForm> {
    /// A prepared answer that stands: the form to send, and how it was served.
    case prepared(Form, PreparedAnswer)
    /// An answer decided now and not kept: respond from it.
    case decided(MemoryAnswer)
    /// An answer decided now from a disk read and spilled, not kept in memory: the form the
    /// server prepared for it.
    case formed(Form, MemoryAnswer)
    /// An answer spilled when it was read from disk, read back and standing: send its bytes.
    case spilled(SpilledHit)
}

/// A server's prepared answer as the memory level keeps it: the form, what the decision depends
/// on, and until when its `Age` and `Cache-Status` are those of now.
///
/// A class, immutable: a hit takes it out of the table with one reference count, where a
/// struct of a dozen references cost a dozen (a tenth of the proxy's hit path, `perf`, 10,000
/// URLs). A refresh puts a new one in its place.
package final class PreparedAnswer: Sendable {
    /// How it was served: hit or stale.
    package let outcome: CacheOutcome
    /// The cache's response, for a form that uses it (``PreparedForm/usesResponse``).
    package let served: CachedResponse?
    let form: any AnyObject & Sendable
    let recordKey: String
    let records: [VariantRecord]
    let stored: StoredResponse
    /// From when and until when (the cache's clock, seconds since 1970) its fields are those of
    /// now: before it, the clock was set back.
    let fieldsValidFrom: Double
    let fieldsValidUntil: Double
    /// Until when its decision stands (a request with directives of its own may be decided
    /// otherwise as the response ages).
    let decisionValidUntil: Double
    /// The memory level's content version at which it was last found to stand.
    let seenAt: Atomic<UInt64>
    /// Whether spilling it was tried and could not be (``HTTPCache/spillKept(_:preparedKey:spillKey:cacheRequest:now:prepare:)``):
    /// not tried again, which would read the disk index on every hit.
    let spillDeclined: Atomic<Bool>
    /// What it counts for against `memoryCapacity`.
    let cost: Int
    /// What of ``cost`` is the form's bytes.
    private let formBytes: Int

    init(
        answer: MemoryAnswer,
        form: some PreparedForm,
        keepsResponse: Bool,
        fieldsValidFrom: Double,
        fieldsValidUntil: Double,
        seenAt: UInt64
    ) {
        outcome = answer.served.outcome
        served = keepsResponse ? answer.served : nil
        self.form = form
        recordKey = answer.recordKey
        records = answer.records
        stored = answer.stored
        self.fieldsValidFrom = fieldsValidFrom
        self.fieldsValidUntil = fieldsValidUntil
        decisionValidUntil = answer.decisionValidUntilSeconds
        self.seenAt = Atomic(seenAt)
        spillDeclined = Atomic(false)
        // The form's heap, the response when kept (its fields, and its body, which may outlive
        // the body entry), this object and its record key (HeapBytes). The records and the stored
        // response are the records entry's: shared, not copied, and evicted before this entry
        // (it is made after them), or looked up and found gone at its next use.
        formBytes = form.byteCount
        cost =
            formBytes + (keepsResponse ? Self.heapBytes(of: answer.served) : 0)
            + HeapBytes.object(storedBytes: Self.storedBytes) + HeapBytes.string(recordKey)
    }

    /// The bytes of this object's stored properties.
    static let storedBytes =
        MemoryLayout<CacheOutcome>.stride + MemoryLayout<CachedResponse?>.stride
        + MemoryLayout<any AnyObject & Sendable>.stride + MemoryLayout<String>.stride
        + MemoryLayout<[VariantRecord]>.stride + MemoryLayout<StoredResponse>.stride
        + 3 * MemoryLayout<Double>.stride + MemoryLayout<UInt64>.stride + MemoryLayout<Bool>.stride
        + 2 * MemoryLayout<Int>.stride

    /// The heap of a response kept with the answer: its fields, its body's bytes and its user info.
    static func heapBytes(of served: CachedResponse) -> Int {
        HeapBytes.fields(served.response.headerFields) + HeapBytes.string(served.response.status.reasonPhrase)
            + (served.body.bytesInMemory.map { HeapBytes.buffer($0) } ?? 0) + HeapBytes.dictionary(served.userInfo)
            + HeapBytes.buffer(served.notes)
    }

    /// This answer with `form` in place of its own, its fields valid from `from` until `until`.
    init(refreshing old: PreparedAnswer, form: some PreparedForm, from: Double, until: Double, seenAt: UInt64) {
        outcome = old.outcome
        served = old.served
        self.form = form
        recordKey = old.recordKey
        records = old.records
        stored = old.stored
        fieldsValidFrom = from
        fieldsValidUntil = until
        decisionValidUntil = old.decisionValidUntil
        self.seenAt = Atomic(seenAt)
        spillDeclined = Atomic(old.spillDeclined.load(ordering: .relaxed))
        formBytes = form.byteCount
        cost = old.cost - old.formBytes + formBytes
    }
}

/// A request as ``HTTPCache``'s own prepared answers tell requests apart: method, scheme,
/// authority, path and every field, in order. Cheaper than `HTTPRequest`'s own `Hashable`,
/// which hashes its fields grouped by name (a dictionary per hash) so that differently ordered
/// fields compare equal; here a request with the same fields in another order is only another
/// entry.
struct RequestIdentity: Hashable {
    let method: String
    let scheme: String?
    let authority: String?
    let path: String?
    let fields: HTTPFields

    init(_ request: HTTPRequest) {
        method = request.method.rawValue
        scheme = request.scheme
        authority = request.authority
        path = request.path
        fields = request.headerFields
    }

    static func == (lhs: RequestIdentity, rhs: RequestIdentity) -> Bool {
        lhs.path == rhs.path && lhs.authority == rhs.authority && lhs.method == rhs.method
            && lhs.scheme == rhs.scheme && lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(authority)
        hasher.combine(method)
        hasher.combine(scheme)
        for field in fields {
            hasher.combine(field.name.canonicalName)
            hasher.combine(field.value)
        }
    }

    /// The heap of the request's method, target and fields (``HeapBytes``), as a prepared answer
    /// is charged for them.
    var heapBytes: Int {
        HeapBytes.string(method) + HeapBytes.string(scheme) + HeapBytes.string(authority) + HeapBytes.string(path)
            + HeapBytes.fields(fields)
    }
}

/// ``HTTPCache``'s own form: the request an answer was given to, so the same request again gets
/// the same answer within the second its `Age` and `Cache-Status` stay the same.
final class AnsweredRequest: PreparedForm {
    let identity: RequestIdentity
    init(_ identity: RequestIdentity) { self.identity = identity }
    func answers(_ request: RequestIdentity) -> Bool { request == identity }
    var byteCount: Int { HeapBytes.object(storedBytes: MemoryLayout<RequestIdentity>.stride) + identity.heapBytes }
    static var usesResponse: Bool { true }
}
