#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Measures entries relative to open directories, as ``DiskUsage`` does for paths: allocated
/// bytes (`st_blocks × 512`), never following a symbolic link.
///
/// One measure is shared by every entry of a run, so a file reached twice (a hard link, or two
/// clean tasks naming overlapping paths) is counted once, and bytes freed are never counted twice.
package struct TreeMeasure {
    /// Space and entries of what was measured.
    package struct Totals: Sendable, Hashable {
        package var bytes: Int64 = 0
        /// Files, links and directories.
        package var entries = 0
    }

    private var seen = Set<FileIdentity>()
    private let cancellation: CancellationFlag?

    package init(cancellation: CancellationFlag?) {
        self.cancellation = cancellation
    }

    /// Measures `name` in `parent` and everything below it. A missing entry measures zero.
    package mutating func measure(_ name: String, in parent: OpenDirectory) throws -> Totals {
        var totals = Totals()
        try add(name, in: parent, to: &totals)
        return totals
    }

    private mutating func add(_ name: String, in parent: OpenDirectory, to totals: inout Totals) throws {
        guard let status = FileStatus.at(parent.descriptor, name) else { return }
        guard seen.insert(status.identity).inserted else { return }
        totals.bytes += status.allocatedBytes
        totals.entries += 1
        guard status.type == .directory, let directory = parent.openChild(name) else { return }
        try cancellation?.check()
        // An unreadable directory measures what could be read; removal reports it.
        for entry in (try? directory.entries()) ?? [] {
            try add(entry.name, in: directory, to: &totals)
        }
    }
}
