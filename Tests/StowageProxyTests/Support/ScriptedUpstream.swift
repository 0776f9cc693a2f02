import Dispatch
import Foundation
import StowageTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An origin on raw sockets that answers each request head as its script says, byte for byte:
/// what an HTTP server library will not send (garbage, endless interim responses, no framing),
/// and when (a kept-alive connection closed as the next request arrives). Counts connections, to
/// show reuse. Plain threads, so it never waits on Swift's cooperative pool.
final class ScriptedUpstream: Sendable {
    /// A request head as it arrived.
    struct Received: Sendable {
        /// 1 for the first request head, across connections.
        var index: Int
        /// 1 for the first connection.
        var connection: Int
        /// The request's method.
        var method: String
        /// The request's path.
        var path: String
    }

    /// What the origin does with a request head.
    enum Answer: Sendable {
        /// Sends the bytes and waits for the next request on the connection.
        case send(String)
        /// Sends the first bytes, waits `pause` milliseconds, sends the rest, and waits for the
        /// next request: an origin that takes its time after an interim response.
        case sendPausing(String, milliseconds: UInt32, then: String)
        /// Sends the first bytes, waits until `release` is opened, sends the rest, and waits
        /// for the next request: an origin that answers when the test says.
        case sendHolding(String, until: Release, then: String)
        /// Sends the bytes, then closes.
        case sendAndClose(String)
        /// Sends the bytes, then says nothing more until the peer closes or the origin stops.
        case sendAndHang(String)
        /// Sends the bytes `count` times, then closes: an endless stream as far as the proxy goes.
        case repeatThenClose(String, count: Int)
        /// Closes without answering.
        case close
    }

    /// A one-way gate the origin's threads wait at (``Answer/sendHolding(_:until:then:)``) until
    /// the test opens it; open it in a `defer` too, so a failed test does not leave one waiting.
    final class Release: Sendable {
        private let state = Mutex(false)
        private let opened = DispatchSemaphore(value: 0)

        /// Lets every waiter through, now and later.
        func open() {
            let first = state.withLock { isOpen in
                defer { isOpen = true }
                return !isOpen
            }
            if first { opened.signal() }
        }

        /// Blocks the calling thread until ``open()``.
        func wait() {
            if state.withLock({ $0 }) { return }
            opened.wait()
            opened.signal()  // the next waiter passes too
        }
    }

    private let listener: LoopbackListener
    private let counts: Counts

    private final class Counts: Sendable {
        let requests = Atomic<Int>(0)
        let connections = Atomic<Int>(0)
    }

    /// The port it listens on.
    var port: Int { listener.port }
    var baseURL: String { "http://127.0.0.1:\(port)" }
    /// How many request heads it has read.
    var requestCount: Int { counts.requests.load(ordering: .relaxed) }
    /// How many connections it has accepted.
    var connectionCount: Int { counts.connections.load(ordering: .relaxed) }

    init(_ script: @escaping @Sendable (Received) -> Answer) throws {
        let counts = Counts()
        self.counts = counts
        listener = try LoopbackListener { connection in
            let number = counts.connections.add(1, ordering: .relaxed).newValue
            Self.serve(connection, number: number, counts: counts, script: script)
        }
    }

    private static func serve(
        _ connection: Int32,
        number: Int,
        counts: Counts,
        script: @Sendable (Received) -> Answer
    ) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            while let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
                received.removeSubrange(..<end.upperBound)
                let index = counts.requests.add(1, ordering: .relaxed).newValue
                let words = head.split(separator: " ", maxSplits: 2)
                let method = words.first.map(String.init) ?? ""
                let path = words.dropFirst().first.map(String.init) ?? "/"
                switch script(Received(index: index, connection: number, method: method, path: path)) {
                case .send(let text):
                    guard send(text, on: connection) else { return }
                case .sendPausing(let first, let milliseconds, let rest):
                    guard send(first, on: connection) else { return }
                    SlowPeer.pause(microseconds: milliseconds * 1_000)
                    guard send(rest, on: connection) else { return }
                case .sendHolding(let first, let release, let rest):
                    guard send(first, on: connection) else { return }
                    release.wait()
                    guard send(rest, on: connection) else { return }
                case .sendAndClose(let text):
                    _ = send(text, on: connection)
                    shutdown(connection, Int32(SHUT_RDWR))
                    return
                case .sendAndHang(let text):
                    _ = send(text, on: connection)
                    while recv(connection, &buffer, buffer.count, 0) > 0 {}
                    return
                case .repeatThenClose(let text, let count):
                    for _ in 0..<count where !send(text, on: connection) { break }
                    shutdown(connection, Int32(SHUT_RDWR))
                    return
                case .close:
                    shutdown(connection, Int32(SHUT_RDWR))
                    return
                }
            }
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            received += buffer[..<count]
        }
    }

    /// Sends all of `text`; `false` once the peer is gone.
    private static func send(_ text: String, on connection: Int32) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { sendWithoutSIGPIPE(connection, $0) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Stops accepting and ends every connection.
    func stop() { listener.stop() }
}

/// `HTTP/1.1 200` with `body`, framed by its length, and `fields` (`Name: value` lines).
func ok(_ body: String, _ fields: String...) -> String {
    "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n"
        + fields.map { $0 + "\r\n" }.joined() + "\r\n" + body
}

extension RawSocket {
    /// Everything the peer sends until it closes (or the receive timeout passes), as text.
    func readTextUntilClosed() -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = receive(into: &buffer)
            guard count > 0 else { return String(decoding: data, as: UTF8.self) }
            data += buffer[..<count]
        }
    }
}
