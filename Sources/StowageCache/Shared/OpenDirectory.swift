import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory opened for `openat`-style work, closed when the last reference goes.
///
/// Purging and cleaning work only through such descriptors, never through path strings: a
/// directory swapped for a symbolic link after it was opened cannot redirect them.
final class OpenDirectory: Sendable {
    /// The descriptor (`O_RDONLY | O_DIRECTORY`).
    let descriptor: Int32
    /// The directory's path, for messages only; never passed to a system call after opening.
    let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Opens the child directory `name` without following a symbolic link; `nil` with `errno`.
    func openChild(_ name: String) -> OpenDirectory? {
        let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard child >= 0 else { return nil }
        return OpenDirectory(descriptor: child, path: Self.join(path, name))
    }

    /// The path of the entry `name`, for messages.
    func pathOf(_ name: String) -> String { Self.join(path, name) }

    static func join(_ base: String, _ name: String) -> String {
        base.hasSuffix("/") ? base + name : base + "/" + name
    }

    /// One entry of a directory listing.
    struct Entry {
        var name: String
        /// `d_type`: `DT_DIR`, `DT_REG`, `DT_LNK`, … or `DT_UNKNOWN` where the file system does not say.
        var type: UInt8
    }

    /// Reads every entry except `.` and `..`.
    ///
    /// Names are read in full before the caller removes any: removing entries while `readdir`
    /// walks the same directory may skip some.
    ///
    /// - Throws: `StowageError` when the directory cannot be read.
    func entries() throws -> [Entry] {
        let copy = dup(descriptor)
        guard copy >= 0, let stream = fdopendir(copy) else {
            let error = Errno.current
            throw StowageError.syscall(error, "read directory", path: path)
        }
        defer { closedir(stream) }
        // The duplicate shares the file offset with every earlier listing: start from the top.
        rewinddir(stream)
        var result: [Entry] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw StowageError.syscall(.current, "read directory", path: path) }
                return result
            }
            let name = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
            if name[0] == 0x2E && (name[1] == 0 || (name[1] == 0x2E && name[2] == 0)) { continue }
            result.append(Entry(name: String(cString: name), type: entry.pointee.d_type))
        }
    }
}
