import Foundation
import StowageTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener on 127.0.0.1 that accepts connections and the client's handshake (it refuses
/// `HELLO`, so the client settles on RESP2 with nothing more to ask) but never answers a data
/// command: the fault a Redis behind a broken proxy or a wedged event loop shows.
final class HungRedisServer: Sendable {
    /// The port it listens on.
    let port: Int
    private let listener: Int32
    /// The open connections and whether ``stop()`` was called, under one lock: a descriptor is
    /// closed only by the thread that uses it, after it leaves this set, so ``stop()`` never
    /// shuts down a number the process has since given to another test's socket.
    private let state = Mutex<(connections: Set<Int32>, stopped: Bool)>(([], false))

    init() throws {
        let socketFD = makeTCPSocket()
        guard socketFD >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) }
        }
        guard bound == 0, listen(socketFD, 16) == 0 else {
            close(socketFD)
            throw TestFailure("bind/listen on 127.0.0.1 failed: errno \(errno)")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        listener = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// `redis://127.0.0.1:PORT`.
    var url: String { "redis://127.0.0.1:\(port)" }

    /// Stops listening and ends every connection: shuts the sockets down, which wakes the
    /// threads blocked on them; each thread closes its own descriptor as it ends.
    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0, errno == EINTR { continue }
            if connection < 0 { break }
            let stopped = state.withLock { state in
                if !state.stopped { state.connections.insert(connection) }
                return state.stopped
            }
            if stopped {
                close(connection)
                break
            }
            let thread = Thread { [self] in
                Self.serve(connection)
                state.withLock { _ = $0.connections.remove(connection) }
                close(connection)
            }
            thread.start()
        }
        // Closed here, after the last accept: closed in stop(), its number could be reused and
        // this loop would accept on another test's socket.
        close(listener)
    }

    /// Refuses `HELLO` (as Redis 5 does) and leaves everything else unanswered.
    private static func serve(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(connection, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            let text = String(decoding: buffer[0..<count], as: UTF8.self).uppercased()
            let hellos = text.components(separatedBy: "HELLO").count - 1
            for _ in 0..<hellos {
                let reply = Array("-ERR unknown command 'HELLO'\r\n".utf8)
                _ = reply.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            }
        }
    }
}
