import NIOCore

/// Reads RESP3 and RESP2 values from bytes that arrive in pieces.
///
/// ``decode(_:)`` returns a whole value and consumes its bytes, or returns `nil` and consumes
/// nothing when the buffer ends inside a value; the caller appends what the socket reads next and
/// calls again. Malformed input throws ``RedisError`` `.protocolViolation` — never traps, however
/// the bytes are cut or corrupted (see the fuzz tests) — and the connection must then be closed,
/// since the position in the stream is lost.
///
/// Limits keep a hostile or broken peer from exhausting memory or the stack: nesting depth
/// (``Limits/maximumDepth``), bulk length (Redis' own `proto-max-bulk-len` default, 512 MiB),
/// element count and line length. Parsing is recursive descent over a copy of the buffer,
/// like hiredis' reader and the RESP3 spec's own description of the grammar.
public struct RESPDecoder: Sendable {
    /// Bounds on what one value may contain.
    public struct Limits: Sendable {
        /// Aggregates inside aggregates, at most.
        public var maximumDepth = 64
        /// Bytes in one bulk string, bulk error or verbatim string.
        public var maximumBulkLength = 512 * 1024 * 1024
        /// Elements (or map entries) in one aggregate.
        public var maximumElementCount = 1 << 24
        /// Bytes in one line (simple string, error, number header) before its CRLF.
        public var maximumLineLength = 1024 * 1024

        /// The default limits.
        public init() {}
    }

    /// The bounds a reply must stay within; past them decoding fails.
    public var limits: Limits

    /// A decoder that enforces `limits`.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The next whole value in `buffer`, consuming its bytes; `nil` (consuming nothing) when more
    /// bytes are needed.
    ///
    /// - Throws: ``RedisError`` `.protocolViolation` when the bytes are not RESP.
    public func decode(_ buffer: inout ByteBuffer) throws -> RESPValue? {
        var copy = buffer
        guard let value = try parseValue(&copy, depth: 0) else { return nil }
        buffer = copy
        return value
    }

    private func parseValue(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard let marker = buffer.readInteger(as: UInt8.self) else { return nil }
        switch marker {
        case UInt8(ascii: "+"):
            return try readLine(&buffer).map { .simpleString(String(decoding: $0.readableBytesView, as: UTF8.self)) }
        case UInt8(ascii: "-"):
            return try readLine(&buffer).map { .simpleError(String(decoding: $0.readableBytesView, as: UTF8.self)) }
        case UInt8(ascii: ":"):
            return try readNumber(&buffer).map { .integer($0) }
        case UInt8(ascii: "$"):
            guard let length = try readNumber(&buffer) else { return nil }
            if length == -1 { return .bulkString(nil) }
            return try readBlob(&buffer, length: length).map { .bulkString($0) }
        case UInt8(ascii: "*"):
            guard let count = try readNumber(&buffer) else { return nil }
            if count == -1 { return .array(nil) }
            return try readElements(&buffer, count: count, depth: depth).map { .array($0) }
        case UInt8(ascii: "_"):
            guard let line = try readLine(&buffer) else { return nil }
            guard line.readableBytes == 0 else { throw RedisError.protocolViolation("null '_' followed by bytes") }
            return .null
        case UInt8(ascii: ","):
            guard let line = try readLine(&buffer) else { return nil }
            return .double(try Self.double(String(decoding: line.readableBytesView, as: UTF8.self)))
        case UInt8(ascii: "#"):
            guard let line = try readLine(&buffer) else { return nil }
            switch Array(line.readableBytesView) {
            case [UInt8(ascii: "t")]: return .boolean(true)
            case [UInt8(ascii: "f")]: return .boolean(false)
            default: throw RedisError.protocolViolation("boolean '#' must be 't' or 'f'")
            }
        case UInt8(ascii: "("):
            guard let line = try readLine(&buffer) else { return nil }
            let digits = String(decoding: line.readableBytesView, as: UTF8.self)
            guard Self.isBigNumber(digits) else { throw RedisError.protocolViolation("big number '(' is not digits") }
            return .bigNumber(digits)
        case UInt8(ascii: "!"):
            guard let length = try readNumber(&buffer) else { return nil }
            return try readBlob(&buffer, length: length).map {
                .bulkError(String(decoding: $0.readableBytesView, as: UTF8.self))
            }
        case UInt8(ascii: "="):
            guard let length = try readNumber(&buffer) else { return nil }
            guard var blob = try readBlob(&buffer, length: length) else { return nil }
            guard blob.readableBytes >= 4, let format = blob.readString(length: 3),
                blob.readInteger(as: UInt8.self) == UInt8(ascii: ":")
            else { throw RedisError.protocolViolation("verbatim string '=' without a 'fmt:' prefix") }
            return .verbatimString(format: format, text: String(decoding: blob.readableBytesView, as: UTF8.self))
        case UInt8(ascii: "%"):
            guard let count = try readNumber(&buffer) else { return nil }
            return try readEntries(&buffer, count: count, depth: depth).map { .map($0) }
        case UInt8(ascii: "~"):
            guard let count = try readNumber(&buffer) else { return nil }
            return try readElements(&buffer, count: count, depth: depth).map { .set($0) }
        case UInt8(ascii: ">"):
            guard let count = try readNumber(&buffer) else { return nil }
            return try readElements(&buffer, count: count, depth: depth).map { .push($0) }
        case UInt8(ascii: "|"):
            // An attribute describes the value after it; Redis sends none to ordinary clients.
            guard let count = try readNumber(&buffer) else { return nil }
            guard try readEntries(&buffer, count: count, depth: depth) != nil else { return nil }
            return try parseValue(&buffer, depth: depth + 1)
        default:
            throw RedisError.protocolViolation("unknown type marker byte \(marker)")
        }
    }

    private func readElements(_ buffer: inout ByteBuffer, count: Int64, depth: Int) throws -> [RESPValue]? {
        try checkAggregate(count: count, depth: depth)
        var values: [RESPValue] = []
        values.reserveCapacity(min(Int(count), buffer.readableBytes / 3))
        for _ in 0..<count {
            guard let value = try parseValue(&buffer, depth: depth + 1) else { return nil }
            values.append(value)
        }
        return values
    }

    private func readEntries(_ buffer: inout ByteBuffer, count: Int64, depth: Int) throws -> [RESPMapEntry]? {
        try checkAggregate(count: count, depth: depth)
        var entries: [RESPMapEntry] = []
        entries.reserveCapacity(min(Int(count), buffer.readableBytes / 6))
        for _ in 0..<count {
            guard let key = try parseValue(&buffer, depth: depth + 1),
                let value = try parseValue(&buffer, depth: depth + 1)
            else { return nil }
            entries.append(RESPMapEntry(key: key, value: value))
        }
        return entries
    }

    private func checkAggregate(count: Int64, depth: Int) throws {
        guard count >= 0, count <= limits.maximumElementCount else {
            throw RedisError.protocolViolation("aggregate of \(count) elements (limit \(limits.maximumElementCount))")
        }
        guard depth < limits.maximumDepth else {
            throw RedisError.protocolViolation("aggregates nested deeper than \(limits.maximumDepth)")
        }
    }

    /// `length` bytes followed by CRLF.
    private func readBlob(_ buffer: inout ByteBuffer, length: Int64) throws -> ByteBuffer? {
        guard length >= 0, length <= limits.maximumBulkLength else {
            throw RedisError.protocolViolation("bulk length \(length) (limit \(limits.maximumBulkLength))")
        }
        guard buffer.readableBytes >= Int(length) + 2 else { return nil }
        let blob = buffer.readSlice(length: Int(length))!
        guard buffer.readInteger(as: UInt16.self) == 0x0D0A else {
            throw RedisError.protocolViolation("bulk data of \(length) bytes not followed by CRLF")
        }
        return blob
    }

    /// The bytes up to the next CRLF, which is consumed too.
    private func readLine(_ buffer: inout ByteBuffer) throws -> ByteBuffer? {
        guard let length = try lineLength(buffer) else { return nil }
        let line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 2)
        return line
    }

    /// The length of the line at the start of `buffer` when its CRLF has arrived, found in one
    /// pass over the bytes; `nil` when more bytes are needed.
    private func lineLength(_ buffer: ByteBuffer) throws -> Int? {
        let found: Int? = buffer.withUnsafeReadableBytes { bytes in bytes.firstIndex(of: UInt8(ascii: "\r")) }
        guard let length = found else {
            if buffer.readableBytes > limits.maximumLineLength {
                throw RedisError.protocolViolation("line longer than \(limits.maximumLineLength) bytes")
            }
            return nil
        }
        guard buffer.readableBytes >= length + 2 else { return nil }
        guard buffer.getInteger(at: buffer.readerIndex + length + 1, as: UInt8.self) == 0x0A else {
            throw RedisError.protocolViolation("CR not followed by LF")
        }
        return length
    }

    /// A signed decimal line, read straight from the buffer's bytes.
    private func readNumber(_ buffer: inout ByteBuffer) throws -> Int64? {
        guard let length = try lineLength(buffer) else { return nil }
        let value = try buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            let isNegative = length > 0 && bytes[0] == UInt8(ascii: "-")
            if isNegative || (length > 0 && bytes[0] == UInt8(ascii: "+")) { index = 1 }
            guard index < length, length - index <= 19 else {
                throw RedisError.protocolViolation("number of \(length) characters")
            }
            var value: Int64 = 0
            while index < length {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                    throw RedisError.protocolViolation("number with the non-digit byte \(byte)")
                }
                let (product, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = product.addingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else {
                    throw RedisError.protocolViolation("number does not fit in 64 bits")
                }
                value = sum
                index += 1
            }
            return isNegative ? -value : value
        }
        buffer.moveReaderIndex(forwardBy: length + 2)
        return value
    }

    static func double(_ text: String) throws -> Double {
        switch text {
        case "inf", "+inf": return .infinity
        case "-inf": return -.infinity
        case "nan", "-nan": return .nan
        default:
            guard let value = Double(text), value.isFinite else {
                throw RedisError.protocolViolation("double ',\(text.prefix(40))' is not a number")
            }
            return value
        }
    }

    static func isBigNumber(_ text: String) -> Bool {
        var digits = Substring(text)
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
