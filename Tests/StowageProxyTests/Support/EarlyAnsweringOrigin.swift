import Foundation
import StowageTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An origin on 127.0.0.1 that answers each request as soon as its head has arrived, without
/// reading the body — as a server that rejects an upload early does — and can stall mid-body.
/// Plain sockets on its own threads, so it never waits on Swift's cooperative pool.
final class EarlyAnsweringOrigin: Sendable {
    /// What the origin sends once it has a request head.
    enum Behaviour: Sendable {
        /// A complete `200` with a short body, at once.
        case answerAtOnce
        /// A head promising `length` bytes, then `sent` of them, then silence until closed.
        case stallMidBody(length: Int, sent: Int)
        /// `103 Early Hints` (RFC 8297) with a `Link`, then a cacheable `200` whose body counts
        /// the requests.
        case earlyHints
        /// Closes the connection of the first request without answering it (a kept-alive
        /// connection its idle timeout closed as the request arrived), then answers every later
        /// request at once with a `200` whose body counts the requests.
        case closeFirstUnanswered
        /// Closes every connection once a request head has arrived, answering none.
        case closeEveryUnanswered
    }

    private let listener: LoopbackListener
    private let counter: RequestCounter

    /// The port it listens on.
    var port: Int { listener.port }

    /// How many request heads it has read.
    var requestCount: Int { counter.requests.load(ordering: .relaxed) }

    /// The request heads read, shared with the connections' threads.
    private final class RequestCounter: Sendable {
        let requests = Atomic<Int>(0)
    }

    init(_ behaviour: Behaviour) throws {
        let counter = RequestCounter()
        self.counter = counter
        listener = try LoopbackListener { connection in Self.serve(connection, behaviour, counter: counter) }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    private static func serve(_ connection: Int32, _ behaviour: Behaviour, counter: RequestCounter) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            // Each head that arrives gets its answer; whatever body follows is never read as such.
            while let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                received.removeSubrange(..<end.upperBound)
                counter.requests.add(1, ordering: .relaxed)
                let reply: String
                switch behaviour {
                case .closeFirstUnanswered where counter.requests.load(ordering: .relaxed) == 1, .closeEveryUnanswered:
                    shutdown(connection, Int32(SHUT_RDWR))
                    return
                default:
                    break
                }
                switch behaviour {
                case .answerAtOnce:
                    reply = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nCache-Control: no-store\r\n\r\nearly"
                case .stallMidBody(let length, let sent):
                    reply =
                        "HTTP/1.1 200 OK\r\nContent-Length: \(length)\r\nCache-Control: max-age=60\r\n\r\n"
                        + String(repeating: "s", count: sent)
                case .closeFirstUnanswered, .closeEveryUnanswered:
                    let body = "v\(counter.requests.load(ordering: .relaxed))"
                    reply =
                        "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nCache-Control: no-store\r\n\r\n"
                        + body
                case .earlyHints:
                    let body = "v\(counter.requests.load(ordering: .relaxed))"
                    reply =
                        "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
                        + "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nCache-Control: max-age=60\r\n\r\n"
                        + body
                }
                let bytes = Array(reply.utf8)
                _ = bytes.withUnsafeBytes { sendWithoutSIGPIPE(connection, $0) }
            }
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            received += buffer[..<count]
            if received.count > 1 << 20 { received.removeAll() }
        }
    }

    /// Stops accepting and ends every connection.
    func stop() { listener.stop() }
}
