import Foundation
import NIOCore
import StowageRedis
import Testing

@Suite("RESP codec")
struct RESPCodecTests {
    private func decodeAll(_ text: String) throws -> [RESPValue] {
        var buffer = ByteBuffer(string: text)
        var values: [RESPValue] = []
        while let value = try RESPDecoder().decode(&buffer) { values.append(value) }
        #expect(buffer.readableBytes == 0)
        return values
    }

    @Test("every RESP2 and RESP3 type decodes from its wire form")
    func wireForms() throws {
        let values = try decodeAll(
            "+OK\r\n-ERR bad\r\n:-42\r\n$5\r\nhello\r\n$-1\r\n*-1\r\n*2\r\n:1\r\n$0\r\n\r\n_\r\n,3.25\r\n,-inf\r\n"
                + "#t\r\n#f\r\n(123456789012345678901234567890\r\n!10\r\nSYNTAX bad\r\n=8\r\ntxt:abcd\r\n"
                + "%1\r\n+k\r\n:7\r\n~2\r\n+a\r\n+b\r\n>2\r\n+message\r\n+x\r\n|1\r\n+ttl\r\n:3\r\n+after-attribute\r\n"
        )
        #expect(
            values == [
                .simpleString("OK"), .simpleError("ERR bad"), .integer(-42), .bulkString("hello"), .bulkString(nil),
                .array(nil), .array([.integer(1), .bulkString("")]), .null, .double(3.25), .double(-.infinity),
                .boolean(true), .boolean(false), .bigNumber("123456789012345678901234567890"),
                .bulkError("SYNTAX bad"), .verbatimString(format: "txt", text: "abcd"),
                .map([RESPMapEntry(key: .simpleString("k"), value: .integer(7))]),
                .set([.simpleString("a"), .simpleString("b")]), .push([.simpleString("message"), .simpleString("x")]),
                .simpleString("after-attribute"),
            ]
        )
    }

    @Test("a command encodes as an array of bulk strings")
    func commandEncoding() {
        var buffer = ByteBuffer()
        RESPEncoder.write(RedisCommand("SET", "k", RedisArgument(Data([0, 13, 10])), "PX", 1500), into: &buffer)
        #expect(String(buffer: buffer) == "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n\0\r\n\r\n$2\r\nPX\r\n$4\r\n1500\r\n")
    }

    @Test("a value cut anywhere decodes only once all its bytes are there")
    func incremental() throws {
        var buffer = ByteBuffer()
        let value = RESPValue.array([.bulkString("abc"), .map([RESPMapEntry(key: .integer(1), value: .null)])])
        RESPEncoder.write(value, into: &buffer)
        let bytes = Array(buffer.readableBytesView)
        for cut in 0..<bytes.count {
            var partial = ByteBuffer(bytes: bytes[..<cut])
            #expect(try RESPDecoder().decode(&partial) == nil)
            #expect(partial.readableBytes == cut, "a partial value must consume nothing")
        }
    }

    @Test("malformed input throws a protocol error")
    func malformed() {
        for text in [
            "?x\r\n", ":12a\r\n", "$3\r\nabcd\r\n", "*-2\r\n", "#x\r\n", "_x\r\n", ",abc\r\n", "$-5\r\n", "+a\rb",
        ] {
            var buffer = ByteBuffer(string: text)
            #expect(throws: RedisError.self, "\(text.debugDescription)") { try RESPDecoder().decode(&buffer) }
        }
        var deep = ByteBuffer(string: String(repeating: "*1\r\n", count: 100) + ":1\r\n")
        #expect(throws: RedisError.self) { try RESPDecoder().decode(&deep) }
    }

    @Test("NaN survives a round trip")
    func notANumber() throws {
        var buffer = ByteBuffer()
        RESPEncoder.write(.double(.nan), into: &buffer)
        guard case .double(let value) = try RESPDecoder().decode(&buffer) else {
            Issue.record("not a double")
            return
        }
        #expect(value.isNaN)
    }

    @Test("property: random values round-trip through encoder and decoder, in random pieces")
    func roundTrip() throws {
        var random = SeededRandom(seed: 0x5EED)
        for _ in 0..<FuzzSettings.iterations / 4 {
            let values = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                RandomRESP.value(depth: 0, using: &random)
            }
            var encoded = ByteBuffer()
            for value in values { RESPEncoder.write(value, into: &encoded) }
            // Feed the stream in random pieces, as a socket would.
            let bytes = Array(encoded.readableBytesView)
            var received = ByteBuffer()
            var decoded: [RESPValue] = []
            var offset = 0
            while offset < bytes.count {
                let piece = Int.random(in: 1...max(1, bytes.count - offset), using: &random)
                received.writeBytes(bytes[offset..<(offset + piece)])
                offset += piece
                while let value = try RESPDecoder().decode(&received) { decoded.append(value) }
            }
            #expect(decoded == values)
            #expect(received.readableBytes == 0)
        }
    }

    @Test("fuzz: mutated and random bytes never crash the decoder")
    func fuzz() {
        var random = SeededRandom(seed: FuzzSettings.seed)
        var outcomes = (values: 0, incomplete: 0, errors: 0)
        for _ in 0..<FuzzSettings.iterations {
            var bytes: [UInt8]
            if Bool.random(using: &random) {
                var encoded = ByteBuffer()
                RESPEncoder.write(RandomRESP.value(depth: 0, using: &random), into: &encoded)
                bytes = Array(encoded.readableBytesView)
                for _ in 0..<Int.random(in: 1...4, using: &random) { RandomRESP.mutate(&bytes, using: &random) }
            } else {
                bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in
                    Bool.random(using: &random)
                        ? UInt8.random(in: 0...255, using: &random)
                        : Array("+-:$*_,#(!=%~>|\r\n0123456789".utf8).randomElement(using: &random)!
                }
            }
            var buffer = ByteBuffer(bytes: bytes)
            do {
                while let _ = try RESPDecoder().decode(&buffer) { outcomes.values += 1 }
                outcomes.incomplete += 1
            } catch is RedisError {
                outcomes.errors += 1
            } catch {
                Issue.record("unexpected error type \(error)")
            }
        }
        // Every kind of outcome must have been exercised, or the fuzzer is not reaching the parser.
        #expect(outcomes.values > 0 && outcomes.incomplete > 0 && outcomes.errors > 0)
    }
}

/// `STOWAGE_FUZZ_ITERATIONS` and `STOWAGE_FUZZ_SEED` scale the fuzz run up from the default.
enum FuzzSettings {
    static let iterations = ProcessInfo.processInfo.environment["STOWAGE_FUZZ_ITERATIONS"].flatMap { Int($0) } ?? 20_000
    static let seed = ProcessInfo.processInfo.environment["STOWAGE_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0xF0CC
}

/// SplitMix64: reproducible randomness for property and fuzz tests.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum RandomRESP {
    static func line(using random: inout SeededRandom) -> String {
        String((0..<Int.random(in: 0...12, using: &random)).map { _ in "abcXYZ 09:-_".randomElement(using: &random)! })
    }

    static func text(using random: inout SeededRandom) -> String {
        String(
            (0..<Int.random(in: 0...20, using: &random)).map { _ in "ab\r\n\0é€😀 $*".randomElement(using: &random)! }
        )
    }

    static func value(depth: Int, using random: inout SeededRandom) -> RESPValue {
        let kind = Int.random(in: 0..<(depth > 3 ? 11 : 15), using: &random)
        func children() -> [RESPValue] {
            (0..<Int.random(in: 0...4, using: &random)).map { _ in value(depth: depth + 1, using: &random) }
        }
        switch kind {
        case 0: return .simpleString(line(using: &random))
        case 1: return .simpleError(line(using: &random))
        case 2: return .integer(Int64.random(in: .min ... .max, using: &random))
        case 3:
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            return .bulkString(ByteBuffer(bytes: bytes))
        case 4: return Bool.random(using: &random) ? .bulkString(nil) : .array(nil)
        case 5: return .null
        case 6:
            return .double(
                [0, -0.5, 1e300, -1e-300, .infinity, -.infinity, Double.random(in: -1e9...1e9, using: &random)]
                    .randomElement(using: &random)!
            )
        case 7: return .boolean(Bool.random(using: &random))
        case 8:
            return .bigNumber(
                (Bool.random(using: &random) ? "-" : "") + String(UInt64.random(in: 0 ... .max, using: &random))
                    + "123456789"
            )
        case 9: return .bulkError(text(using: &random))
        case 10:
            return .verbatimString(format: ["txt", "mkd"].randomElement(using: &random)!, text: text(using: &random))
        case 11: return .array(children())
        case 12:
            return .map(
                (0..<Int.random(in: 0...3, using: &random)).map { _ in
                    RESPMapEntry(
                        key: value(depth: depth + 1, using: &random),
                        value: value(depth: depth + 1, using: &random)
                    )
                }
            )
        case 13: return .set(children())
        default: return .push(children())
        }
    }

    static func mutate(_ bytes: inout [UInt8], using random: inout SeededRandom) {
        guard !bytes.isEmpty else {
            bytes.append(UInt8.random(in: 0...255, using: &random))
            return
        }
        let index = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<5, using: &random) {
        case 0: bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
        case 1: bytes.removeSubrange(index...)
        case 2: bytes.insert(Array("-19\r\n*$".utf8).randomElement(using: &random)!, at: index)
        case 3: bytes.remove(at: index)
        default: bytes[index] = UInt8.random(in: 0...255, using: &random)
        }
    }
}
