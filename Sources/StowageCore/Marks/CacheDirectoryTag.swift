import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `CACHEDIR.TAG` file of the Cache Directory Tagging Specification (bford.info/cachedir).
///
/// A directory holding a file named `CACHEDIR.TAG` whose first 43 bytes are exactly
/// `Signature: 8a477f597d28d172789f06886806bc55` is a cache: backup and archiving tools
/// (GNU tar `--exclude-caches`, borg, restic, …) skip it. Stowage writes one into every cache
/// directory it creates.
public enum CacheDirectoryTag {
    /// The file name, `CACHEDIR.TAG`.
    public static let fileName = "CACHEDIR.TAG"
    /// The signature that must open the file, byte for byte.
    public static let signature = "Signature: 8a477f597d28d172789f06886806bc55"

    /// The full contents Stowage writes: the signature, then comments as the specification suggests.
    public static let contents = """
        \(signature)
        # This file is a cache directory tag created by Stowage.
        # For information about cache directory tags, see:
        #\thttps://bford.info/cachedir/

        """

    /// Whether `directory` holds a valid tag (a regular file starting with the signature).
    public static func isPresent(in directory: URL) -> Bool {
        let path = directory.appending(path: fileName).fileSystemPath
        return hasSignature(open(path, tagOpenFlags))
    }

    /// Whether the directory open at `descriptor` holds a valid tag.
    package static func isPresent(inDirectory descriptor: Int32) -> Bool {
        hasSignature(openat(descriptor, fileName, tagOpenFlags))
    }

    // Non-blocking, so a FIFO named CACHEDIR.TAG cannot hang a report; never through a link.
    private static let tagOpenFlags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK

    /// Whether the file open at `descriptor` (closed here) is regular and starts with the signature.
    private static func hasSignature(_ descriptor: Int32) -> Bool {
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, FileType(status) == .regular else { return false }
        let expected = Array(signature.utf8)
        var buffer = [UInt8](repeating: 0, count: expected.count)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        return count == expected.count && buffer == expected
    }

    /// Writes the tag into `directory` unless a valid one is already there.
    ///
    /// The file is written to a temporary name and renamed into place, so a reader never sees a
    /// half-written tag.
    ///
    /// - Throws: ``StowageError`` when the directory is missing or not writable.
    public static func write(in directory: URL) throws {
        if isPresent(in: directory) { return }
        try AtomicFile.write(Array(contents.utf8), to: directory.appending(path: fileName), permissions: 0o644)
    }
}
