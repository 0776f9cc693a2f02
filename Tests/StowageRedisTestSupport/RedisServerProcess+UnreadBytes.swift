import Foundation
import StowageTestSupport

extension RedisServerProcess {
    /// The bytes that clients have sent this server and it has not read yet, one number per
    /// connection that holds some: the kernel's receive queue of the server's end of each
    /// established TCP connection on its port, accepted or still in the listen backlog (the
    /// `rx_queue` column of Linux's `/proc/net/tcp`).
    ///
    /// While the server is ``suspend()``ed this is how a test sees that a request has reached it
    /// (a pipeline on an open connection, the `HELLO` of a connection in its handshake), as an
    /// event of the kernel's, instead of pausing a while and hoping the client got that far.
    ///
    /// ```swift
    /// server.suspend()
    /// let caller = Task { try await client.send(.ping) }
    /// try await eventually { try server.unreadBytes() == [14] }   // *1\r\n$4\r\nPING\r\n
    /// ```
    public func unreadBytes() throws -> [Int] {
        #if os(Linux)
        // Read to its end, not by its size: procfs files report a size of zero.
        let file = try FileHandle(forReadingFrom: URL(filePath: "/proc/net/tcp"))
        defer { try? file.close() }
        let table = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        // "sl local_address rem_address st tx_queue:rx_queue …", addresses and queues in hex.
        return table.split(separator: "\n").dropFirst().compactMap { row -> Int? in
            let fields = row.split(separator: " ")
            guard fields.count > 4, fields[3] == "01",  // TCP_ESTABLISHED
                let localPort = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) }),
                localPort == port,
                let unread = fields[4].split(separator: ":").last.flatMap({ Int($0, radix: 16) }),
                unread > 0
            else { return nil }
            return unread
        }
        #else
        throw TestFailure("unreadBytes() reads Linux's /proc/net/tcp; this platform has none")
        #endif
    }
}
