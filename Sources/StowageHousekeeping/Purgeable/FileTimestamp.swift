import StowageCore

/// Which of a file's times counts as its age when purging.
public enum FileTimestamp: String, Sendable, Hashable, Codable {
    /// The last modification (`st_mtime`): when the data was last written. What `find -mtime`,
    /// `touch` and `utimensat` use.
    case modification
    /// The birth time (`statx`'s `stx_btime` on Linux, `st_birthtime` on Apple platforms) where
    /// the file system records it (ext4, XFS, Btrfs, tmpfs, APFS); the modification time where
    /// it does not (e.g. some network and FUSE file systems, kernels before 4.11).
    case creation

    func seconds(of status: FileStatus) -> Double {
        switch self {
        case .modification: status.modificationTime
        case .creation: status.birthTime ?? status.modificationTime
        }
    }
}
