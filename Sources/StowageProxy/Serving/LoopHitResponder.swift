import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import StowageCore
import StowageHTTPCache

/// Works out on the event loop the answer to a request that a hit held in memory can give
/// (``MemoryHitHandler`` writes it).
///
/// A keep-alive HTTP/1.1 request seen before, whose answer still stands, gets the response head
/// and body worked out for it then (``EncodedHits``); another gets the cache's answer from
/// memory (``ProxyHandler/respondFromMemory(to:)``), kept for next time when it has a body.
final class LoopHitResponder: Sendable {
    /// What to write: a response for the HTTP/1 encoder (and the connection handling before
    /// it, which answers HTTP/1.0 in kind and closes when asked to). The encoder writes every
    /// response: NIO's server pipeline pairs it with the request decoder, which queues each
    /// request's method there so a response to `HEAD` is sent without a body; bytes written
    /// past it would leave that queue a request behind.
    struct Answer {
        var head: HTTPResponseHead
        var body: ByteBuffer?
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
        hits = EncodedHits(maximumBytes: Int(clamping: capacity / 4))
        // Not while each request is logged, nor with the trace, which states the age.
        keepsEncodedAnswers = handler.configuration.logger.logLevel > .debug && !handler.configuration.sendsTrace
    }

    /// The answer to `head`, or `nil` for the async path.
    func answer(_ head: HTTPRequestHead) -> Answer? {
        let encodable = keepsEncodedAnswers && head.version == .http1_1 && head.isKeepAlive
        var hash = 0
        if encodable {
            hash = EncodedHits.hash(head)
            if let entry = hits.entry(for: head, hash: hash), decisionStands(entry) {
                let outcome = entry.outcome
                handler.metrics.record(outcome)
                handler.metrics.recordServed(entry.body.readableBytes, outcome: outcome)
                // The cache's clock, as dateClock is.
                let now = dateClock.now().timeIntervalSince1970
                if now >= entry.fieldsValidUntil || now < entry.fieldsValidFrom {
                    // The same response a whole second or more on (or the clock set back): its
                    // Age and ttl of now, kept for the rest of that second.
                    var head = entry.head
                    let (age, cacheStatus, validUntil) = handler.cache.currentFieldsSeconds(of: entry.answer)
                    head.headers.replaceOrAdd(name: "Age", value: age)
                    head.headers.replaceOrAdd(name: "Cache-Status", value: cacheStatus)
                    let refreshed = entry.refreshed(head: head, fieldsValidFrom: now, fieldsValidUntil: validUntil)
                    hits.replace(entry, with: refreshed, hash: hash)
                    return Answer(head: head, body: entry.body)
                }
                return Answer(head: entry.head, body: entry.body)
            }
        }
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
        guard encodable, let body else { return Answer(head: responseHead, body: body) }
        let entry = EncodedHits.Entry(
            method: head.method,
            uri: head.uri,
            headers: head.headers,
            head: responseHead,
            fieldsValidFrom: answer.workedOutAtSeconds,
            fieldsValidUntil: answer.validUntilSeconds,
            body: body,
            answer: answer,
            addedDateSecond: addedDateSecond
        )
        hits.insert(entry, hash: hash)
        return Answer(head: responseHead, body: body)
    }

    /// Whether `entry` may be sent again (with its `Age` and `Cache-Status` brought up to now): the
    /// cache's decision stands, and a `Date` the proxy added is of this second.
    private func decisionStands(_ entry: EncodedHits.Entry) -> Bool {
        if let second = entry.addedDateSecond, Int64(dateClock.now().timeIntervalSince1970) != second { return false }
        return handler.cache.decisionStands(entry.answer)
    }
}
