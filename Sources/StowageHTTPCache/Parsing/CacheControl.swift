import Foundation

/// The directives of `Cache-Control` field lines, parsed by the grammar of RFC 9111 §5.2.
///
/// ```swift
/// let cc = CacheControl(parsing: ["max-age=60, no-cache=\"Set-Cookie\"", "must-revalidate"])
/// cc.maxAge            // .seconds(60)
/// cc.noCacheFields     // ["set-cookie"]
/// cc.mustRevalidate    // true
/// ```
///
/// `Cache-Control = #cache-directive`, `cache-directive = token [ "=" ( token / quoted-string ) ]`
/// (RFC 9111 §5.2; lists per RFC 9110 §5.6.1). Several field lines are one list (RFC 9110 §5.3).
/// Directive names are case-insensitive and kept lowercased; arguments keep their case and have
/// quoted-string escapes removed. What the RFC leaves to recipients:
/// - unknown directives are kept in ``directives`` but change nothing (§5.2.3);
/// - a malformed element (a bad token, an unterminated quote) is skipped up to the next comma
///   that is not inside quotes, and the rest of the list still counts;
/// - a directive whose delta-seconds argument is not `1*DIGIT` (quoted or not, §5.2) is
///   ``DeltaSeconds/invalid``; one that appears twice with different values is
///   ``DeltaSeconds/conflicting``: for a response both make it stale (§4.2.1 "caches are
///   encouraged to consider responses that have invalid freshness information … to be stale";
///   duplicates: "either the first occurrence should be used or the response should be considered
///   stale"); values above 2³¹ count as 2³¹ (§1.2.2).
///
/// The parser walks UTF-8 bytes once, never traps and takes linear time (fuzzed in
/// `CacheControlFuzzTests`).
public struct CacheControl: Sendable, Hashable, CustomStringConvertible {
    /// One directive: its lowercased name and its argument, unquoted, if it had one.
    public struct Directive: Sendable, Hashable {
        /// The directive's name, lowercased (`max-age`).
        public var name: String
        /// The argument after `=`, with quotes and escapes removed; `nil` when there was none.
        public var argument: String?

        /// Creates a directive.
        public init(_ name: String, _ argument: String? = nil) {
            self.name = name.lowercased()
            self.argument = argument
        }
    }

    /// A delta-seconds argument (RFC 9111 §1.2.2) as a directive gave it.
    public enum DeltaSeconds: Sendable, Hashable {
        /// Not present.
        case absent
        /// A valid number of seconds, at most 2³¹.
        case seconds(Int)
        /// Present with a missing or non-numeric argument.
        case invalid
        /// Present more than once with different values.
        case conflicting

        /// The seconds when valid, otherwise `nil`.
        public var value: Int? {
            if case .seconds(let value) = self { return value }
            return nil
        }

        /// Whether the directive appeared at all.
        public var isPresent: Bool { self != .absent }
    }

    /// Every directive in field order, duplicates and unknown ones included.
    public private(set) var directives: [Directive]

    /// The largest delta-seconds a cache must be able to represent (RFC 9111 §1.2.2).
    public static let maximumDeltaSeconds = 2_147_483_648

    /// Parses the values of all `Cache-Control` field lines of a message.
    public init(parsing fieldValues: some Sequence<some StringProtocol>) {
        var directives: [Directive] = []
        for value in fieldValues { CacheControlParser.parse(Array(value.utf8), into: &directives) }
        self.directives = directives
    }

    /// Parses one `Cache-Control` field value.
    public init(parsing fieldValue: some StringProtocol) {
        self.init(parsing: CollectionOfOne(fieldValue))
    }

    /// A value made of `directives`, e.g. to send.
    public init(_ directives: [Directive]) {
        self.directives = directives.map { Directive($0.name, $0.argument) }
    }

    /// The field value: directives joined by `, `, arguments quoted where a token cannot hold them.
    public var description: String {
        directives.map { directive in
            guard let argument = directive.argument else { return directive.name }
            if !argument.isEmpty, argument.utf8.allSatisfy(CacheControlParser.isTokenCharacter) {
                return "\(directive.name)=\(argument)"
            }
            let escaped = argument.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "\"",
                with: "\\\""
            )
            return "\(directive.name)=\"\(escaped)\""
        }.joined(separator: ", ")
    }

    /// Whether the directive `name` is present (with or without an argument).
    public func contains(_ name: String) -> Bool { has(Self.lowercasedIfNeeded(name)) }

    /// Whether a directive named `name` (already lowercase) is present.
    func has(_ name: String) -> Bool { directives.contains { $0.name == name } }

    /// `name` lowercased, without allocating when it already is (the directive names in
    /// ``CacheControl+Directives`` are; lookups run on every cache hit).
    static func lowercasedIfNeeded(_ name: String) -> String {
        name.utf8.contains { (0x41...0x5A).contains($0) } ? name.lowercased() : name
    }

    /// The delta-seconds argument of `name`; see ``DeltaSeconds``.
    public func deltaSeconds(_ name: String) -> DeltaSeconds { delta(Self.lowercasedIfNeeded(name)) }

    /// ``deltaSeconds(_:)`` for a name that is already lowercase.
    func delta(_ name: String) -> DeltaSeconds {
        var result = DeltaSeconds.absent
        for directive in directives where directive.name == name {
            let parsed = Self.parseDeltaSeconds(directive.argument)
            switch (result, parsed) {
            case (.absent, _): result = parsed
            case (.seconds(let a), .seconds(let b)) where a == b: break
            default: result = .conflicting
            }
        }
        return result
    }

    /// The field names listed in the argument of `name` (e.g. `no-cache="Set-Cookie, X-Id"`),
    /// lowercased; `nil` when the directive is absent, `[]` when it has no argument.
    public func fieldNames(_ name: String) -> [String]? {
        let name = Self.lowercasedIfNeeded(name)
        var found = false
        var names: [String] = []
        for directive in directives where directive.name == name {
            found = true
            guard let argument = directive.argument else { continue }
            names += argument.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                .filter { !$0.isEmpty }
        }
        return found ? names : nil
    }

    static func parseDeltaSeconds(_ argument: String?) -> DeltaSeconds {
        guard let argument, !argument.isEmpty else { return .invalid }
        var value = 0
        for byte in argument.utf8 {
            guard (0x30...0x39).contains(byte) else { return .invalid }
            value = min(value * 10 + Int(byte - 0x30), maximumDeltaSeconds)
        }
        return .seconds(value)
    }
}
