import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A listening socket on 127.0.0.1 (a free port) whose connections are each served on a thread
/// of their own, for test servers written on raw sockets.
///
/// Every descriptor is closed once, by the thread that uses it, after its last use: the accept
/// thread closes the listener after its last `accept`, each connection's thread closes its
/// connection after `serve` returns, and ``stop()`` only shuts sockets down. Descriptor numbers
/// are reused at once, and in a suite running in parallel a close made elsewhere would let a
/// late `accept`, `recv` or `shutdown` land on another test's socket (a proxy's listener or
/// connection). `EINTR` is retried.
public final class LoopbackListener: Sendable {
    /// The port it listens on.
    public let port: Int
    private let listener: Int32
    /// The open connections and whether ``stop()`` was called, under one lock: a connection
    /// leaves the set before its thread closes it, so ``stop()`` never shuts down a reused number.
    private let state = Mutex<(connections: Set<Int32>, stopped: Bool)>(([], false))

    /// Listens on a free port and serves each connection with `serve` on a thread of its own;
    /// the connection is closed when `serve` returns.
    public init(backlog: Int32 = 128, serve: @escaping @Sendable (Int32) -> Void) throws {
        let listener = makeTCPSocket()
        guard listener >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, backlog) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw TestFailure("bind/listen on 127.0.0.1 failed: errno \(errno)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread.detachNewThread { [self] in acceptLoop(serve) }
    }

    private func acceptLoop(_ serve: @escaping @Sendable (Int32) -> Void) {
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
                serve(connection)
                state.withLock { _ = $0.connections.remove(connection) }
                close(connection)
            }
        }
        close(listener)
    }

    /// Stops accepting and ends every connection: shuts the sockets down, which wakes the
    /// threads blocked on them; each closes its own descriptor as it ends.
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }
}
