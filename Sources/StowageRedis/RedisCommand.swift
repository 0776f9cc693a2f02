import Foundation
import NIOCore

/// One Redis command: its name and arguments as bytes, and which argument is the key that
/// routes it in a cluster.
///
/// ```swift
/// try await client.send(.set("user:42", value: payload, expiry: .seconds(60)))
/// try await client.send(RedisCommand("HINCRBY", "stats", "hits", "1", keyIndex: 1))
/// ```
public struct RedisCommand: Sendable, Hashable, CustomStringConvertible {
    /// The name first, then the arguments; each one bulk string on the wire.
    public var arguments: [ByteBuffer]
    /// Index in ``arguments`` of the key that picks the cluster node; `nil` for commands
    /// without a key (any node may run them).
    public var keyIndex: Int?

    /// A command from its words.
    public init(_ name: String, _ arguments: [RedisArgument], keyIndex: Int? = nil) {
        self.init(name: ByteBuffer(string: name), arguments, keyIndex: keyIndex)
    }

    /// A command whose name is already bytes: the factories below share one buffer per name
    /// instead of allocating it for every command.
    init(name: ByteBuffer, _ arguments: [RedisArgument], keyIndex: Int?) {
        var words: [ByteBuffer] = []
        words.reserveCapacity(arguments.count + 1)
        words.append(name)
        for argument in arguments { words.append(argument.bytes) }
        self.arguments = words
        self.keyIndex = keyIndex
    }

    /// A command from its words as bytes, name first: `GET`, `SET` and `DEL` build their one
    /// array of words directly, without an array of ``RedisArgument``s to convert first.
    init(words: [ByteBuffer], keyIndex: Int?) {
        self.arguments = words
        self.keyIndex = keyIndex
    }

    /// A command from its words.
    public init(_ name: String, _ arguments: RedisArgument..., keyIndex: Int? = nil) {
        self.init(name, arguments, keyIndex: keyIndex)
    }

    /// The command's name in upper case (`"GET"`).
    public var name: String {
        arguments.first.map { String(buffer: $0).uppercased() } ?? ""
    }

    /// The routing key's bytes, if the command has one.
    public var key: ByteBuffer? {
        keyIndex.flatMap { $0 < arguments.count ? arguments[$0] : nil }
    }

    /// Whether the command must not share its connection with other callers' commands: it
    /// blocks the connection (`BLPOP`, `WAIT`, `XREAD`), changes the connection's state (`SELECT`,
    /// `MULTI`, `CLIENT`, `SUBSCRIBE`) or its replies (`MONITOR`). See
    /// ``RedisConfiguration/multiplexedConnections``.
    public var needsOwnConnection: Bool {
        // GET, SET, DEL and the other three-letter commands are none of these; skip the lookup.
        guard let first = arguments.first, first.readableBytes > 3, first.readableBytes <= 16 else { return false }
        return Self.ownConnectionNames.contains(name)
    }

    static let ownConnectionNames: Set<String> = [
        "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP", "XREAD", "XREADGROUP",
        "WAIT", "WAITAOF", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH", "SELECT", "AUTH", "HELLO", "RESET",
        "QUIT", "CLIENT", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
        "MONITOR", "ASKING", "READONLY", "READWRITE",
    ]

    /// Whether the command only reads its key, so a cluster replica may answer it
    /// (``RedisConfiguration/readsFromReplicas``): `GET`, `MGET`, `EXISTS`, `STRLEN`, `TTL`,
    /// `HGET`, `LRANGE`, `SMEMBERS`, `ZRANGE`, `XRANGE` and their kin. Scripts are not (even
    /// `EVAL_RO` may be refused by an older replica).
    public var isReadOnly: Bool {
        guard let first = arguments.first, first.readableBytes <= 16 else { return false }
        return Self.readOnlyNames.contains(name)
    }

    static let readOnlyNames: Set<String> = [
        "GET", "MGET", "GETRANGE", "STRLEN", "EXISTS", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "TYPE", "DUMP",
        "HGET", "HMGET", "HGETALL", "HEXISTS", "HLEN", "HKEYS", "HVALS", "HSTRLEN", "LRANGE", "LLEN", "LINDEX",
        "LPOS", "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGE", "ZSCORE",
        "ZMSCORE", "ZCARD", "ZRANK", "ZREVRANK", "ZCOUNT", "XRANGE", "XREVRANGE", "XLEN", "BITCOUNT", "GETBIT",
    ]

    /// The name and the key, never the values (they may be large or secret).
    public var description: String {
        key.map { "\(name) \(String(buffer: $0))" } ?? name
    }
}

/// One argument of a command: text, a number or bytes.
public struct RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    /// The argument's bytes, as sent.
    public var bytes: ByteBuffer

    /// The UTF-8 bytes of `text`.
    public init(_ text: String) { bytes = ByteBuffer(string: text) }
    /// `bytes` as they are.
    public init(_ bytes: ByteBuffer) { self.bytes = bytes }
    /// The bytes of `data`.
    public init(_ data: Data) { bytes = ByteBuffer(bytes: data) }
    /// `number` in decimal, as Redis reads integers.
    public init(_ number: Int) { bytes = ByteBuffer(string: String(number)) }
    /// The UTF-8 bytes of a string literal.
    public init(stringLiteral value: String) { self.init(value) }
    /// An integer literal in decimal.
    public init(integerLiteral value: Int) { self.init(value) }
}

extension RedisCommand {
    private static let getName = ByteBuffer(string: "GET")
    private static let setName = ByteBuffer(string: "SET")
    private static let delName = ByteBuffer(string: "DEL")
    private static let pxWord = RedisArgument("PX")

    /// `GET key`.
    public static func get(_ key: String) -> RedisCommand {
        RedisCommand(words: [getName, ByteBuffer(string: key)], keyIndex: 1)
    }

    /// `SET key value [PX milliseconds]`.
    public static func set(_ key: String, value: RedisArgument, expiry: Duration? = nil) -> RedisCommand {
        guard let expiry else {
            return RedisCommand(words: [setName, ByteBuffer(string: key), value.bytes], keyIndex: 1)
        }
        return RedisCommand(
            name: setName,
            [RedisArgument(key), value, pxWord, RedisArgument(max(1, expiry.milliseconds))],
            keyIndex: 1
        )
    }

    /// `DEL key`.
    public static func del(_ key: String) -> RedisCommand {
        RedisCommand(words: [delName, ByteBuffer(string: key)], keyIndex: 1)
    }

    /// `PUBLISH channel message`; in a cluster any node forwards it to every node.
    public static func publish(_ channel: String, message: RedisArgument) -> RedisCommand {
        RedisCommand("PUBLISH", RedisArgument(channel), message)
    }

    /// `EVAL script numkeys key… arg…`; routed by the first key.
    public static func eval(_ script: String, keys: [String], arguments: [RedisArgument]) -> RedisCommand {
        RedisCommand(
            "EVAL",
            [RedisArgument(script), RedisArgument(keys.count)] + keys.map { RedisArgument($0) } + arguments,
            keyIndex: keys.isEmpty ? nil : 3
        )
    }

    /// `PING`.
    public static let ping = RedisCommand("PING")
}

extension Duration {
    /// Whole milliseconds, rounded up so a positive duration never becomes zero; `Int.max` (or
    /// `Int.min`) past `Int`'s range, which Redis refuses as an invalid expire time rather than
    /// the process trapping on the overflow.
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        let (whole, overflow) = Int(seconds).multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(
            Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        )
        return overflowAgain ? .max : total
    }
}
