#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TemporaryFile {
    /// Removes the temporaries that `init(beside:permissions:readable:)` made in `directory`
    /// (`NAME.tmp-PID-RANDOM`) for a process that no longer runs: one killed between creating
    /// its temporary and renaming it leaves the file behind, and nothing else would ever remove
    /// it. A temporary of a running process (this one included) is left alone, since its
    /// commit is still to come.
    ///
    /// Works through the open directory: a link in a leftover's place is removed as a link.
    ///
    /// - Returns: How many leftovers went; 0 when the directory cannot be read.
    @discardableResult
    package static func removeLeftovers(in directory: String) -> Int {
        removeLeftovers(in: directory, namedWith: "")
    }

    /// Removes the leftovers (as ``removeLeftovers(in:)`` judges them) of the temporaries made
    /// beside `destination` only: names that start with its ``temporaryPrefix(beside:)``
    /// (shortened as it is for a long name). For a file that shares its directory with files a
    /// caller does not own (a preferences suite or a cookie file in a directory of the app's
    /// choosing), whose temporaries are not its to judge.
    ///
    /// - Returns: How many leftovers went; 0 when the directory cannot be read.
    @discardableResult
    package static func removeLeftovers(beside destination: String) -> Int {
        let prefix = temporaryPrefix(beside: destination)
        guard let slash = prefix.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return removeLeftovers(in: ".", namedWith: prefix)
        }
        let directory = slash == prefix.utf8.startIndex ? "/" : String(prefix[..<slash])
        return removeLeftovers(in: directory, namedWith: String(prefix[prefix.utf8.index(after: slash)...]))
    }

    private static func removeLeftovers(in directory: String, namedWith prefix: String) -> Int {
        guard let opened = try? OpenDirectory.open(path: directory), let entries = try? opened.entries() else {
            return 0
        }
        var removed = 0
        for entry in entries where entry.name.utf8.starts(with: prefix.utf8) {
            guard let process = creator(ofTemporaryNamed: entry.name), !isRunning(process) else { continue }
            if opened.removeEntry(entry.name) { removed += 1 }
        }
        return removed
    }

    /// The process id in a name `….tmp-PID-RANDOM`; `nil` for any other name.
    static func creator(ofTemporaryNamed name: String) -> pid_t? {
        let bytes = Array(name.utf8)
        let marker = Array(".tmp-".utf8)
        guard bytes.count > marker.count else { return nil }
        guard
            let start = stride(from: bytes.count - marker.count, through: 0, by: -1).first(where: {
                bytes[$0..<$0 + marker.count].elementsEqual(marker)
            })
        else { return nil }
        let parts = bytes[(start + marker.count)...].split(
            separator: UInt8(ascii: "-"),
            omittingEmptySubsequences: false
        )
        guard parts.count == 2,
            parts.allSatisfy({ !$0.isEmpty && $0.count <= 10 && $0.allSatisfy { (0x30...0x39).contains($0) } }),
            let process = pid_t(String(decoding: parts[0], as: UTF8.self)), process > 0,
            UInt32(String(decoding: parts[1], as: UTF8.self)) != nil
        else { return nil }
        return process
    }

    /// Whether a process with id `process` runs (`kill(pid, 0)`: `ESRCH` only when none does;
    /// `EPERM` means it runs under another user).
    private static func isRunning(_ process: pid_t) -> Bool {
        process == getpid() || kill(process, 0) == 0 || errno != ESRCH
    }
}
