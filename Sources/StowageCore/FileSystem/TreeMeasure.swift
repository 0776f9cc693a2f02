#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Measures entries relative to open directories, as ``DiskUsage`` does for paths: allocated
/// bytes (`st_blocks × 512`), never following a symbolic link.
///
/// Like the removals, a measure stays on the file system it was given (`du -x`, and bind mounts
/// of the same device too: ``FileSystemBoundary``), the parent's ``OpenDirectory/boundary`` or
/// else its own: what is measured is what a removal could free.
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

    /// Adds `name` and everything below it. The directories still to measure wait on a stack
    /// of this walk's own, not the thread's: a tree thousands of levels deep never overflows
    /// the stack (as the removal and disk-usage walks do). Each directory's names are listed in
    /// full when it is opened and it is then held only while names of it are pending.
    private mutating func add(_ name: String, in parent: OpenDirectory, to totals: inout Totals) throws {
        guard let boundary = parent.effectiveBoundary, boundary.contains(descriptor: parent.descriptor) else { return }
        var pending: [(parent: OpenDirectory, name: [CChar], shown: String)] = [
            (parent, Array(name.utf8CString), name)
        ]
        while let (directory, entry, shown) = pending.popLast() {
            guard let status = FileStatus.at(directory.descriptor, entry), boundary.contains(status),
                seen.insert(status.identity).inserted
            else { continue }
            totals.bytes += status.allocatedBytes
            totals.entries += 1
            guard status.type == .directory else { continue }
            let child = openat(directory.descriptor, entry, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { continue }
            guard boundary.contains(descriptor: child) else {
                close(child)
                continue
            }
            try cancellation?.check()
            let opened = OpenDirectory(descriptor: child, path: directory.pathOf(shown))
            // An unreadable directory measures what could be read; removal reports it. Names are
            // the listed bytes, so one that is not UTF-8 is measured as itself.
            for listed in (try? opened.entries(includingUndecodable: true)) ?? [] {
                pending.append((opened, listed.rawName, listed.name))
            }
        }
    }
}
