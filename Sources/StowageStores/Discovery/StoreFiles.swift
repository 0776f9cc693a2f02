import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sizes of a store's few known files, by `lstat`: no walk.
enum StoreFiles {
    struct Measured {
        var logical = ByteCount.zero
        var allocated = ByteCount.zero
        var files = 0
    }

    /// The regular files among `paths` (missing ones count as nothing).
    static func measure(_ paths: [String]) throws -> Measured {
        var measured = Measured()
        for path in paths {
            guard let status = FileStatus.of(path) else {
                if errno == ENOENT { continue }
                throw StowageError.syscall(.current, "examine", path: path)
            }
            guard status.type == .regular else { continue }
            measured.logical = measured.logical + ByteCount(status.size)
            measured.allocated = measured.allocated + ByteCount(status.allocatedBytes)
            measured.files += 1
        }
        return measured
    }

    /// The names in `directory`, without `.` and `..`; empty when it does not exist.
    static func names(in directory: URL) throws -> [String] {
        try OpenDirectory.names(at: directory.fileSystemPath).sorted()
    }

    /// Whether `url` is a directory (not following a final symbolic link).
    static func isDirectory(_ url: URL) -> Bool {
        FileStatus.of(url.fileSystemPath)?.type == .directory
    }
}
