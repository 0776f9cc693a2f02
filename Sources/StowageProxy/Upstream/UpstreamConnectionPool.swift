import NIOCore
import NIOHTTP1
import StowageHTTPCache
import Synchronization

/// The kept-alive connections to one origin: an exchange takes an idle one or opens one, and
/// gives it back when its response has ended where its framing says.
///
/// At most ``UpstreamClient/Configuration/maximumIdleConnections`` wait idle (nginx's upstream
/// `keepalive`); a connection given back past that, or one the upstream closed, is closed and
/// dropped. An idle connection closes itself after the idle timeout.
final class UpstreamConnectionPool: Sendable {
    let origin: String
    private let host: String
    private let port: Int
    private let configuration: UpstreamClient.Configuration
    /// Idle connections, the most recently used last.
    private let idle = Mutex<[UpstreamConnection]>([])

    init(origin: String, host: String, port: Int, configuration: UpstreamClient.Configuration) {
        self.origin = origin
        self.host = host
        self.port = port
        self.configuration = configuration
    }

    /// Sends one request on an idle connection (with `reusing`) or a new one.
    func exchange(
        _ head: HTTPRequestHead,
        body: HTTPBody?,
        deadline: NIODeadline,
        reusing: Bool,
        interim: @escaping @Sendable (HTTPResponseHead) -> Void
    ) async throws -> UpstreamResponse {
        let pooled = reusing ? takeIdle() : nil
        let connection: UpstreamConnection
        if let pooled {
            connection = pooled
        } else {
            connection = try await UpstreamConnection.connect(
                host: host,
                port: port,
                origin: origin,
                configuration: configuration,
                deadline: deadline
            )
        }
        return try await connection.exchange(head, body: body, deadline: deadline, interim: interim) { reusable in
            if reusable { self.giveBack(connection) }
        }
    }

    /// The most recently used idle connection that is still open.
    private func takeIdle() -> UpstreamConnection? {
        idle.withLock { idle in
            while let connection = idle.popLast() {
                if connection.channel.isActive { return connection }
            }
            return nil
        }
    }

    private func giveBack(_ connection: UpstreamConnection) {
        let kept = idle.withLock { idle in
            idle.removeAll { !$0.channel.isActive }
            guard idle.count < configuration.maximumIdleConnections else { return false }
            idle.append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    /// Closes every idle connection.
    func closeIdle() {
        let connections = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        for connection in connections { connection.close() }
    }
}
