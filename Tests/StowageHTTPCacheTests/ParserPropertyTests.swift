import StowageHTTPCache
import Testing

/// Property-based fuzzing of the Cache-Control and HTTP-date parsers with many random inputs
/// from a seeded generator (reproducible; the seed is in the test name). The properties: the
/// parsers never trap, always finish, and what they print parses back to the same value.
/// `Fuzz/run.sh` runs the same parsers under libFuzzer for coverage-guided inputs.
@Suite struct ParserPropertyTests {
    /// SplitMix64: a small, fast, seedable generator.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let alphabet =
        Array(#"max-age=s-maxage,no-cache"private\ \t;=,"0123456789WGMTSunNov:"#.utf8) + [0, 0xFF, 0xC3, 0x28]
    static let iterations = 100_000

    private static func randomBytes(_ rng: inout SplitMix) -> [UInt8] {
        let length = Int.random(in: 0...64, using: &rng)
        return (0..<length).map { _ in
            Bool.random(using: &rng) ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
        }
    }

    @Test("Cache-Control parser (seed 0x5707): 100 000 random byte strings, no trap, printed form parses back")
    func cacheControlRandomBytes() {
        var rng = SplitMix(state: 0x5707)
        for _ in 0..<Self.iterations {
            let text = String(decoding: Self.randomBytes(&rng), as: UTF8.self)
            let parsed = CacheControl(parsing: text)
            _ = (parsed.maxAge, parsed.noCacheFields, parsed.maxStale, parsed.staleIfError)
            let reparsed = CacheControl(parsing: parsed.description)
            #expect(reparsed.directives.map(\.name) == parsed.directives.map(\.name), "input: \(Array(text.utf8))")
        }
    }

    @Test("Cache-Control parser (seed 0xCAFE): random directive lists round-trip exactly")
    func cacheControlRoundTrip() {
        var rng = SplitMix(state: 0xCAFE)
        let names = ["max-age", "no-cache", "private", "x-ext", "s-maxage", "stale-if-error", "public"]
        for _ in 0..<20_000 {
            let directives = (0..<Int.random(in: 1...6, using: &rng)).map { _ -> CacheControl.Directive in
                let name = names.randomElement(using: &rng)!
                switch Int.random(in: 0...2, using: &rng) {
                case 0: return .init(name)
                case 1: return .init(name, String(UInt32.random(in: 0...UInt32.max, using: &rng)))
                default:
                    let scalars = (0..<Int.random(in: 0...10, using: &rng)).map { _ in
                        Character(
                            Unicode.Scalar(
                                UInt8(Self.alphabet.filter { $0 >= 0x20 && $0 < 0x7F }.randomElement(using: &rng)!)
                            )
                        )
                    }
                    return .init(name, String(scalars))
                }
            }
            let cc = CacheControl(directives)
            #expect(CacheControl(parsing: cc.description) == cc, "\(cc.description)")
        }
    }

    @Test(
        "HTTP-date parser (seed 0xDA7E): 100 000 random strings and mutated dates, no trap; formatted dates parse back"
    )
    func dates() {
        var rng = SplitMix(state: 0xDA7E)
        for _ in 0..<Self.iterations {
            let seconds = Int64.random(in: -62_135_596_800...253_402_300_799, using: &rng)
            let formatted = HTTPDate.format(seconds)
            #expect(HTTPDate.parse(formatted) == seconds)
            // The strict grammar wants a four-digit year: from 1000 on.
            if seconds >= -30_610_224_000 { #expect(HTTPDate.parseStrict(formatted) == seconds) }
            var bytes = Array(formatted.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = Self.alphabet.randomElement(using: &rng)!
            }
            let mutated = String(decoding: bytes, as: UTF8.self)
            _ = HTTPDate.parse(mutated)
            // What the strict grammar accepts, the lenient one reads the same.
            if let strict = HTTPDate.parseStrict(mutated) { #expect(HTTPDate.parse(mutated) == strict) }
            let random = String(decoding: Self.randomBytes(&rng), as: UTF8.self)
            _ = HTTPDate.parse(random)
            _ = HTTPDate.parseStrict(random)
        }
    }

    @Test("Parsers take linear time: a 1 MB pathological value finishes")
    func longInputs() {
        let quotes = String(repeating: "\"\\", count: 250_000)
        #expect(CacheControl(parsing: quotes).directives.isEmpty)
        let commas = String(repeating: "a=,", count: 300_000)
        #expect(CacheControl(parsing: commas).directives.count == 300_000)
        #expect(HTTPDate.parse(String(repeating: "Sun, ", count: 200_000)) == nil)
        #expect(HTTPDate.parseStrict(String(repeating: "Sun, ", count: 200_000)) == nil)
    }
}
