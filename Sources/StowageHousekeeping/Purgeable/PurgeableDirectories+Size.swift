import Foundation
import StowageCore

extension PurgeableDirectories {
    /// What one registered directory holds that a sweep or a reset could free.
    package enum Holding: Sendable, Equatable {
        /// Nothing is at the registered path (a sweep skips it).
        case missing
        /// The directory is a mount point, or under one, of another file system or mount than its
        /// container location: a sweep leaves it whole and names it (`"skipped: another file
        /// system"`), so nothing in it counts as freeable.
        case otherFileSystem(path: String)
        /// The allocated bytes under the directory, measured as `du -x` measures them (a mount
        /// inside it is another file system's, which no sweep frees), less the directory's own
        /// blocks, which a sweep and a reset keep.
        case allocated(ByteCount)
    }

    /// What the registered directory `path` holds, resolved as a sweep resolves it (confined to
    /// its container location, links inside followed, a mount point recognised as a sweep
    /// recognises it), so that a listing never shows as freeable what a sweep leaves in place.
    ///
    /// - Throws: `StowageError` for a path a registration would refuse, one that escapes its
    ///   location, or one that names something other than a directory.
    package func holding(_ path: String) async throws -> Holding {
        let subject = "purgeable directory \(PathInput.quoted(path))"
        let resolved = try await BlockingWork.run {
            [container] () throws -> (directory: URL, isInside: Bool, ownBytes: Int64)? in
            let containerPath = try ContainerPath(parsing: path, subject: subject)
            switch try ConfinedResolver.resolve(containerPath, in: container, subject: subject) {
            case .directory(let directory):
                return (
                    URL(filePath: directory.path, directoryHint: .isDirectory), directory.isInsideBoundary,
                    FileStatus.of(directory.descriptor)?.allocatedBytes ?? 0
                )
            case .missing:
                return nil
            case .entry(let parent, let name):
                throw StowageError(
                    code: .notADirectory,
                    message:
                        "\(subject): '\(parent.pathOf(name))' is not a directory; move it away or unregister the path"
                )
            }
        }
        guard let resolved else { return .missing }
        guard resolved.isInside else { return .otherFileSystem(path: resolved.directory.fileSystemPath) }
        let usage = try await DiskUsage.measure(resolved.directory, options: .init(staysOnFileSystem: true))
        // A reset empties the directory and keeps it (PurgeSweep.empty): its own blocks are not
        // freeable, and counted they made a listing promise more than `purge --reset-all` frees.
        return .allocated(ByteCount(max(0, usage.allocatedBytes.rawValue - resolved.ownBytes)))
    }
}
