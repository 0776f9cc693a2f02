import HTTPTypes
import Synchronization

/// Answers from memory given lately, by the request they answered, so the same request again
/// gets the same answer without deciding again while ``HTTPCache/isCurrent(_:)`` holds: within
/// the second its `Age` and `Cache-Status` stay the same, and while the records it came from
/// are still the ones in memory. The caching proxy keeps its hits as encoded bytes the same
/// way, as Varnish keeps an object's response head ready to send.
///
/// A request matches only an equal request (method, target and every field): whatever a field
/// changes (`Vary`, conditions, `Cache-Control`), a request that differs gets its own entry.
/// Bounded: at most ``maximumEntries`` entries and `maximumBytes` of bodies (plus 512 per entry
/// for the request and the head, or the request's target and fields when they are more); entries
/// chosen at random make room, as Redis's `allkeys-random`.
final class RecentAnswers: Sendable {
    static let maximumEntries = 4_096
    /// The bytes entries may hold; 0 keeps nothing.
    let maximumBytes: Int

    private struct Table {
        var entries: [RequestIdentity: Kept] = [:]
        var bytes = 0
    }

    /// An answer as kept: taken out of the table with one reference count, not a copy of each
    /// of the answer's references.
    final class Kept: Sendable {
        let answer: MemoryAnswer
        /// The bytes it counts for (``size(of:for:)``).
        let size: Int
        init(_ answer: MemoryAnswer, size: Int) {
            self.answer = answer
            self.size = size
        }
    }

    private let table = Mutex(Table())

    init(maximumBytes: Int) {
        self.maximumBytes = max(0, maximumBytes)
    }

    /// The answer last given to `request`, if one is kept; whether it stands is for the caller.
    func answer(to request: HTTPRequest) -> Kept? {
        let identity = RequestIdentity(request)
        return table.withLock { $0.entries[identity] }
    }

    /// Keeps `answer` for `request`, making room at random when the bound is reached.
    func keep(_ answer: MemoryAnswer, for request: HTTPRequest) {
        let size = Self.size(of: answer, for: request)
        guard size <= maximumBytes else { return }
        let identity = RequestIdentity(request)
        let kept = Kept(answer, size: size)
        table.withLock { table in
            if let replaced = table.entries.removeValue(forKey: identity) {
                table.bytes -= replaced.size
            }
            while !table.entries.isEmpty,
                table.entries.count >= Self.maximumEntries || table.bytes + size > maximumBytes
            {
                let evicted = table.entries.remove(at: table.entries.startIndex)
                table.bytes -= evicted.value.size
            }
            table.entries[identity] = kept
            table.bytes += size
        }
    }

    /// Forgets every answer: what they hold (bodies) is no longer kept alive by the table.
    func removeAll() {
        table.withLock { $0 = Table() }
    }

    /// The bytes `answer` to `request` counts for: its body and 512, or the request's target and
    /// fields when they are more (a client's requests with large fields, each kept, would
    /// otherwise hold far more than the bound).
    static func size(of answer: MemoryAnswer, for request: HTTPRequest) -> Int {
        var requestBytes = (request.path?.utf8.count ?? 0) + (request.authority?.utf8.count ?? 0)
        for field in request.headerFields {
            requestBytes += field.name.rawName.utf8.count + field.value.utf8.count + 4
        }
        return (answer.served.body.bytesInMemory?.count ?? 0) + max(512, requestBytes)
    }
}

/// A request as ``RecentAnswers`` tells requests apart: method, scheme, authority, path and every
/// field, in order. Cheaper than `HTTPRequest`'s own `Hashable`, which hashes its fields grouped
/// by name (a dictionary per hash) so that differently ordered fields compare equal; here a
/// request with the same fields in another order is only another entry.
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
}
