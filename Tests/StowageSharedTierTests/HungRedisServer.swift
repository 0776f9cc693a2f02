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
    private let listener: LoopbackListener

    /// The port it listens on.
    var port: Int { listener.port }

    init() throws {
        listener = try LoopbackListener(backlog: 16) { Self.serve($0) }
    }

    /// `redis://127.0.0.1:PORT`.
    var url: String { "redis://127.0.0.1:\(port)" }

    /// Stops listening and ends every connection.
    func stop() { listener.stop() }

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
