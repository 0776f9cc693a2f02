/// An error from the Redis client: what failed, against which server, and what to do.
///
/// It has the shape of Stowage's `StowageError` (a ``Code`` to match on, a message that says what
/// to do, a `Sendable` cause) but is its own type: the Redis client stands alone and depends on
/// no other Stowage module. Match on ``code``, or on the code as a pattern:
/// ```swift
/// catch let error as RedisError where error.code == .timeout { … }
/// catch RedisError.Code.timeout { … }
/// ```
/// A ``Code/server`` error carries the server's own message (`WRONGTYPE Operation against a key
/// holding the wrong kind of value`) in ``serverMessage``.
public struct RedisError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectionFailed, connectionClosed, timeout, poolExhausted, server, protocolViolation
            case invalidURL, authentication, tls, clusterUnavailable, tooManyRedirections, shutdown
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The TCP (or TLS) connection could not be made; the client retries with backoff.
        public static let connectionFailed = Code(.connectionFailed)
        /// The server closed the connection, or it broke, before the reply came.
        public static let connectionClosed = Code(.connectionClosed)
        /// A connect or a command took longer than its configured timeout.
        public static let timeout = Code(.timeout)
        /// Every pooled connection stayed busy for the whole wait.
        public static let poolExhausted = Code(.poolExhausted)
        /// The server answered with an error (its message is in ``RedisError/serverMessage``).
        public static let server = Code(.server)
        /// The bytes from the server were not RESP; the connection is closed.
        public static let protocolViolation = Code(.protocolViolation)
        /// The URL could not be read.
        public static let invalidURL = Code(.invalidURL)
        /// `AUTH`/`HELLO` was refused.
        public static let authentication = Code(.authentication)
        /// TLS could not be set up.
        public static let tls = Code(.tls)
        /// No node of a cluster answered, or the slot map could not be read.
        public static let clusterUnavailable = Code(.clusterUnavailable)
        /// A command was redirected (`MOVED`/`ASK`) more often than the limit.
        public static let tooManyRedirections = Code(.tooManyRedirections)
        /// The client was shut down.
        public static let shutdown = Code(.shutdown)

        /// The text logs, messages and the `code` label of `stowage_redis_failures_total` show.
        public var description: String { base.rawValue }

        /// Lets `catch RedisError.Code.timeout` match a ``RedisError`` by its code.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? RedisError)?.code == code
        }
    }

    /// The kind of failure; match on it, not on the message.
    public var code: Code
    /// What failed and what the caller can do about it.
    public var message: String
    /// `host:port` of the server involved, when there is one.
    public var server: String?
    /// The server's error reply, for ``Code/server`` errors.
    public var serverMessage: String?
    /// The underlying error (a socket or TLS error), if any.
    public var cause: (any Error & Sendable)?
    /// Set when the command provably never left this process (the connection was already
    /// closed), so sending it again elsewhere cannot run it twice.
    package var wasNotSent = false

    /// An error of `code` saying `message`.
    public init(
        code: Code,
        message: String,
        server: String? = nil,
        serverMessage: String? = nil,
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.server = server
        self.serverMessage = serverMessage
        self.cause = cause
    }

    /// The text logs and messages show.
    public var description: String {
        var text = "\(code): \(message)"
        if let server { text += " [\(server)]" }
        if let cause { text += " (\(cause))" }
        return text
    }

    /// The first word of a server error (`MOVED`, `WRONGTYPE`, `NOSCRIPT`), if this is one.
    public var serverErrorPrefix: String? {
        serverMessage.map { String($0.prefix { $0 != " " }) }
    }

    static func protocolViolation(_ detail: String) -> RedisError {
        RedisError(
            code: .protocolViolation,
            message: "the server sent bytes that are not RESP (\(detail)); the connection is closed — "
                + "check that the address is a Redis-compatible server"
        )
    }

    static func serverError(_ message: String, command: RedisCommand, server: String?) -> RedisError {
        RedisError(
            code: .server,
            message: "\(command) failed: \(message)",
            server: server,
            serverMessage: message
        )
    }
}
