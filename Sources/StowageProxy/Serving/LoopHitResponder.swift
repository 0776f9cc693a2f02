import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import StowageCore
import StowageHTTPCache
import Synchronization
import Tracing

/// Works out on the event loop the answer to a request that a hit held in memory or in the disk
/// cache's index can give (``MemoryHitHandler`` writes it), through the HTTP cache's one entry
/// point for it (``HTTPCache/answerFromMemory(to:hash:prepares:readsDiskIndex:cacheRequest:prepare:)``).
///
/// A record or body that memory does not hold is read from the disk index right here, one
/// indexed `SELECT` on the loop's thread, as nginx reads a cached file on the worker that read
/// the request: a hop to the async path and back costs more than the read. Bodies kept in files
/// (over the disk cache's `inlineThreshold`) and every read while requests are traced still go
/// to the async path, which streams and traces them.
///
/// A keep-alive HTTP/1.1 `GET` gets its answer kept by the cache's memory level as the bytes to
/// write (``EncodedAnswer``), charged to `--memory-capacity`; the same request again gets the
/// same bytes while the answer stands. Another request gets the cache's answer from memory,
/// turned into a response here.
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
    /// Whether answers are kept as bytes: not while every request is to be logged.
    private let keepsEncodedAnswers: Bool
    /// Whether hits are read from the disk index here: not while requests are traced, since the
    /// async path makes their spans.
    private let readsDiskIndex: Bool

    init(handler: ProxyHandler) {
        self.handler = handler
        // Not while each request is logged, nor with the trace, which states the age.
        keepsEncodedAnswers = handler.configuration.logger.logLevel > .debug && !handler.configuration.sendsTrace
        readsDiskIndex = (handler.configuration.tracer ?? InstrumentationSystem.tracer) is NoOpTracer
    }

    /// The answer to `head`, or `nil` for the async path.
    func answer(_ head: HTTPRequestHead) -> Answer? {
        let encodable = keepsEncodedAnswers && head.version == .http1_1 && head.isKeepAlive
        // `handler` is read through `self` where it is used: a local copy of the struct cost an
        // outlined copy and destroy on every hit (1.7% of the proxy's samples, `perf`, 10^5 URLs).
        // The response worked out for an answer that is not kept, so it is not worked out twice.
        var unkept: Answer?
        let hit = handler.cache.answerFromMemory(
            to: head,
            hash: encodable ? EncodedAnswer.hash(head) : 0,
            prepares: encodable,
            readsDiskIndex: readsDiskIndex,
            spillHash: encodable && readsDiskIndex ? EncodedAnswer.spillHash(head) : nil,
            cacheRequest: { head in
                guard let request = try? HTTPRequest(head, secure: false, splitCookie: false),
                    ProxyHandler.refuseHost(request) == nil
                else { return nil }
                return handler.upstream(request)
            },
            prepare: { step -> EncodedAnswer? in
                switch step {
                case .decided(let answer, let now):
                    let (response, body) = handler.response(from: answer, method: head.method.rawValue, uri: head.uri)
                    var complete = response
                    var addedDateSecond: Int64?
                    // The `Date` a response without one gets (RFC 9110 §6.6.1), as the async path
                    // adds it, from the cache's clock.
                    if complete.headerFields[.date] == nil {
                        let second = Int64(now.timeIntervalSince1970)
                        complete.headerFields[.date] = HTTPDate.format(second)
                        addedDateSecond = second
                    }
                    let responseHead = HTTPResponseHead(complete)
                    guard head.method == .GET, let body,
                        EncodedAnswer.fieldBytes(head.headers) <= EncodedAnswer.maximumRequestFieldBytes
                    else {
                        unkept = .response(responseHead, body: body)
                        return nil
                    }
                    return EncodedAnswer(
                        request: head,
                        head: responseHead,
                        body: body,
                        addedDateSecond: addedDateSecond
                    )
                case .refresh(let form, let age, let cacheStatus, let now):
                    return form.refreshed(age: age, cacheStatus: cacheStatus, now: now)
                }
            }
        )
        switch hit {
        case .prepared(let form, let kept):
            handler.metrics.record(kept.outcome)
            handler.metrics.recordServed(form.encoded.bodyLength, outcome: kept.outcome)
            return .encoded(form.encoded)
        case .formed(let form, let answer):
            handler.metrics.record(answer.served.outcome)
            handler.metrics.recordServed(form.encoded.bodyLength, outcome: answer.served.outcome)
            return .encoded(form.encoded)
        case .spilled(let hit):
            handler.metrics.record(hit.outcome)
            handler.metrics.recordServed(hit.body.count, outcome: hit.outcome)
            return .encoded(EncodedResponse(hit))
        case .decided(let answer):
            if let unkept {
                handler.metrics.record(answer.served.outcome)
                if case .response(_, let body?) = unkept {
                    handler.metrics.recordServed(body.readableBytes, outcome: answer.served.outcome)
                }
                return unkept
            }
            let (response, body) = handler.response(from: answer, method: head.method.rawValue, uri: head.uri)
            handler.metrics.record(answer.served.outcome)
            if let body { handler.metrics.recordServed(body.readableBytes, outcome: answer.served.outcome) }
            var complete = response
            if complete.headerFields[.date] == nil {
                let second = Int64(handler.configuration.cache.clock.now().timeIntervalSince1970)
                complete.headerFields[.date] = HTTPDate.format(second)
            }
            return .response(HTTPResponseHead(complete), body: body)
        case nil:
            return nil
        }
    }
}
