import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import StowageCore
import StowageHTTPCache
import Synchronization

/// Works out on the event loop the answer to a request that a hit held in memory can give
/// (``MemoryHitHandler`` writes it).
///
/// A keep-alive HTTP/1.1 request seen before, whose answer still stands, gets the response head
/// and body worked out for it then (``EncodedHits``); another gets the cache's answer from
/// memory (``ProxyHandler/respondFromMemory(to:)``), kept for next time when it has a body.
final class LoopHitResponder: Sendable {
    /// What to write.
    enum Answer {
        /// A response for the HTTP/1 encoder (and the connection handling before it, which
        /// answers HTTP/1.0 in kind and closes when asked to).
        case response(HTTPResponseHead, body: ByteBuffer?)
        /// The bytes of a response to a keep-alive HTTP/1.1 `GET`, written past the encoder.
        case encoded(EncodedResponse)
    }

    private let handler: ProxyHandler
    /// The `Date` a response without one gets (RFC 9110 §6.6.1), as the async path adds it.
    private let dateClock: CacheClock
    private let hits: EncodedHits
    /// Whether answers are kept as bytes: not while every request is to be logged.
    private let keepsEncodedAnswers: Bool

    init(handler: ProxyHandler, dateClock: CacheClock) {
        self.handler = handler
        self.dateClock = dateClock
        let capacity = handler.configuration.cache.memoryCapacity.rawValue
        hits = EncodedHits(maximumBytes: Int(clamping: capacity / 2))
        // Not while each request is logged, nor with the trace, which states the age.
        keepsEncodedAnswers = handler.configuration.logger.logLevel > .debug && !handler.configuration.sendsTrace
    }

    /// The answer to `head`, or `nil` for the async path.
    func answer(_ head: HTTPRequestHead) -> Answer? {
        let encodable = keepsEncodedAnswers && head.version == .http1_1 && head.isKeepAlive
        var hash = 0
        if encodable {
            hash = EncodedHits.hash(head)
            if let entry = hits.entry(for: head, hash: hash), let kept = keptAnswer(entry, hash: hash) {
                return .encoded(kept)
            }
        }
        // Read before the answer is worked out, so a change meanwhile is seen as one.
        let memoryVersion = encodable ? handler.cache.memoryContentVersion : .max
        guard let request = try? HTTPRequest(head, secure: false, splitCookie: false),
            let (response, body, answer) = handler.respondFromMemory(to: request)
        else { return nil }
        var complete = response
        var addedDateSecond: Int64?
        if complete.headerFields[.date] == nil {
            let second = Int64(dateClock.now().timeIntervalSince1970)
            complete.headerFields[.date] = HTTPDate.format(second)
            addedDateSecond = second
        }
        let responseHead = HTTPResponseHead(complete)
        guard encodable, head.method == .GET, let body else { return .response(responseHead, body: body) }
        let entry = EncodedHits.Entry(
            method: head.method,
            uri: head.uri,
            headers: head.headers,
            head: responseHead,
            fieldsValidFrom: answer.workedOutAtSeconds,
            fieldsValidUntil: answer.validUntilSeconds,
            body: body,
            answer: KeptMemoryAnswer(answer),
            addedDateSecond: addedDateSecond,
            memoryVersion: memoryVersion
        )
        hits.insert(entry, hash: hash)
        return .encoded(entry.encoded)
    }

    /// The bytes of `entry` when its answer still stands, with `Age` and `Cache-Status` of now;
    /// `nil` when the cache must be asked again.
    private func keptAnswer(_ entry: EncodedHits.Entry, hash: Int) -> EncodedResponse? {
        // The cache's clock, as dateClock is.
        let now = dateClock.now().timeIntervalSince1970
        // Within the second its `Age` and `Cache-Status` were worked out for, memory contents
        // unchanged since are enough; a whole second or more on (or the clock set back) the
        // records are looked up again, which keeps them recently used.
        let fieldsCurrent = now < entry.fieldsValidUntil && now >= entry.fieldsValidFrom
        let seen = entry.memoryVersion.load(ordering: .relaxed)
        guard dateStands(entry, now: now),
            let version = handler.cache.decisionStands(entry.answer, now: now, seenAt: fieldsCurrent ? seen : nil)
        else { return nil }
        let outcome = entry.outcome
        handler.metrics.record(outcome)
        handler.metrics.recordServed(entry.encoded.bodyLength, outcome: outcome)
        if fieldsCurrent {
            if version != seen { entry.memoryVersion.store(version, ordering: .relaxed) }
            return entry.encoded
        }
        // The same response with its Age and ttl of now, kept for the rest of that second.
        var head = entry.head
        let (age, cacheStatus, validUntil) = handler.cache.currentFieldsSeconds(of: entry.answer)
        head.headers.replaceOrAdd(name: "Age", value: age)
        head.headers.replaceOrAdd(name: "Cache-Status", value: cacheStatus)
        let refreshed = entry.refreshed(
            head: head,
            fieldsValidFrom: now,
            fieldsValidUntil: validUntil,
            memoryVersion: version
        )
        hits.replace(entry, with: refreshed, hash: hash)
        return refreshed.encoded
    }

    /// Whether a `Date` the proxy added to `entry` is of the second of `now`.
    private func dateStands(_ entry: EncodedHits.Entry, now: Double) -> Bool {
        guard let second = entry.addedDateSecond else { return true }
        return Int64(now) == second
    }
}
