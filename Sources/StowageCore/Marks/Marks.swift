import CStowageShims
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Marks that tell backup tools and Stowage's purging what a file or directory is.
///
/// - Excluded from backup: on Linux, the freedesktop.org extended attribute
///   `user.xdg.robots.backup` set to `false` (Common Extended Attributes), which backup tools
///   on Linux read. On Apple platforms, Apple's `URLResourceValues.isExcludedFromBackup`, which
///   Time Machine and iCloud/device backups honour.
/// - Purgeable: Stowage's own extended attribute `user.stowage.purgeable` = `true` on every
///   platform (APFS keeps any attribute name): Stowage's purging may delete the item under
///   storage pressure. The system's own purging does not read it.
/// - Cache directories additionally get a `CACHEDIR.TAG` file (see ``CacheDirectoryTag``),
///   which tar, borg, restic and rsync-based tools honour without reading xattrs.
///
/// Extended-attribute marks never follow a final symbolic link: marking a link marks the link.
/// Where the file system has no user extended attributes (some network and pseudo file
/// systems), each call throws ``StowageError`` with code `.unsupported`; it never pretends to
/// have set a mark.
public enum Marks {
    /// `user.xdg.robots.backup`, from freedesktop.org's Common Extended Attributes: the backup
    /// exclusion on Linux (Apple platforms use `URLResourceValues.isExcludedFromBackup`).
    public static let backupAttribute = "user.xdg.robots.backup"
    /// `user.stowage.purgeable`, Stowage's purgeable mark.
    public static let purgeableAttribute = "user.stowage.purgeable"

    /// Whether the item is excluded from backup: `user.xdg.robots.backup` is `false` on Linux,
    /// `URLResourceValues.isExcludedFromBackup` on Apple platforms.
    ///
    /// - Throws: ``StowageError`` with code `.unsupported` where the file system has no xattrs,
    ///   `.notFound` when the item does not exist.
    public static func isExcludedFromBackup(_ url: URL) throws -> Bool {
        #if canImport(Darwin)
        let path = try url.checkedFileSystemPath(subject: "cannot read the backup exclusion")
        do {
            return try url.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup ?? false
        } catch {
            throw StowageError.foundation(error, "read the backup exclusion of", path: path)
        }
        #else
        try attribute(backupAttribute, of: url) == "false"
        #endif
    }

    /// Excludes the item from backup, or clears the exclusion.
    ///
    /// - Parameters:
    ///   - excluded: On Linux, `true` sets `user.xdg.robots.backup` to `false`; `false` removes
    ///     the attribute (backup tools then use their default, which is to back up). On Apple
    ///     platforms, the value of `URLResourceValues.isExcludedFromBackup`.
    ///   - url: The file or directory.
    /// - Throws: ``StowageError`` with code `.unsupported` where the file system has no xattrs.
    public static func setExcludedFromBackup(_ excluded: Bool, at url: URL) throws {
        #if canImport(Darwin)
        let path = try url.checkedFileSystemPath(subject: "cannot set the backup exclusion")
        var values = URLResourceValues()
        values.isExcludedFromBackup = excluded
        var target = url
        do {
            try target.setResourceValues(values)
        } catch {
            throw StowageError.foundation(error, excluded ? "exclude from backup" : "include in backup", path: path)
        }
        #else
        try setFlag(backupAttribute, value: "false", present: excluded, at: url)
        #endif
    }

    /// Whether the item carries Stowage's purgeable mark.
    ///
    /// - Throws: ``StowageError`` with code `.unsupported` where the file system has no xattrs.
    public static func isPurgeable(_ url: URL) throws -> Bool {
        do {
            return try attribute(purgeableAttribute, of: url) == "true"
        } catch let error as StowageError where isOversizedValue(error) {
            return false
        }
    }

    /// Sets or clears Stowage's purgeable mark.
    ///
    /// - Throws: ``StowageError`` with code `.unsupported` where the file system has no xattrs.
    public static func setPurgeable(_ purgeable: Bool, at url: URL) throws {
        try setFlag(purgeableAttribute, value: "true", present: purgeable, at: url)
    }

    /// Sets `name` to `value` when `present`, removes it otherwise: a mark is its presence.
    private static func setFlag(_ name: String, value: String, present: Bool, at url: URL) throws {
        if present {
            try setAttribute(name, to: value, of: url)
        } else {
            try removeAttribute(name, of: url)
        }
    }

    // MARK: - Extended attributes

    /// The attribute's value as UTF-8 text, or `nil` when the item does not have it.
    package static func attribute(_ name: String, of url: URL) throws -> String? {
        try attribute(name, atPath: url.checkedFileSystemPath(subject: "cannot use extended attributes"))
    }

    /// Whether the item at `path` (a final symbolic link not followed) is excluded from backup;
    /// `false` where the file system has no extended attributes, since no mark can be there.
    package static func isExcludedFromBackup(atPath path: String) throws -> Bool {
        do {
            return try attribute(backupAttribute, atPath: path) == "false"
        } catch StowageError.Code.unsupported {
            return false
        }
    }

    package static func attribute(_ name: String, atPath path: String) throws -> String? {
        try readAttribute(name, path: path) { stowage_getxattr(path, name, $0, $1) }
    }

    /// The attribute's value of the file open at `descriptor`, or `nil` when it has none; `path`
    /// is for messages only. Reading through a descriptor reads the very file a walk opened
    /// (`O_NOFOLLOW`), whatever its name's bytes, never a twin a path might resolve to.
    package static func attribute(_ name: String, ofDescriptor descriptor: Int32, path: String) throws -> String? {
        try readAttribute(name, path: path) { stowage_fgetxattr(descriptor, name, $0, $1) }
    }

    /// Reads a value of at most 256 bytes with `read` (`getxattr`'s or `fgetxattr`'s shape):
    /// UTF-8 text, `nil` when the attribute is absent, a ``StowageError`` otherwise.
    private static func readAttribute(
        _ name: String,
        path: String,
        _ read: (UnsafeMutableRawPointer?, Int) -> Int
    ) throws -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = buffer.withUnsafeMutableBytes { read($0.baseAddress, $0.count) }
        if length >= 0 { return String(decoding: buffer.prefix(length), as: UTF8.self) }
        let error = Errno.current
        if error.rawValue == noAttributeErrno { return nil }
        throw failure(error, "read extended attribute '\(name)' of", path: path)
    }

    /// Whether the file open at `descriptor` carries `user.xdg.robots.backup` = `false`; `false`
    /// where the file system has no extended attributes, since no mark can be there. `path` is
    /// for messages only.
    package static func isExcludedFromBackup(descriptor: Int32, path: String) throws -> Bool {
        do {
            return try attribute(backupAttribute, ofDescriptor: descriptor, path: path) == "false"
        } catch StowageError.Code.unsupported {
            return false
        }
    }

    /// Whether the file open at `descriptor` carries the purgeable mark; `false` where the file
    /// system has no extended attributes, since no mark can be there.
    package static func isPurgeable(descriptor: Int32, path: String) throws -> Bool {
        do {
            return try attribute(purgeableAttribute, ofDescriptor: descriptor, path: path) == "true"
        } catch StowageError.Code.unsupported {
            return false
        } catch let error as StowageError where isOversizedValue(error) {
            return false
        }
    }

    /// Whether reading a value failed only because it is longer than the buffer (`ERANGE`): such
    /// a value is not `true`, so the item is not marked, and a walk goes on into it.
    private static func isOversizedValue(_ error: StowageError) -> Bool {
        (error.cause as? Errno)?.rawValue == ERANGE
    }

    package static func setAttribute(_ name: String, to value: String, of url: URL) throws {
        let path = try url.checkedFileSystemPath(subject: "cannot use extended attributes")
        let bytes = Array(value.utf8)
        let result = bytes.withUnsafeBytes { stowage_setxattr(path, name, $0.baseAddress, $0.count) }
        if result != 0 { throw failure(.current, "set extended attribute '\(name)' on", path: path) }
    }

    package static func removeAttribute(_ name: String, of url: URL) throws {
        let path = try url.checkedFileSystemPath(subject: "cannot use extended attributes")
        if stowage_removexattr(path, name) != 0 {
            let error = Errno.current
            if error.rawValue == noAttributeErrno { return }
            throw failure(error, "remove extended attribute '\(name)' from", path: path)
        }
    }

    #if canImport(Glibc)
    private static let noAttributeErrno = ENODATA
    #else
    private static let noAttributeErrno = ENOATTR
    #endif

    private static func failure(_ error: Errno, _ operation: String, path: String) -> StowageError {
        if error.rawValue == ENOTSUP || error.rawValue == EOPNOTSUPP {
            return StowageError(
                code: .unsupported,
                message: "cannot \(operation) '\(path)': the file system does not support user extended "
                    + "attributes (\(error)); keep the data on a file system that has them (ext4, xfs, btrfs, "
                    + "tmpfs on Linux ≥ 6.6, APFS) or skip marking it",
                path: path,
                cause: error
            )
        }
        return .syscall(error, operation, path: path)
    }
}
