import Foundation

/// How much space a file or a directory tree takes, counted the way `du` counts it.
///
/// ```swift
/// let usage = try await DiskUsage.measure(cachesURL)
/// print(usage.allocatedBytes.formatted(.compact), usage.fileCount)
/// ```
///
/// - ``allocatedBytes`` is exactly what `du -s -B1` prints: `st_blocks × 512` of every entry
///   (the directories themselves included), each hard-linked file counted once, symbolic links
///   counted as links and never followed.
/// - ``logicalBytes`` is the sum of `st_size` of regular files (hard links once): the bytes a
///   reader gets back. Unlike `du --apparent-size` it leaves out directories and link targets.
///   A sparse file's logical size can exceed its allocated size.
///
/// The walk uses `openat`/`fdopendir`/`fstatat` relative to open directory descriptors, so it
/// neither builds a path per file nor resolves one; it is as fast as `du` (see the bench scenario
/// `disk-usage.tree-100k`). Entries that cannot be read are listed in ``issues`` and the walk
/// goes on, as `du` warns and goes on.
public struct DiskUsage: Sendable, Hashable, Codable {
    /// The path that was measured.
    public var path: String
    /// The totals of the whole tree, the measured path included.
    public var totals: Totals
    /// One entry per immediate child of a measured directory, in directory order, when
    /// ``Options/includesChildren`` is set; empty otherwise. A hard-linked file is counted under
    /// the first child it was found in.
    public var children: [Child]
    /// Entries that could not be read; their sizes are missing from the totals.
    public var issues: [Issue]

    /// Sizes and counts of a tree.
    public struct Totals: Sendable, Hashable, Codable {
        /// Sum of `st_size` of regular files, each hard-linked file once.
        public var logicalBytes: ByteCount = .zero
        /// Sum of `st_blocks × 512` of every entry, each hard-linked file once (`du -s -B1`).
        public var allocatedBytes: ByteCount = .zero
        /// Regular files, each hard-linked file once.
        public var fileCount: Int = 0
        /// Directories, the measured one included.
        public var directoryCount: Int = 0
        /// Symbolic links, sockets, FIFOs and device nodes.
        public var otherCount: Int = 0

        /// Empty totals.
        public init() {}

        package mutating func add(_ other: Totals) {
            logicalBytes += other.logicalBytes
            allocatedBytes += other.allocatedBytes
            fileCount += other.fileCount
            directoryCount += other.directoryCount
            otherCount += other.otherCount
        }
    }

    /// The totals of one immediate child of the measured directory.
    public struct Child: Sendable, Hashable, Codable {
        /// The child's name inside the measured directory.
        public var name: String
        /// Whether the child is a directory (not following a symbolic link).
        public var isDirectory: Bool
        /// The child's totals, itself included.
        public var totals: Totals
    }

    /// An entry the walk could not read, like one of `du`'s warnings.
    public struct Issue: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The entry's path.
        public var path: String
        /// What went wrong, e.g. `"cannot read directory: EACCES (Permission denied)"`.
        public var message: String
        /// The text logs and messages show.
        public var description: String { "\(path): \(message)" }
    }

    /// What to measure and how.
    public struct Options: Sendable, Hashable {
        /// Skip entries on other file systems than the measured path's, like `du -x`, and also
        /// directories bind-mounted from the same device (which `du -x` counts, comparing only
        /// `st_dev`): what stays is what clearing the directory could free, since no removal
        /// crosses a mount. Default `false`, as plain `du`; ``Container/report(reserves:backupAudit:)``
        /// measures its locations with it set.
        public var staysOnFileSystem: Bool
        /// Fill ``DiskUsage/children`` with a breakdown per immediate child. Default `false`.
        public var includesChildren: Bool
        /// Skip every file or directory below the measured path whose name matches one of these
        /// patterns, with everything under it, like `du --exclude` (see ``NamePattern``). A
        /// skipped entry is neither counted nor examined, so a hard link to it found elsewhere
        /// still counts. The measured path itself is always measured. Default: none.
        public var excluding: [NamePattern]

        /// Creates options; the defaults measure the whole tree, crossing mount points, with no
        /// per-child breakdown and nothing excluded.
        public init(staysOnFileSystem: Bool = false, includesChildren: Bool = false, excluding: [NamePattern] = []) {
            self.staysOnFileSystem = staysOnFileSystem
            self.includesChildren = includesChildren
            self.excluding = excluding
        }
    }

    /// Sum of `st_size` of regular files (see ``Totals/logicalBytes``).
    public var logicalBytes: ByteCount { totals.logicalBytes }
    /// What `du -s -B1` reports (see ``Totals/allocatedBytes``).
    public var allocatedBytes: ByteCount { totals.allocatedBytes }
    /// Regular files, each hard-linked file once.
    public var fileCount: Int { totals.fileCount }
    /// Directories, the measured one included.
    public var directoryCount: Int { totals.directoryCount }

    /// Measures a file or a directory tree without blocking Swift's cooperative threads.
    ///
    /// - Parameters:
    ///   - url: A file URL. A symbolic link given here is measured as a link, not followed.
    ///   - options: See ``Options``.
    /// - Returns: The usage; unreadable entries below `url` are in ``issues``.
    /// - Throws: ``StowageError`` (`.notFound`, `.permissionDenied`, …) when `url` itself cannot
    ///   be examined; `CancellationError` when the task is cancelled (checked per directory).
    public static func measure(_ url: URL, options: Options = Options()) async throws -> DiskUsage {
        let cancellation = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await BlockingWork.run {
                try measure(url, options: options, cancellation: cancellation)
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// Measures a file or a directory tree on the calling thread; see ``measure(_:options:)``.
    public static func measure(_ url: URL, options: Options = Options()) throws -> DiskUsage {
        try measure(url, options: options, cancellation: nil)
    }

    private static func measure(
        _ url: URL,
        options: Options,
        cancellation: CancellationFlag?
    ) throws -> DiskUsage {
        var walker = try TreeWalker(
            rootPath: url.checkedFileSystemPath(subject: "cannot measure"),
            options: options,
            cancellation: cancellation
        )
        return try walker.run()
    }
}
