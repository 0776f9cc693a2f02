import NIOCore

/// Writes RESP: commands as arrays of bulk strings (what a client sends), and any
/// ``RESPValue`` (what a server sends; used by tests and tools that play a server).
public enum RESPEncoder {
    /// Appends `command` as `*N\r\n$len\r\narg\r\n…`: its size is counted first, then every byte
    /// is written into the buffer's spare room in one step (one capacity check for the command,
    /// not one per header, argument and CRLF).
    public static func write(_ command: RedisCommand, into buffer: inout ByteBuffer) {
        var size = headerSize(command.arguments.count)
        for index in command.arguments.indices {
            let length = command.arguments[index].readableBytes
            size += headerSize(length) + length + 2
        }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
            var offset = writeHeader(UInt8(ascii: "*"), command.arguments.count, into: out, at: 0)
            for index in command.arguments.indices {
                offset = command.arguments[index].withUnsafeReadableBytes { argument in
                    var offset = writeHeader(UInt8(ascii: "$"), argument.count, into: out, at: offset)
                    if let source = argument.baseAddress, argument.count > 0 {
                        (out.baseAddress! + offset).copyMemory(from: source, byteCount: argument.count)
                    }
                    offset += argument.count
                    out[offset] = UInt8(ascii: "\r")
                    out[offset + 1] = UInt8(ascii: "\n")
                    return offset + 2
                }
            }
            return offset
        }
    }

    /// The bytes of a header: the marker, the decimal `count` and CRLF.
    private static func headerSize(_ count: Int) -> Int {
        var digits = 1
        var rest = count.magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits + 3
    }

    /// Writes a header (see ``headerSize(_:)``) at `offset`; returns the offset after it.
    private static func writeHeader(
        _ marker: UInt8,
        _ count: Int,
        into out: UnsafeMutableRawBufferPointer,
        at offset: Int
    ) -> Int {
        let end = offset + headerSize(count)
        out[offset] = marker
        var rest = count.magnitude
        for index in stride(from: end - 3, to: offset, by: -1) {
            out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        out[end - 2] = UInt8(ascii: "\r")
        out[end - 1] = UInt8(ascii: "\n")
        return end
    }

    /// Appends `value` in its wire form; RESP2-only peers understand only the RESP2 cases.
    public static func write(_ value: RESPValue, into buffer: inout ByteBuffer) {
        switch value {
        case .simpleString(let text): writeLine(UInt8(ascii: "+"), text, into: &buffer)
        case .simpleError(let message): writeLine(UInt8(ascii: "-"), message, into: &buffer)
        case .integer(let number): writeLine(UInt8(ascii: ":"), String(number), into: &buffer)
        case .bulkString(nil): buffer.writeStaticString("$-1\r\n")
        case .bulkString(var bytes?):
            writeHeader(UInt8(ascii: "$"), bytes.readableBytes, into: &buffer)
            buffer.writeBuffer(&bytes)
            buffer.writeInteger(UInt16(0x0D0A))
        case .array(nil): buffer.writeStaticString("*-1\r\n")
        case .array(let values?): writeAggregate(UInt8(ascii: "*"), values, into: &buffer)
        case .null: buffer.writeStaticString("_\r\n")
        case .double(let number):
            let text =
                number.isNaN ? "nan" : number == .infinity ? "inf" : number == -.infinity ? "-inf" : "\(number)"
            writeLine(UInt8(ascii: ","), text, into: &buffer)
        case .boolean(let flag): buffer.writeStaticString(flag ? "#t\r\n" : "#f\r\n")
        case .bigNumber(let digits): writeLine(UInt8(ascii: "("), digits, into: &buffer)
        case .bulkError(let message):
            writeHeader(UInt8(ascii: "!"), message.utf8.count, into: &buffer)
            buffer.writeString(message)
            buffer.writeInteger(UInt16(0x0D0A))
        case .verbatimString(let format, let text):
            writeHeader(UInt8(ascii: "="), 4 + text.utf8.count, into: &buffer)
            buffer.writeString(format)
            buffer.writeInteger(UInt8(ascii: ":"))
            buffer.writeString(text)
            buffer.writeInteger(UInt16(0x0D0A))
        case .map(let entries):
            writeHeader(UInt8(ascii: "%"), entries.count, into: &buffer)
            for entry in entries {
                write(entry.key, into: &buffer)
                write(entry.value, into: &buffer)
            }
        case .set(let values): writeAggregate(UInt8(ascii: "~"), values, into: &buffer)
        case .push(let values): writeAggregate(UInt8(ascii: ">"), values, into: &buffer)
        }
    }

    private static func writeAggregate(_ marker: UInt8, _ values: [RESPValue], into buffer: inout ByteBuffer) {
        writeHeader(marker, values.count, into: &buffer)
        for value in values { write(value, into: &buffer) }
    }

    private static func writeLine(_ marker: UInt8, _ text: String, into buffer: inout ByteBuffer) {
        buffer.writeInteger(marker)
        buffer.writeString(text)
        buffer.writeInteger(UInt16(0x0D0A))
    }

    /// `marker`, the decimal `count` and CRLF, without going through `String`: written in one
    /// step into the buffer's spare room.
    private static func writeHeader(_ marker: UInt8, _ count: Int, into buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: headerSize(count)) { out in
            writeHeader(marker, count, into: out, at: 0)
        }
    }
}
