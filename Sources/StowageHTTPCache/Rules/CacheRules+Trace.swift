import HTTPTypes

/// One step of the trace a response carries (``CachedResponse/trace``), kept as the figures it
/// states and written out as text only when the trace is read.
///
/// Every lookup records its steps, but few callers read them (the proxy's `--trace`, tests, a
/// debug log line): writing them out on each hit — the freshness line's figures and lifetime
/// source, the array they were joined into — was about a third of a fresh memory hit
/// (`http-cache.lookup-hit`; see Benchmarks/README.md).
enum TraceNote: Sendable {
    /// A step already written out.
    case text(String)
    /// §4.2's figures for the stored response: its age and freshness lifetime in whole seconds,
    /// where the lifetime comes from, and the whole seconds it stays fresh for (`isFresh`) or
    /// has been stale by.
    case freshness(age: Int, lifetime: Int, source: LifetimeSource, isFresh: Bool, remaining: Int)

    /// The step as the trace shows it.
    var text: String {
        switch self {
        case .text(let text):
            return text
        case .freshness(let age, let lifetime, let source, let isFresh, let remaining):
            return "§4.2 age \(age) s of a \(lifetime) s lifetime from \(source.description): "
                + (isFresh ? "fresh for \(remaining) s" : "stale by \(remaining) s")
        }
    }
}

/// Where a stored response's freshness lifetime comes from (`CacheRules.lifetimeSource(of:)`).
enum LifetimeSource: Sendable {
    case forcedExpiry
    /// `s-maxage`, from the targeted field named, or from `Cache-Control` (`nil`).
    case sharedMaxAge(HTTPField.Name?)
    /// `max-age`, from the targeted field named, or from `Cache-Control` (`nil`).
    case maxAge(HTTPField.Name?)
    case expires
    case invalidExpires
    /// ``CacheRules/defaultLifetimes`` for this status.
    case operatorLifetime(status: Int)
    case heuristic
    case nothing

    /// The source as traces name it.
    var description: String {
        switch self {
        case .forcedExpiry: "a forced expiry rule"
        case .sharedMaxAge(let field): "s-maxage" + Self.suffix(field)
        case .maxAge(let field): "max-age" + Self.suffix(field)
        case .expires: "Expires"
        case .invalidExpires: "an invalid Expires (§5.3: already expired)"
        case .operatorLifetime(let status): "the operator's lifetime for status \(status)"
        case .heuristic: "§4.2.2 heuristic freshness (a fraction of the time since Last-Modified)"
        case .nothing: "nothing (no explicit freshness, no heuristic allowed)"
        }
    }

    private static func suffix(_ field: HTTPField.Name?) -> String {
        field.map { " in \($0.rawName) (RFC 9213)" } ?? ""
    }
}

extension Array where Element == TraceNote {
    /// The steps as text.
    var texts: [String] { map(\.text) }

    /// Adds a step already written out.
    mutating func append(_ text: String) { append(.text(text)) }
}
