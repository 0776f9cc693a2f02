import NIOCore

/// One value of the Redis serialization protocol, RESP3 or RESP2.
///
/// RESP2 has five types (simple string, error, integer, bulk string, array, with null bulk
/// strings and null arrays); RESP3 adds null, double, boolean, big number, bulk error, verbatim
/// string, map, set and push. A connection negotiated with `HELLO 3` receives the RESP3 types;
/// without it (or from a server older than Redis 6) only the RESP2 ones.
///
/// Attributes (`|`) are read and dropped by ``RESPDecoder``: Redis sends none to ordinary clients.
public enum RESPValue: Sendable, Hashable {
    /// `+OK` — a short text without line breaks.
    case simpleString(String)
    /// `-ERR message` — a server error in one line.
    case simpleError(String)
    /// `:42` — a signed 64-bit integer.
    case integer(Int64)
    /// `$5\r\nhello` — binary-safe bytes; `nil` is RESP2's null bulk string (`$-1`).
    case bulkString(ByteBuffer?)
    /// `*2 …` — an ordered list; `nil` is RESP2's null array (`*-1`).
    case array([RESPValue]?)
    /// `_` — RESP3's null.
    case null
    /// `,3.14` — RESP3 double, `inf`, `-inf` and `nan` included.
    case double(Double)
    /// `#t` / `#f` — RESP3 boolean.
    case boolean(Bool)
    /// `(3492890328409238509324850943850943825024385` — RESP3 big number, kept as its digits.
    case bigNumber(String)
    /// `!21\r\nSYNTAX invalid syntax` — RESP3 error that may contain line breaks.
    case bulkError(String)
    /// `=15\r\ntxt:Some string` — RESP3 text with a three-letter format (`txt`, `mkd`).
    case verbatimString(format: String, text: String)
    /// `%2 …` — RESP3 map, in the order the server sent it.
    case map([RESPMapEntry])
    /// `~3 …` — RESP3 set, in the order the server sent it.
    case set([RESPValue])
    /// `>3 …` — RESP3 out-of-band message (pub/sub messages, client-side caching invalidations).
    case push([RESPValue])
}

/// One key and value of a RESP3 map.
public struct RESPMapEntry: Sendable, Hashable {
    /// The entry's key.
    public var key: RESPValue
    /// The entry's value.
    public var value: RESPValue

    /// An entry mapping `key` to `value`.
    public init(key: RESPValue, value: RESPValue) {
        self.key = key
        self.value = value
    }
}

extension RESPValue {
    /// A bulk string holding `text` as UTF-8.
    public static func bulkString(_ text: String) -> RESPValue { .bulkString(ByteBuffer(string: text)) }

    /// Whether this is a null of either protocol (`_`, `$-1`, `*-1`).
    public var isNull: Bool {
        switch self {
        case .null, .bulkString(nil), .array(nil): true
        default: false
        }
    }

    /// The text of a simple string, bulk string or verbatim string; `nil` for other types or
    /// bytes that are not UTF-8.
    public var string: String? {
        switch self {
        case .simpleString(let text): text
        case .bulkString(let buffer?): buffer.getString(at: buffer.readerIndex, length: buffer.readableBytes)
        case .verbatimString(_, let text): text
        default: nil
        }
    }

    /// The bytes of a bulk string (or a simple string's UTF-8); `nil` for null and other types.
    public var bytes: ByteBuffer? {
        switch self {
        case .bulkString(let buffer?): buffer
        case .simpleString(let text), .verbatimString(_, let text): ByteBuffer(string: text)
        default: nil
        }
    }

    /// An integer, or the digits of a bulk string, simple string or big number that fit in 64 bits.
    public var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .bigNumber(let digits): Int64(digits)
        default: string.flatMap { Int64($0) }
        }
    }

    /// The elements of an array, set or push; a map's keys and values interleaved (as RESP2
    /// sends a map); `nil` otherwise.
    public var elements: [RESPValue]? {
        switch self {
        case .array(let values?), .set(let values), .push(let values): values
        case .map(let entries): entries.flatMap { [$0.key, $0.value] }
        default: nil
        }
    }

    /// A map's entries, or an even-length array read as key, value, key, value (RESP2's form of
    /// a map, e.g. `HELLO` or `CLUSTER SHARDS` over RESP2).
    public var mapEntries: [RESPMapEntry]? {
        switch self {
        case .map(let entries): return entries
        case .array(let values?) where values.count % 2 == 0:
            return stride(from: 0, to: values.count, by: 2).map { RESPMapEntry(key: values[$0], value: values[$0 + 1]) }
        default: return nil
        }
    }

    /// The value for a map key given as text (`"slots"` in `CLUSTER SHARDS`), in either form of
    /// ``mapEntries``.
    public subscript(field name: String) -> RESPValue? {
        mapEntries?.first { $0.key.string == name }?.value
    }

    /// The message of a simple or bulk error; `nil` for other types.
    public var errorMessage: String? {
        switch self {
        case .simpleError(let message), .bulkError(let message): message
        default: nil
        }
    }
}

extension RESPValue: CustomStringConvertible {
    /// A short, human-readable form for logs and test failures (bulk strings as text when they are UTF-8).
    public var description: String {
        switch self {
        case .simpleString(let text): return "+\(text)"
        case .simpleError(let message): return "-\(message)"
        case .integer(let value): return ":\(value)"
        case .bulkString(nil), .array(nil), .null: return "(null)"
        case .bulkString(let buffer?):
            return buffer.getString(at: buffer.readerIndex, length: buffer.readableBytes).map { "\"\($0)\"" }
                ?? "<\(buffer.readableBytes) bytes>"
        case .array(let values?): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .double(let value): return ",\(value)"
        case .boolean(let value): return value ? "#t" : "#f"
        case .bigNumber(let digits): return "(\(digits)"
        case .bulkError(let message): return "!\(message)"
        case .verbatimString(let format, let text): return "=\(format):\(text)"
        case .map(let entries): return "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .set(let values): return "~{" + values.map(\.description).joined(separator: ", ") + "}"
        case .push(let values): return ">[" + values.map(\.description).joined(separator: ", ") + "]"
        }
    }
}
