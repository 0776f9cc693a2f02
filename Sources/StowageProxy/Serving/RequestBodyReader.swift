import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import Synchronization

/// Reads a client's request body whole, before anything goes upstream.
///
/// Forwarding the body as it arrived let the upstream client (AsyncHTTPClient) still be
/// iterating it when the upstream answered early; the handler then returned, and Hummingbird
/// iterated the same body to drain it. Two iterators on one `NIOThrowingAsyncSequenceProducer`
/// crash the process ("we only allow a single Iterator to be created"): one client sending
/// `Content-Length: 1000000` and one byte killed the proxy. Read whole, the body has exactly one
/// reader, done before the handler returns; a body that is too long, stalls or is malformed is
/// answered by the proxy, never blamed on the upstream.
struct RequestBodyReader: Sendable {
    /// Why a body could not be read, each with the status the client gets.
    enum Failure: Error, Sendable {
        /// Longer than the limit: 413.
        case tooLarge(limit: Int)
        /// No bytes for longer than the idle timeout: 408.
        case stalled(Duration)
        /// Not valid HTTP/1.1 framing (e.g. a bad chunk size): 400.
        case malformed(String)
    }

    let limit: Int
    let idleTimeout: Duration
    /// What ``idleTimeout`` is measured by (`ProxyConfiguration.requestBodyIdleClock`).
    let idleClock: any Clock<Duration>

    /// All of `body`'s bytes.
    ///
    /// - Parameter declaredLength: The request's `Content-Length`, if any: a body declared
    ///   longer than the limit is refused before a byte is read.
    /// - Throws: ``Failure``.
    func read(_ body: RequestBody, declaredLength: Int?) async throws(Failure) -> [UInt8] {
        if let declaredLength, declaredLength > limit { throw .tooLarge(limit: limit) }
        return try await read(body, on: idleClock)
    }

    /// ``read(_:declaredLength:)`` with the watchdog on `clock`.
    private func read<C: Clock<Duration>>(_ body: RequestBody, on clock: C) async throws(Failure) -> [UInt8] {
        let limit = self.limit
        let idleTimeout = self.idleTimeout
        let lastProgress = LastProgress(clock: clock)
        do {
            return try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                group.addTask {
                    var bytes: [UInt8] = []
                    for try await chunk in body {
                        guard bytes.count + chunk.readableBytes <= limit else { throw Failure.tooLarge(limit: limit) }
                        bytes += chunk.readableBytesView
                        lastProgress.mark()
                    }
                    return bytes
                }
                group.addTask {
                    // The watchdog: wakes a few times per timeout and gives up on a silent client.
                    while true {
                        try await clock.sleep(for: idleTimeout / 4)
                        if lastProgress.silence > idleTimeout {
                            throw Failure.stalled(idleTimeout)
                        }
                    }
                }
                // The first child to finish decides; the other is cancelled and awaited, so no
                // one reads the body after this returns.
                defer { group.cancelAll() }
                guard let bytes = try await group.next() ?? nil else { return [] }
                return bytes
            }
        } catch let failure as Failure {
            throw failure
        } catch let error as HTTPParserError {
            throw .malformed("\(error)")
        } catch {
            throw .malformed("\(error)")
        }
    }
}

/// When the body last made progress, on the watchdog's clock, shared by the reader and its
/// watchdog.
private final class LastProgress<C: Clock<Duration>>: Sendable {
    private let clock: C
    private let instant: Mutex<C.Instant>

    init(clock: C) {
        self.clock = clock
        instant = Mutex(clock.now)
    }

    func mark() { instant.withLock { $0 = clock.now } }

    /// How long since the last ``mark()``.
    var silence: Duration { instant.withLock { $0 }.duration(to: clock.now) }
}

extension RequestBodyReader.Failure {
    /// The status the client gets.
    var status: HTTPResponse.Status {
        switch self {
        case .tooLarge: .contentTooLarge
        case .stalled: .requestTimeout
        case .malformed: .badRequest
        }
    }

    /// Whether the connection ends after the answer: a stalled or malformed body ends the
    /// request stream, so the server closes it; after a 413 it reads on to the next request.
    var closesConnection: Bool {
        if case .tooLarge = self { return false }
        return true
    }

    /// The plain-text explanation the client gets.
    var message: String {
        switch self {
        case .tooLarge(let limit):
            "the request body is longer than this proxy accepts (\(limit) bytes)"
        case .stalled(let timeout):
            "the request body stalled for more than \(timeout.components.seconds) s"
        case .malformed(let detail):
            "the request body is not valid HTTP/1.1 framing (\(detail))"
        }
    }
}
