import Foundation
import StowageTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to 127.0.0.1 for what an HTTP client library will not send: malformed
/// requests, several requests on one kept-alive connection, read byte for byte.
final class RawSocket: @unchecked Sendable {  // used by one test at a time
    private let descriptor: Int32
    /// The socket, for the extensions below.
    var descriptorForTests: Int32 { descriptor }

    /// - Parameters:
    ///   - receiveBuffer: A small `SO_RCVBUF` (set before connecting, so the window stays small)
    ///     for a client that reads slowly or not at all; `nil` for the system's.
    init(port: Int, receiveTimeout seconds: Int = 30, receiveBuffer: Int32? = nil) throws {
        descriptor = makeTCPSocket()
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            // A connect a signal interrupted goes on in the background (connect(2), EINTR):
            // wait for it and take its outcome, instead of calling it refused.
            guard errno == EINTR || errno == EINPROGRESS else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
            }
            var writable = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            while poll(&writable, 1, 30_000) < 0 && errno == EINTR {}
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
            guard writable.revents & Int16(POLLOUT) != 0, failure == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .ECONNREFUSED)
            }
        }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Sends all of `text`: a blocking `send(2)` may send part of it when a signal interrupts
    /// it, and the rest follows; stops when the peer has closed.
    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { sendWithoutSIGPIPE(descriptor, $0) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Reads whatever comes until the peer closes or the receive timeout passes: the bytes read,
    /// and whether the peer closed.
    func readUntilClosed() -> (bytes: Int, closed: Bool) {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = receive(into: &buffer)
            if count == 0 { return (total, true) }
            if count < 0 { return (total, false) }
            total += count
        }
    }

    /// Reads a response's head only. `nil` when the peer closed first.
    func readHead() -> String? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while data.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
            let count = receive(into: &buffer)
            guard count > 0 else { return nil }
            data += buffer[..<count]
        }
        let end = data.firstRange(of: Array("\r\n\r\n".utf8))!
        return String(decoding: data[..<end.lowerBound], as: UTF8.self)
    }

    /// Waits `microseconds` before a raw client's next write or read (``SlowPeer``).
    static func pace(_ microseconds: useconds_t) {
        SlowPeer.pause(microseconds: microseconds)
    }

    /// Reads one response: the head, then `Content-Length` bytes. `nil` when the peer closed.
    ///
    /// - Parameter pause: Microseconds to wait before each read of the body, for a client that
    ///   reads slowly but steadily.
    func readResponse(pausingBeforeEachRead pause: useconds_t = 0) -> (head: String, body: String)? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let end = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                while data.count - end.upperBound < length {
                    if pause > 0 { Self.pace(pause) }
                    let count = receive(into: &buffer)
                    guard count > 0 else { return nil }
                    data += buffer[..<count]
                }
                return (head, String(decoding: data[end.upperBound..<end.upperBound + length], as: UTF8.self))
            }
            let count = receive(into: &buffer)
            guard count > 0 else { return nil }
            data += buffer[..<count]
        }
    }

    /// Sends `request` as it is on a new connection to `port` and reads one response, on a
    /// thread of its own (the reads block); `nil` when the peer closed before a whole response.
    static func exchange(_ request: String, port: Int) async throws -> (head: String, body: String)? {
        try await onOwnThread { () -> (head: String, body: String)? in
            let socket = try RawSocket(port: port)
            socket.send(request)
            return socket.readResponse()
        }
    }

    /// Reads `count` responses sent one after another on this connection (pipelining), each
    /// framed by its `Content-Length`; fewer when the peer closes first.
    func readResponses(_ count: Int) -> [(head: String, body: String)] {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var responses: [(head: String, body: String)] = []
        while responses.count < count {
            if let end = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if data.count - end.upperBound >= length {
                    responses.append(
                        (head, String(decoding: data[end.upperBound..<end.upperBound + length], as: UTF8.self))
                    )
                    data.removeSubrange(..<(end.upperBound + length))
                    continue
                }
            }
            let received = receive(into: &buffer)
            guard received > 0 else { return responses }
            data += buffer[..<received]
        }
        return responses
    }
}

extension RawSocket {
    /// Sends `bytes` once; what `send(2)` returned (negative when the connection is gone or
    /// the send timed out).
    @discardableResult
    func trySend(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { sendWithoutSIGPIPE(descriptorForTests, $0) }
    }

    /// One `recv(2)` into `buffer`: the count read, 0 when the peer closed, negative on timeout.
    /// A read a signal interrupted (`EINTR`: the suite's child processes exiting) is tried again,
    /// not taken for a closed connection.
    func receive(into buffer: inout [UInt8]) -> Int {
        while true {
            let count = recv(descriptorForTests, &buffer, buffer.count, 0)
            if count < 0, errno == EINTR { continue }
            return count
        }
    }
}
