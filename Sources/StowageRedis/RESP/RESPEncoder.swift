import NIOCore

/// Writes RESP: commands as arrays of bulk strings (what a client sends), and any
/// ``RESPValue`` (what a server sends; used by tests and tools that play a server).
public enum RESPEncoder {
    /// Appends `command` as `*N\r\n$len\r\narg\r\n…`.
    public static func write(_ command: RedisCommand, into buffer: inout ByteBuffer) {
        writeHeader(UInt8(ascii: "*"), command.arguments.count, into: &buffer)
        for argument in command.arguments {
            writeHeader(UInt8(ascii: "$"), argument.readableBytes, into: &buffer)
            buffer.writeImmutableBuffer(argument)
            buffer.writeStaticString("\r\n")
        }
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
    /// step into the buffer's spare room (at most 22 bytes: the marker, 20 digits, CRLF).
    private static func writeHeader(_ marker: UInt8, _ count: Int, into buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 24) { out in
            out[0] = marker
            var digits = 1
            var rest = count.magnitude / 10
            while rest > 0 {
                digits += 1
                rest /= 10
            }
            rest = count.magnitude
            for index in stride(from: digits, to: 0, by: -1) {
                out[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
            out[digits + 1] = UInt8(ascii: "\r")
            out[digits + 2] = UInt8(ascii: "\n")
            return digits + 3
        }
    }
}
