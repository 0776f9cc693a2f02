import HTTPTypes
import NIOCore
import NIOHTTP1
import StowageHTTPCache
import Synchronization

/// Hits already worked out as HTTP/1 response heads and bodies, by the request they answer, so
/// the same request again gets the same response without deciding again — the way Varnish keeps
/// an object's response head ready to send.
///
/// An entry holds the response as the bytes to write (``EncodedResponse``), and is used only
/// while the cache says its answer stands (``HTTPCache/isCurrent(_:)``: the same records in
/// memory, and within the second in which the response's `Age` and `Cache-Status` stay the
/// same) and the proxy's `Date` for it, when it adds one, is the same second. A request matches
/// an entry only when its method, target, version and every field are the same, byte for byte:
/// whatever a request field changes (`Vary`, conditions, `Cache-Control`, the operator's key
/// fields), a request that differs gets its own entry.
///
/// Bounded: at most ``maximumEntries`` entries and ``maximumBytes`` of request fields, response
/// heads and bodies (half the cache's memory capacity, as the proxy makes it); when
/// either is reached, entries chosen at random make room for the new one. A request whose
/// fields are over ``maximumRequestFieldBytes`` is not kept.
final class EncodedHits: Sendable {
    /// One request's answer, ready to write.
    ///
    /// A class, immutable: a hit takes it out of the table with one reference count, where a
    /// struct of a dozen references cost a dozen (a tenth of the hit path's time, `perf`, 10,000
    /// URLs). A refresh puts a new entry in its place.
    final class Entry: Sendable {
        let method: HTTPMethod
        let uri: String
        let headers: HTTPHeaders
        /// The response head, framed by `Content-Length` (``EncodedResponse/framed(_:bodyLength:)``).
        let head: HTTPResponseHead
        /// The head and body as the bytes to write.
        let encoded: EncodedResponse
        /// From when and until when (the cache's clock) its `Age` and `Cache-Status` are those of
        /// now: before it, the clock was set back.
        let fieldsValidFrom: Double
        let fieldsValidUntil: Double
        /// The cache's answer it was encoded from, by reference (shared with its refreshed
        /// entries).
        let answer: KeptMemoryAnswer
        /// `answer`'s outcome.
        var outcome: CacheOutcome { answer.outcome }
        /// The second (since 1970) of the `Date` the proxy added; `nil` when the origin's is used.
        let addedDateSecond: Int64?
        /// The version of the cache's memory contents at which `answer` was last found to
        /// stand (``HTTPCache/decisionStands(_:now:seenAt:)``).
        let memoryVersion: Atomic<UInt64>

        init(
            method: HTTPMethod,
            uri: String,
            headers: HTTPHeaders,
            head: HTTPResponseHead,
            fieldsValidFrom: Double,
            fieldsValidUntil: Double,
            body: ByteBuffer,
            answer: KeptMemoryAnswer,
            addedDateSecond: Int64?,
            memoryVersion: UInt64,
            isFramed: Bool = false
        ) {
            self.method = method
            self.uri = uri
            self.headers = headers
            self.head = isFramed ? head : EncodedResponse.framed(head, bodyLength: body.readableBytes)
            encoded = EncodedResponse(head: self.head, body: body)
            self.fieldsValidFrom = fieldsValidFrom
            self.fieldsValidUntil = fieldsValidUntil
            self.answer = answer
            self.addedDateSecond = addedDateSecond
            self.memoryVersion = Atomic(memoryVersion)
        }

        /// The response body (a view of ``encoded``'s bytes, not a copy).
        var body: ByteBuffer { encoded.body }

        /// This entry with `head` (its own, with `Age` and `Cache-Status` brought up to date),
        /// valid from `fieldsValidFrom` until `fieldsValidUntil`, standing at `memoryVersion`.
        func refreshed(
            head: HTTPResponseHead,
            fieldsValidFrom: Double,
            fieldsValidUntil: Double,
            memoryVersion: UInt64
        ) -> Entry {
            Entry(
                method: method,
                uri: uri,
                headers: headers,
                head: head,
                fieldsValidFrom: fieldsValidFrom,
                fieldsValidUntil: fieldsValidUntil,
                body: body,
                answer: answer,
                addedDateSecond: addedDateSecond,
                memoryVersion: memoryVersion,
                isFramed: true
            )
        }

        func matches(_ request: HTTPRequestHead) -> Bool {
            request.method == method && request.uri == uri
                && request.headers.elementsEqual(headers) { $0.name == $1.name && $0.value == $1.value }
        }
    }

    static let maximumEntries = 50_000
    /// The largest request fields (names and values) an entry is kept for: a client cannot
    /// fill the table with a few huge requests.
    static let maximumRequestFieldBytes = 16 << 10
    /// The most bytes the entries may hold, heads, bodies and a fixed 256 per entry counted.
    let maximumBytes: Int

    init(maximumBytes: Int) {
        self.maximumBytes = max(0, maximumBytes)
    }

    private struct Table {
        var entries: [Int: Entry] = [:]
        var bytes = 0
    }

    private let table = Mutex(Table())

    /// The entry for `request` if there is one; its currency is for the caller to check.
    func entry(for request: HTTPRequestHead, hash: Int) -> Entry? {
        guard let entry = table.withLock({ $0.entries[hash] }), entry.matches(request) else { return nil }
        return entry
    }

    func insert(_ entry: Entry, hash: Int) {
        let size = Self.size(of: entry)
        guard size <= maximumBytes, Self.fieldBytes(entry.headers) <= Self.maximumRequestFieldBytes else { return }
        table.withLock { table in
            if let replaced = table.entries.removeValue(forKey: hash) {
                table.bytes -= Self.size(of: replaced)
            }
            // Room is made one entry at a time, the first in the table's order, which follows
            // the keys' hashes: a random choice, as Redis's `allkeys-random`. Emptying the whole
            // table instead made a working set just over the bound miss on every pass.
            while !table.entries.isEmpty,
                table.entries.count >= Self.maximumEntries || table.bytes + size > maximumBytes
            {
                let evicted = table.entries.remove(at: table.entries.startIndex)
                table.bytes -= Self.size(of: evicted.value)
            }
            table.entries[hash] = entry
            table.bytes += size
        }
    }

    /// The bytes `entry` holds, as the bound counts them: request fields, the encoded response
    /// (head and body), the target and a fixed 256.
    static func size(of entry: Entry) -> Int {
        fieldBytes(entry.headers) + entry.encoded.byteCount + entry.uri.utf8.count + 256
    }

    /// The bytes of `headers`' names and values, with four for each line's separators.
    static func fieldBytes(_ headers: HTTPHeaders) -> Int {
        headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    /// Puts `refreshed` in the place of `original` under `hash`, if `original` is still there
    /// (not one put in its place meanwhile, worked out at another time).
    func replace(_ original: Entry, with refreshed: Entry, hash: Int) {
        table.withLock { table in
            guard let current = table.entries[hash], current === original else { return }
            table.entries[hash] = refreshed
            table.bytes += Self.size(of: refreshed) - Self.size(of: original)  // Age's digits may differ
        }
    }

    /// The key of `request` in the table: its method, target and fields.
    static func hash(_ request: HTTPRequestHead) -> Int {
        var hasher = Hasher()
        hasher.combine(request.uri)
        hasher.combine(request.method.rawValue)
        for (name, value) in request.headers {
            hasher.combine(name)
            hasher.combine(value)
        }
        return hasher.finalize()
    }
}
