import CStowageShims

/// What a walk knows about one directory entry, read without following a final symbolic link.
///
/// On Linux this comes from `statx(2)`, which also reports the birth (creation) time where the
/// file system records it (ext4, XFS, Btrfs, tmpfs since Linux 5.x); on Apple platforms from
/// `fstatat` with `st_birthtimespec`.
package struct FileStatus: Sendable {
    /// `st_mode`: type and permission bits.
    package var mode: UInt32
    /// `st_nlink`.
    package var linkCount: UInt64
    /// The file's identity on its device (`st_dev`, `st_ino`).
    package var identity: FileIdentity
    /// `st_blocks × 512`: the space the file takes.
    package var allocatedBytes: Int64
    /// `st_size`.
    package var size: Int64
    /// The last modification, in seconds since 1970.
    package var modificationTime: Double
    /// The birth time in seconds since 1970, `nil` where the file system has none.
    package var birthTime: Double?
    /// The unique ID of the mount the entry is on (`statx`'s `stx_mnt_id`, Linux 5.8+); `nil`
    /// where the system does not report one (Apple platforms, older kernels).
    package var mountID: UInt64?

    /// The kind of entry.
    package var type: FileType {
        switch mode & 0o170000 {
        case 0o040000: .directory
        case 0o100000: .regular
        default: .other
        }
    }

    /// Examines `name` in the directory open at `directory`; `nil` with `errno` set on failure.
    package static func at(_ directory: Int32, _ name: UnsafePointer<CChar>) -> FileStatus? {
        var raw = stowage_file_status()
        guard stowage_status_at(directory, name, &raw) == 0 else { return nil }
        return FileStatus(raw)
    }

    /// Examines the file or directory open at `descriptor`; `nil` with `errno` set on failure.
    package static func of(_ descriptor: Int32) -> FileStatus? {
        var raw = stowage_file_status()
        guard stowage_status_of(descriptor, &raw) == 0 else { return nil }
        return FileStatus(raw)
    }

    /// Examines `name` in the directory open at `directory`; `nil` with `errno` set on failure.
    package static func at(_ directory: Int32, _ name: String) -> FileStatus? {
        name.withCString { at(directory, $0) }
    }
}

extension FileStatus {
    fileprivate init(_ raw: stowage_file_status) {
        self.init(
            mode: UInt32(raw.mode),
            linkCount: UInt64(raw.link_count),
            identity: FileIdentity(device: UInt64(raw.device), inode: UInt64(raw.inode)),
            allocatedBytes: Int64(raw.blocks) * 512,
            size: Int64(raw.size),
            modificationTime: Double(raw.modification_seconds) + Double(raw.modification_nanoseconds) / 1e9,
            birthTime: raw.has_birth_time != 0
                ? Double(raw.birth_seconds) + Double(raw.birth_nanoseconds) / 1e9 : nil,
            mountID: raw.has_mount_id != 0 ? UInt64(raw.mount_id) : nil
        )
    }
}
