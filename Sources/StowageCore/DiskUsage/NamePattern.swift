#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A shell pattern matched against the name of a file or directory, as `du --exclude` and
/// `find -name` use one.
///
/// `*` matches any run of characters, `?` any one character, `[…]` one character of a set
/// (`[!…]` or `[^…]` one not in it), and `\` quotes the next character: fnmatch(3) with no
/// flags, which is what GNU du passes. A leading `.` is not special, so `*` matches
/// `.DS_Store` — the Finder files a folder-size count usually skips are excluded with `.DS*`.
///
/// ```swift
/// let options = DiskUsage.Options(excluding: [try NamePattern(".DS*"), try NamePattern("*.log")])
/// let usage = try await DiskUsage.measure(folderURL, options: options)
/// ```
///
/// Only the entry's own name is matched. GNU du also tries the pattern on the whole path as
/// typed and on each of its tails, so there a `*` or `?` can reach across a `/`: `a?b` skips
/// `a/b`, and `*tmp*` skips everything measured below `/tmp`. A name pattern means the same
/// wherever the tree is; for patterns that stay within one name (`.DS*`, `*.log`, `node_modules`,
/// `[Cc]ache*`) the results are du's.
public struct NamePattern: Sendable, Hashable, CustomStringConvertible {
    /// The pattern as written, e.g. `".DS*"`.
    public let pattern: String
    /// The pattern's bytes with a terminating NUL, so matching passes it to fnmatch as is.
    private let cString: [CChar]

    /// The longest pattern accepted, in UTF-8 bytes: four times the longest file name.
    public static let maximumLength = 1_024

    /// Reads a pattern.
    ///
    /// - Parameter pattern: A shell pattern for one name: not empty, at most ``maximumLength``
    ///   bytes, without `/` (a name never contains one) or NUL.
    /// - Throws: ``StowageError`` with code `.invalidArgument` saying what is wrong with the
    ///   pattern and how to write it.
    public init(_ pattern: String) throws {
        func refuse(_ reason: String) -> StowageError {
            .invalidArgument(
                "cannot use \(pattern.debugDescription) as an exclusion pattern: \(reason)"
            )
        }
        guard !pattern.isEmpty else {
            throw refuse("it is empty; write a name or a shell pattern such as '.DS*' or '*.log'")
        }
        guard !pattern.utf8.contains(0) else {
            throw refuse("it contains a NUL byte, which no file name can; remove it")
        }
        guard !pattern.utf8.contains(UInt8(ascii: "/")) else {
            throw refuse(
                "it contains '/', and patterns match a single file or directory name; to skip a subtree, "
                    + "exclude its directory's name (e.g. 'node_modules')"
            )
        }
        guard pattern.utf8.count <= Self.maximumLength else {
            throw refuse("it is \(pattern.utf8.count) bytes long; the limit is \(Self.maximumLength)")
        }
        self.pattern = pattern
        self.cString = pattern.utf8CString.map { $0 }
    }

    /// Whether `name` (a single path component) matches the pattern.
    public func matches(_ name: String) -> Bool {
        name.withCString { matches($0) }
    }

    /// Whether the NUL-terminated `name` matches; allocates nothing.
    package func matches(_ name: UnsafePointer<CChar>) -> Bool {
        cString.withUnsafeBufferPointer { fnmatch($0.baseAddress!, name, 0) == 0 }
    }

    /// The pattern as written.
    public var description: String { pattern }

    /// Patterns are equal when written the same way.
    public static func == (lhs: NamePattern, rhs: NamePattern) -> Bool { lhs.pattern == rhs.pattern }

    /// Hashes the pattern as written.
    public func hash(into hasher: inout Hasher) { hasher.combine(pattern) }
}
