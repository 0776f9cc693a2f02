#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory opened for `openat`-style work, closed when the last reference goes.
///
/// Clearing, purging and cleaning work only through such descriptors, never through path
/// strings: a directory swapped for a symbolic link after it was opened cannot redirect them.
package final class OpenDirectory: Sendable {
    /// The descriptor (`O_RDONLY | O_DIRECTORY`).
    package let descriptor: Int32
    /// The directory's path, for messages only; never passed to a system call after opening.
    package let path: String
    /// The file system of the directory a walk started from (a container location, say), kept by
    /// every child opened with ``openChild(_:)``: removals and measures below it stay inside it
    /// (``TreeRemoval``, ``TreeMeasure``). `nil`: this directory's own.
    package let boundary: FileSystemBoundary?

    /// Adopts `descriptor`, which this object closes.
    ///
    /// - Parameter boundary: The file system walks from here must stay on; `nil` for the
    ///   directory's own.
    package init(descriptor: Int32, path: String, boundary: FileSystemBoundary? = nil) {
        self.descriptor = descriptor
        self.path = path
        self.boundary = boundary
    }

    /// ``boundary``, or this directory's own file system where none was given; `nil` only when
    /// the descriptor cannot be examined.
    package var effectiveBoundary: FileSystemBoundary? {
        boundary ?? FileSystemBoundary(descriptor: descriptor)
    }

    /// Whether this directory is on ``boundary`` (always, without one).
    package var isInsideBoundary: Bool {
        boundary?.contains(descriptor: descriptor) ?? true
    }

    deinit { close(descriptor) }

    /// Opens the directory at `path`, following symbolic links on the way as `opendir` does.
    ///
    /// - Throws: `StowageError` (`.notFound`, `.notADirectory`, …) when it cannot be opened;
    ///   `.invalidArgument` for a path with a NUL or control byte, which the system call would
    ///   cut short and so open another directory.
    ///
    /// - Parameter staysOnFileSystem: Make the directory's own file system and mount the
    ///   ``boundary`` of everything opened below it (``openChild(_:)``), as a store that removes
    ///   files under its directory needs: a mount inside it is not its to empty
    ///   (``FileSystemBoundary``, as `rm --one-file-system`).
    package static func open(path: String, staysOnFileSystem: Bool = false) throws -> OpenDirectory {
        try PathInput.check(path, subject: "the directory")
        let descriptor = openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, "open directory", path: path) }
        guard staysOnFileSystem else { return OpenDirectory(descriptor: descriptor, path: path) }
        guard let boundary = FileSystemBoundary(descriptor: descriptor) else {
            let error = StowageError.syscall(.current, "examine directory", path: path)
            close(descriptor)
            throw error
        }
        return OpenDirectory(descriptor: descriptor, path: path, boundary: boundary)
    }

    /// Opens the directory at `path` as ``open(path:staysOnFileSystem:)`` does, with `boundary`
    /// (a container location's file system, say) as the ``boundary`` of everything opened and
    /// removed below it; `nil` for the directory's own.
    ///
    /// - Throws: What ``open(path:staysOnFileSystem:)`` throws.
    package static func open(path: String, boundary: FileSystemBoundary?) throws -> OpenDirectory {
        let opened = try open(path: path, staysOnFileSystem: boundary == nil)
        guard let boundary else { return opened }
        let descriptor = dup(opened.descriptor)
        guard descriptor >= 0 else { throw StowageError.syscall(.current, "open directory", path: path) }
        return OpenDirectory(descriptor: descriptor, path: path, boundary: boundary)
    }

    /// The names in the directory at `path`, without `.` and `..`, in no particular order;
    /// empty when it does not exist.
    ///
    /// - Throws: `StowageError` when it exists but cannot be read.
    package static func names(at path: String) throws -> [String] {
        do {
            return try open(path: path).entries().map(\.name)
        } catch let error as StowageError where error.code == .notFound {
            return []
        }
    }

    /// Opens the child directory `name` without following a symbolic link; `nil` with `errno`.
    package func openChild(_ name: String) -> OpenDirectory? {
        let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard child >= 0 else { return nil }
        return OpenDirectory(descriptor: child, path: Self.join(path, name), boundary: boundary)
    }

    /// The path of the entry `name`, for messages.
    package func pathOf(_ name: String) -> String { Self.join(path, name) }

    /// `base/name`, with one slash between.
    package static func join(_ base: String, _ name: String) -> String {
        base.hasSuffix("/") ? base + name : base + "/" + name
    }

    /// One entry of a directory listing.
    package struct Entry {
        /// The entry's name, never `.` or `..`; for a name that is not valid UTF-8, the name
        /// with each byte that is not written `\xHH` (``shownName(_:)``), good for messages only.
        package var name: String
        /// `d_type`: `DT_DIR`, `DT_REG`, `DT_LNK`, … or `DT_UNKNOWN` where the file system does not say.
        package var type: UInt8
        /// The name's bytes as `readdir` gave them, NUL-terminated: what system calls get.
        package var rawName: [CChar]
    }

    /// The NUL-terminated `name` as text for messages and reports: its UTF-8 decoded, and each
    /// byte that is not UTF-8 written `\xHH`, as `ls -b` shows it. Two names that differ in such
    /// bytes read differently, and neither reads as a name holding U+FFFD (a look-alike with
    /// U+FFFD for each bad byte made three mount points one line of a report).
    package static func shownName(_ name: UnsafePointer<CChar>) -> String {
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self),
            count: strlen(name)
        )
        var result = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                result.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<(offset + length)] {
                    result += "\\x" + String(byte, radix: 16, uppercase: true)
                }
                offset += length
            case .emptyInput:
                return result
            }
        }
    }

    /// Reads every entry except `.` and `..`.
    ///
    /// Names are read in full before the caller removes any: removing entries while `readdir`
    /// walks the same directory may skip some.
    ///
    /// - Parameter includingUndecodable: Whether to list names that are not valid UTF-8. By
    ///   default they are left out: their `String` is a look-alike ("a\u{FFFD}" for the bytes
    ///   "a\xFF"), and a caller that opened, judged or removed by it would act on another file.
    ///   A caller that acts through ``Entry/rawName`` may ask for them.
    /// - Throws: `StowageError` when the directory cannot be read.
    package func entries(includingUndecodable: Bool = false) throws -> [Entry] {
        var result: [Entry] = []
        try Self.forEachEntry(in: descriptor, path: path) { name, type in
            let raw = Array(UnsafeBufferPointer(start: name, count: strlen(name) + 1))
            if let text = String(validatingCString: name) {
                result.append(Entry(name: text, type: type, rawName: raw))
            } else if includingUndecodable {
                result.append(Entry(name: Self.shownName(name), type: type, rawName: raw))
            }
        }
        return result
    }

    /// Calls `body` with the NUL-terminated name and the `d_type` of every entry of the
    /// directory open at `descriptor` except `.` and `..`, from the first entry on; the
    /// descriptor stays open. The one `readdir` loop of the package: walks that need no
    /// `String` per entry (disk usage) read through it directly.
    ///
    /// - Throws: `StowageError` when the directory cannot be read; what `body` throws.
    package static func forEachEntry(
        in descriptor: Int32,
        path: String,
        _ body: (UnsafePointer<CChar>, UInt8) throws -> Void
    ) throws {
        let copy = dup(descriptor)
        guard copy >= 0, let stream = fdopendir(copy) else {
            let error = Errno.current
            throw StowageError.syscall(error, "read directory", path: path)
        }
        defer { closedir(stream) }
        // The duplicate shares the file offset with every earlier listing: start from the top.
        rewinddir(stream)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw StowageError.syscall(.current, "read directory", path: path) }
                return
            }
            let name = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
            if name[0] == 0x2E && (name[1] == 0 || (name[1] == 0x2E && name[2] == 0)) { continue }
            try body(name, entry.pointee.d_type)
        }
    }
}
