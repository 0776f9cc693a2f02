#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A new IPv4 TCP socket that is closed on `exec` (no child process a test starts inherits it)
/// and never raises `SIGPIPE` when sent to after the peer has gone; -1 with `errno` set on failure.
///
/// Linux creates it that way at once (`SOCK_CLOEXEC`; ``sendWithoutSIGPIPE(_:_:)`` passes
/// `MSG_NOSIGNAL`). Apple platforms have neither: `FD_CLOEXEC` is set with `fcntl` right after
/// `socket`, and the socket option `SO_NOSIGPIPE` stands for `MSG_NOSIGNAL`.
public func makeTCPSocket() -> Int32 {
    #if canImport(Darwin)
    let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    guard descriptor >= 0 else { return descriptor }
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    var yes: Int32 = 1
    _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
    return descriptor
    #else
    return socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    #endif
}

/// `send(2)` of `bytes` on `descriptor` that returns `-1` with `EPIPE` instead of raising
/// `SIGPIPE` when the peer has closed: `MSG_NOSIGNAL` on Linux; on Apple platforms, which have
/// no such flag, `SO_NOSIGPIPE` is set on the socket first (also on an accepted one).
@discardableResult
public func sendWithoutSIGPIPE(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Darwin)
    var yes: Int32 = 1
    _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
    return send(descriptor, bytes.baseAddress, bytes.count, 0)
    #else
    return send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    #endif
}
