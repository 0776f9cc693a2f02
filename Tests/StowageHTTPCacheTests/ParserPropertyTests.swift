import StowageHTTPCache
import StowageTestSupport
import Testing

/// Property-based fuzzing of the Cache-Control and HTTP-date parsers with many random inputs
/// from a seeded generator (reproducible; the seed is in the test name). The properties: the
/// parsers never trap, always finish, and what they print parses back to the same value.
/// `Fuzz/run.sh` runs the same parsers under libFuzzer for coverage-guided inputs.
///
/// The loops run on a thread of their own (they compute for seconds in a debug build) and
/// collect the inputs that break a property; each test then expects that list to be empty.
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

    /// Collects up to ten inputs that break a property, with what was wrong.
    struct Counterexamples: Sendable {
        private(set) var found: [String] = []
        mutating func check(_ holds: Bool, _ description: @autoclosure () -> String) {
            if !holds, found.count < 10 { found.append(description()) }
        }
    }

    @Test("Cache-Control parser (seed 0x5707): 100 000 random byte strings, no trap, printed form parses back")
    func cacheControlRandomBytes() async throws {
        let failures = try await onOwnThread {
            var rng = SplitMix(state: 0x5707)
            var failures = Counterexamples()
            for _ in 0..<Self.iterations {
                let text = String(decoding: Self.randomBytes(&rng), as: UTF8.self)
                let parsed = CacheControl(parsing: text)
                _ = (parsed.maxAge, parsed.noCacheFields, parsed.maxStale, parsed.staleIfError)
                let reparsed = CacheControl(parsing: parsed.description)
                failures.check(
                    reparsed.directives.map(\.name) == parsed.directives.map(\.name),
                    "input \(Array(text.utf8)) printed as \(parsed.description.debugDescription) parses back differently"
                )
            }
            return failures.found
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test("Cache-Control parser (seed 0xCAFE): random directive lists round-trip exactly")
    func cacheControlRoundTrip() async throws {
        let failures = try await onOwnThread {
            var rng = SplitMix(state: 0xCAFE)
            var failures = Counterexamples()
            let names = ["max-age", "no-cache", "private", "x-ext", "s-maxage", "stale-if-error", "public"]
            let printable = Self.alphabet.filter { $0 >= 0x20 && $0 < 0x7F }
            for _ in 0..<20_000 {
                let directives = (0..<Int.random(in: 1...6, using: &rng)).map { _ -> CacheControl.Directive in
                    let name = names.randomElement(using: &rng)!
                    switch Int.random(in: 0...2, using: &rng) {
                    case 0: return .init(name)
                    case 1: return .init(name, String(UInt32.random(in: 0...UInt32.max, using: &rng)))
                    default:
                        let scalars = (0..<Int.random(in: 0...10, using: &rng)).map { _ in
                            Character(Unicode.Scalar(printable.randomElement(using: &rng)!))
                        }
                        return .init(name, String(scalars))
                    }
                }
                let cc = CacheControl(directives)
                failures.check(CacheControl(parsing: cc.description) == cc, "\(cc.description.debugDescription)")
            }
            return failures.found
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test(
        "HTTP-date parser (seed 0xDA7E): 100 000 random strings and mutated dates, no trap; formatted dates parse back"
    )
    func dates() async throws {
        let failures = try await onOwnThread {
            var rng = SplitMix(state: 0xDA7E)
            var failures = Counterexamples()
            for _ in 0..<Self.iterations {
                let seconds = Int64.random(in: -62_135_596_800...253_402_300_799, using: &rng)
                let formatted = HTTPDate.format(seconds)
                failures.check(HTTPDate.parse(formatted) == seconds, "\(formatted) does not parse back to \(seconds)")
                // The strict grammar wants a four-digit year: from 1000 on.
                if seconds >= -30_610_224_000 {
                    failures.check(
                        HTTPDate.parseStrict(formatted) == seconds,
                        "\(formatted) does not parse back strictly to \(seconds)"
                    )
                }
                var bytes = Array(formatted.utf8)
                for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = Self.alphabet.randomElement(using: &rng)!
                }
                let mutated = String(decoding: bytes, as: UTF8.self)
                _ = HTTPDate.parse(mutated)
                // What the strict grammar accepts, the lenient one reads the same.
                if let strict = HTTPDate.parseStrict(mutated) {
                    failures.check(HTTPDate.parse(mutated) == strict, "\(mutated.debugDescription): lenient ≠ strict")
                }
                let random = String(decoding: Self.randomBytes(&rng), as: UTF8.self)
                _ = HTTPDate.parse(random)
                _ = HTTPDate.parseStrict(random)
            }
            return failures.found
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test("Parsers take linear time: a 1 MB pathological value finishes")
    func longInputs() async throws {
        let (quotes, commas, dates, strictDates) = try await onOwnThread {
            (
                CacheControl(parsing: String(repeating: "\"\\", count: 250_000)).directives.count,
                CacheControl(parsing: String(repeating: "a=,", count: 300_000)).directives.count,
                HTTPDate.parse(String(repeating: "Sun, ", count: 200_000)),
                HTTPDate.parseStrict(String(repeating: "Sun, ", count: 200_000))
            )
        }
        #expect(quotes == 0)
        #expect(commas == 300_000)
        #expect(dates == nil)
        #expect(strictDates == nil)
    }
}
