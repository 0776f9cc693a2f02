import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Tracing

/// Where a Redis server is and how to talk to it: address, credentials, database, TLS,
/// protocol version, pool size, timeouts and reconnect backoff.
///
/// ```swift
/// let configuration = try RedisConfiguration(url: "rediss://app:secret@cache.internal:6380/2")
/// ```
public struct RedisConfiguration: Sendable {
    /// Which RESP version to speak.
    public enum ProtocolVersion: Sendable, Hashable {
        /// `HELLO 3`, and RESP2 (`AUTH`, `SELECT`) if the server does not know `HELLO` (before Redis 6).
        case automatic
        /// RESP3 only: a server without `HELLO 3` is an error.
        case resp3
        /// RESP2 only (`AUTH`, `SELECT`; no `HELLO`).
        case resp2
    }

    /// Delays between reconnect attempts: `initial`, doubling per consecutive failure up to
    /// `maximum`, each with up to 20% random jitter so a fleet does not reconnect in lockstep.
    public struct Backoff: Sendable, Hashable {
        /// The first delay.
        public var initial: Duration
        /// The longest delay.
        public var maximum: Duration

        /// Delays from `initial` doubling up to `maximum`.
        public init(initial: Duration = .milliseconds(50), maximum: Duration = .seconds(2)) {
            self.initial = initial
            self.maximum = maximum
        }

        /// The delay after `failures` consecutive failures (≥ 1).
        public func delay(afterFailures failures: Int) -> Duration {
            let exponent = min(max(failures - 1, 0), 20)
            let base = min(initial * (1 << exponent), maximum)
            return base + base * Double.random(in: 0...0.2)
        }
    }

    /// Host name or IP address.
    public var host: String
    /// TCP port; 6379 by default.
    public var port: Int
    /// ACL user name (`AUTH user password`), or `nil` for the default user.
    public var username: String?
    /// Password, or `nil` when the server needs none.
    public var password: String?
    /// Database number (`SELECT`); ignored by a cluster, which has only database 0.
    public var database: Int
    /// TLS settings when the URL says `rediss://`; `nil` for plain TCP.
    public var tls: TLSConfiguration?
    /// Host name to verify the certificate against and send as SNI; `host` by default.
    public var tlsServerHostname: String?
    /// The RESP version to negotiate.
    public var protocolVersion: ProtocolVersion
    /// Name shown by `CLIENT LIST` (`CLIENT SETNAME`).
    public var clientName: String?
    /// Longest wait for TCP (and TLS) to connect and the handshake (`HELLO`, `AUTH`, `SELECT`)
    /// to finish.
    public var connectTimeout: Duration
    /// Longest wait for a reply. When it passes, the command fails with `.timeout` and its
    /// connection is closed (its later replies could no longer be matched to commands), which
    /// fails the commands pipelined behind it with `.connectionClosed`.
    public var commandTimeout: Duration
    /// Most connections the pool opens to this server.
    public var maximumConnections: Int
    /// Longest wait for a pooled connection when all are busy, before `.poolExhausted`.
    public var poolWaitTimeout: Duration
    /// How many of the pool's connections ``RedisClient/send(_:)`` and
    /// ``RedisClient/pipeline(_:)`` share among concurrent callers (auto-pipelining): commands
    /// from many tasks go out together in one write and their replies come back in one read,
    /// instead of one system call per command each way. 2 by default; 0 gives every command a
    /// connection of its own for the length of its round trip. Blocking and connection-state
    /// commands (`BLPOP`, `WAIT`, `SELECT`, `MULTI`, …) and ``RedisClient/withConnection(_:)``
    /// always get a connection of their own. Counted within ``maximumConnections``.
    public var multiplexedConnections: Int
    /// Delays between reconnect attempts after a failed connect; while one runs, commands fail
    /// at once with `.connectionFailed` instead of each waiting for its own connect timeout.
    public var reconnectBackoff: Backoff
    /// What the waits between attempts are measured by: the ``reconnectBackoff`` delays (a
    /// pool's fast failures, a subscription's reconnects) and a cluster client's pause before
    /// retrying a command answered `TRYAGAIN` or `CLUSTERDOWN`. Default `ContinuousClock()`;
    /// tests pass a clock they advance.
    public var backoffClock: any Clock<Duration>
    /// What ``connectTimeout``, ``commandTimeout`` and ``poolWaitTimeout`` are measured by.
    /// Default `ContinuousClock()`: real time, on the event loops' own timers. Tests pass a
    /// clock they advance (`SteppedClock`), and a timeout fires when the clock passes it, on the
    /// event loop that armed it, instead of after real time on a loaded machine.
    public var timeoutClock: any Clock<Duration>
    /// In a Redis Cluster, whether ``RedisClusterClient/send(_:)`` sends read-only commands
    /// (`GET`, `EXISTS`, `MGET`, `TTL`, … — ``RedisCommand/isReadOnly``) to a replica of the
    /// slot's master, chosen at random, instead of to the master; `false` by default. Cluster
    /// connections then start with `READONLY`. Writes, pipelines and commands without a key go
    /// to masters; a replica that is unreachable, lost the slot (`MOVED`) or answers with an
    /// error sends the read to the master. Ignored by ``RedisClient`` (one server).
    ///
    /// Replicas apply a master's writes a moment after it acknowledged them (asynchronous
    /// replication), so a read right after a write may see the older value. For a shared cache
    /// tier that means a node that re-reads a key as soon as it hears it changed may store the
    /// value it replaced, until it expires: use it for read-heavy data that tolerates that.
    public var readsFromReplicas: Bool
    /// Sends `READONLY` after the handshake: set by the cluster client on its nodes' pools when
    /// ``readsFromReplicas`` is on (a server without cluster mode would refuse the command).
    var sendsReadOnly = false
    /// Where the client logs reconnects and protocol errors.
    public var logger: Logger
    /// The event loops the connections run on; NIO's shared singleton by default. A
    /// ``RedisClient`` takes one loop of the group for all its connections (its
    /// ``RedisClient/taskExecutor``); clients made one after another take the group's loops in turn.
    public var eventLoopGroup: any EventLoopGroup
    /// Where the spans of commands and pipelines go (see ``RedisTracing``). Default `nil`: the
    /// process's tracer, `InstrumentationSystem.tracer`, read once per command (a no-op tracer
    /// until the application bootstraps one). Tests pass an `InMemoryTracer` here.
    public var tracer: (any Tracer)?

    /// A server at `host:port` with the defaults: no credentials, database 0, plain TCP, RESP3
    /// with RESP2 fallback, 16 connections (2 of them shared by concurrent callers), 5 s connect
    /// (as go-redis), 5 s command and 2 s pool timeouts.
    public init(host: String = "127.0.0.1", port: Int = 6379) {
        self.host = host
        self.port = port
        database = 0
        protocolVersion = .automatic
        connectTimeout = .seconds(5)
        commandTimeout = .seconds(5)
        maximumConnections = 16
        poolWaitTimeout = .seconds(2)
        multiplexedConnections = 2
        reconnectBackoff = Backoff()
        backoffClock = ContinuousClock()
        timeoutClock = ContinuousClock()
        readsFromReplicas = false
        logger = Logger(label: "org.stowage.redis", factory: SwiftLogNoOpLogHandler.init)
        eventLoopGroup = MultiThreadedEventLoopGroup.singleton
        tracer = nil
    }

    /// A server from a URL: `redis://[[user]:password@]host[:port][/database]`, or `rediss://…`
    /// for TLS (system trust roots, certificate verified against the host name).
    /// `?protocol=2` or `?protocol=3` pins the RESP version.
    ///
    /// - Throws: ``RedisError`` `.invalidURL` naming the part that is wrong.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw RedisError(code: .invalidURL, message: "'\(text)' is not a URL; write redis://host:port")
        }
        guard scheme == "redis" || scheme == "rediss" else {
            throw RedisError(
                code: .invalidURL,
                message: "'\(scheme)://' is not a Redis URL scheme; use redis:// or rediss:// (TLS)"
            )
        }
        guard let host = components.host, !host.isEmpty else {
            throw RedisError(code: .invalidURL, message: "'\(text)' has no host; write redis://host:port")
        }
        self.init(host: host, port: components.port ?? 6379)
        if let user = components.percentEncodedUser, !user.isEmpty { username = user.removingPercentEncoding }
        if let password = components.percentEncodedPassword { self.password = password.removingPercentEncoding }
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !path.isEmpty {
            guard let database = Int(path), database >= 0 else {
                throw RedisError(code: .invalidURL, message: "'/\(path)' in '\(text)' is not a database number")
            }
            self.database = database
        }
        for item in components.queryItems ?? [] where item.name == "protocol" {
            switch item.value {
            case "2": protocolVersion = .resp2
            case "3": protocolVersion = .resp3
            default:
                throw RedisError(code: .invalidURL, message: "protocol=\(item.value ?? "") must be 2 or 3")
            }
        }
        if scheme == "rediss" { tls = .makeClientConfiguration() }
    }

    /// Trusts the certificate authorities in a PEM file instead of the system's, for a
    /// `rediss://` server whose certificate a private CA signed.
    ///
    /// - Throws: ``RedisError`` `.tls` when this configuration does not use TLS (the URL said
    ///   `redis://`) or the file holds no certificate that can be read.
    public mutating func trustCertificateAuthorities(pemFile path: String) throws {
        guard tls != nil else {
            throw RedisError(
                code: .tls,
                message: "a CA file was given for \(address), which does not use TLS; write rediss:// to use TLS",
                server: address
            )
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw RedisError(
                code: .tls,
                message: "cannot read certificates from '\(path)'; give a PEM file of CA certificates",
                server: address,
                cause: error
            )
        }
        guard !certificates.isEmpty else {
            throw RedisError(code: .tls, message: "'\(path)' holds no PEM certificate", server: address)
        }
        tls?.trustRoots = .certificates(certificates)
    }

    /// `host:port`, for messages and metrics.
    public var address: String { "\(host):\(port)" }

    /// The same settings for another node (cluster nodes share credentials and TLS).
    public func with(host: String, port: Int) -> RedisConfiguration {
        var copy = self
        copy.host = host
        copy.port = port
        copy.tlsServerHostname = nil
        return copy
    }

    func validate() throws {
        guard maximumConnections >= 1 else {
            throw RedisError(code: .invalidURL, message: "maximumConnections is \(maximumConnections); it must be ≥ 1")
        }
        guard (0...maximumConnections).contains(multiplexedConnections) else {
            throw RedisError(
                code: .invalidURL,
                message: "multiplexedConnections is \(multiplexedConnections); it must be between 0 and "
                    + "maximumConnections (\(maximumConnections))"
            )
        }
        guard (0...65535).contains(port) else {
            throw RedisError(code: .invalidURL, message: "port \(port) is not a TCP port (0…65535)")
        }
    }
}
