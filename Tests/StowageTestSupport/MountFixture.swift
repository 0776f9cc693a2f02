import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A container root with a directory that holds files of its own and an empty mount point, and
/// a tree outside the container to mount there (``PrivateMounts``): what a Flatpak sandbox, a
/// Docker volume or a user's bind-mounted data directory looks like to a removal.
///
///     base/root/<directory>/own.txt          the container's own file
///     base/root/<directory>/mnt/             the mount point
///     base/outside/keep.txt                  the tree to mount, which must survive
///     base/outside/deep/keep2.txt
///     base/outside/nested/                   a mount point inside it (for --rbind)
public struct MountFixture: Sendable {
    /// The temporary directory holding everything.
    public let base: URL
    /// The directory, relative to the container, that holds the mount point.
    public let directory: String

    /// Makes the tree in `base`; `daysOld` back-dates every file (for age-based sweeps).
    public init(in base: URL, directory: String = "Documents/attach", daysOld: Double = 30) throws {
        self.base = base
        self.directory = directory
        let manager = FileManager.default
        try manager.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try manager.createDirectory(atPath: outside + "/deep", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: outside + "/nested", withIntermediateDirectories: true)
        for path in [directoryPath + "/own.txt"] + outsideFiles {
            try Data(repeating: 7, count: 20_000).write(to: URL(filePath: path))
            let seconds = Date().timeIntervalSince1970 - daysOld * 86_400
            var times = [timespec](repeating: timespec(tv_sec: Int(seconds), tv_nsec: 0), count: 2)
            guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw TestFailure("utimensat \(path) failed") }
        }
    }

    /// The container's root.
    public var root: String { base.appending(path: "root").path(percentEncoded: false) }
    /// The directory holding the mount point, absolute.
    public var directoryPath: String { root + "/" + directory }
    /// Where the outside tree is mounted.
    public var mountPoint: String { directoryPath + "/mnt" }
    /// The tree outside the container.
    public var outside: String { base.appending(path: "outside").path(percentEncoded: false) }
    /// The outside tree's files.
    public var outsideFiles: [String] { [outside + "/keep.txt", outside + "/deep/keep2.txt"] }
    /// The outside tree's files as seen through the mount point.
    public var mountedFiles: [String] { ["/keep.txt", "/deep/keep2.txt"].map { mountPoint + $0 } }

    /// Whether every file of the outside tree is still there.
    public var outsideIsIntact: Bool { outsideFiles.allSatisfy { FileManager.default.fileExists(atPath: $0) } }
    /// Whether the container's own file went.
    public var ownFileIsGone: Bool { !FileManager.default.fileExists(atPath: directoryPath + "/own.txt") }

    /// The bind mount of the outside tree at the mount point.
    public var bind: PrivateMounts.Mount { .bind(outside, at: mountPoint) }
}

/// Every regular file below `path` (hidden ones too) with its bytes, for telling whether
/// anything in a tree changed: a file gone, added, or written to (the mount suites share it).
public func listing(_ path: String) -> [String: Data] {
    var files: [String: Data] = [:]
    let enumerator = FileManager.default.enumerator(atPath: path)
    while let name = enumerator?.nextObject() as? String {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
        if attributes?[.type] as? FileAttributeType == .typeRegular {
            files[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data("unreadable".utf8)
        }
    }
    return files
}
