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

    let port: Int
    private let listener: Int32
    /// The open connections and whether ``stop()`` was called, under one lock: a descriptor is
    /// closed only by the thread that uses it, after it leaves this list, so ``stop()`` never
    /// shuts down a number the process has since given to another socket (another test's
    /// server or connection, running in parallel).
    private let state = Mutex<(connections: Set<Int32>, stopped: Bool)>(([], false))
    private let requests = Atomic<Int>(0)

    /// How many request heads it has read.
    var requestCount: Int { requests.load(ordering: .relaxed) }

    init(_ behaviour: Behaviour) throws {
        let listener = makeTCPSocket()
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 128) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0, errno == EINTR { continue }
                guard connection >= 0 else { break }
                // Not inherited by processes other tests spawn meanwhile.
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                let stopped = state.withLock { state in
                    if !state.stopped { state.connections.insert(connection) }
                    return state.stopped
                }
                if stopped {
                    close(connection)
                    break
                }
                Thread.detachNewThread { [self] in
                    serve(connection, behaviour)
                    state.withLock { _ = $0.connections.remove(connection) }
                    close(connection)
                }
            }
            // The listener is closed here, once accept has returned for the last time: closed
            // in stop(), its number could be reused and this thread would accept on another
            // test's socket.
            close(listener)
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    private func serve(_ connection: Int32, _ behaviour: Behaviour) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            // Each head that arrives gets its answer; whatever body follows is never read as such.
            while let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                received.removeSubrange(..<end.upperBound)
                requests.add(1, ordering: .relaxed)
                let reply: String
                switch behaviour {
                case .closeFirstUnanswered where requests.load(ordering: .relaxed) == 1, .closeEveryUnanswered:
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
                    let body = "v\(requests.load(ordering: .relaxed))"
                    reply =
                        "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nCache-Control: no-store\r\n\r\n"
                        + body
                case .earlyHints:
                    let body = "v\(requests.load(ordering: .relaxed))"
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

    /// Stops accepting and ends every connection: shuts the sockets down, which wakes the
    /// threads blocked on them; each thread closes its own descriptor as it ends.
    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }
}
