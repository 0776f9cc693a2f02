import StowageCore

/// A manifest's entry pattern: names relative to the task's directory, with `*` (any run of
/// characters, also none) and `?` (exactly one character) in each component, as `PurgeableCache.plist`'s
/// `Entries`. `/` separates components and is never matched by a wildcard: `*/thumbs` matches
/// `thumbs` in every immediate subdirectory. `*` matches names starting with a dot as well — a
/// cleaner's `*` means everything. There are no character classes and no escapes.
struct EntryPattern: Sendable, Hashable, CustomStringConvertible {
    /// One pattern per path component, each as Unicode scalars.
    let components: [[Unicode.Scalar]]
    let description: String

    /// Parses `text`.
    ///
    /// - Parameter subject: The task, for messages.
    /// - Throws: `StowageError` `.pathEscapesRoot` for an absolute pattern or a `..` component,
    ///   `.invalidArgument` for an empty one.
    init(parsing text: String, subject: String) throws {
        try PathInput.check(text, subject: "\(subject): an entry")
        if text.hasPrefix("/") || text.hasPrefix("~") {
            throw StowageError(
                code: .pathEscapesRoot,
                message:
                    "\(subject): the entry \(PathInput.quoted(text)) is absolute; entries are names inside the task's Path, "
                    + "e.g. '*.tmp'",
                path: text
            )
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        if parts.contains("..") {
            throw StowageError(
                code: .pathEscapesRoot,
                message:
                    "\(subject): the entry \(PathInput.quoted(text)) contains '..', which could leave the task's Path; "
                    + "name entries inside it",
                path: text
            )
        }
        guard !parts.isEmpty else {
            throw StowageError.invalidArgument("\(subject): an entry is empty; write a name or a pattern such as '*'")
        }
        components = parts.map { Array($0.unicodeScalars) }
        description = parts.joined(separator: "/")
    }

    /// Whether the component pattern at `level` matches `name`.
    func matches(_ name: String, level: Int) -> Bool {
        Self.match(components[level][...], Array(name.unicodeScalars)[...])
    }

    /// Glob matching with `*` and `?`, iterative with one backtrack point (linear for one `*`,
    /// never exponential).
    static func match(_ pattern: ArraySlice<Unicode.Scalar>, _ name: ArraySlice<Unicode.Scalar>) -> Bool {
        var p = pattern.startIndex
        var n = name.startIndex
        var star: Int? = nil
        var resume = n
        while n < name.endIndex {
            if p < pattern.endIndex && (pattern[p] == "?" || pattern[p] == name[n]) {
                p += 1
                n += 1
            } else if p < pattern.endIndex && pattern[p] == "*" {
                star = p
                p += 1
                resume = n
            } else if let star {
                p = star + 1
                resume += 1
                n = resume
            } else {
                return false
            }
        }
        while p < pattern.endIndex && pattern[p] == "*" { p += 1 }
        return p == pattern.endIndex
    }
}
