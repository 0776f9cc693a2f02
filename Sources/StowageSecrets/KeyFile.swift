import Crypto
import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The master-key file: 32 random bytes, `0600`, in a `0700` directory away from the store.
enum KeyFile {
    static func loadOrCreate(_ url: URL, storeDirectory: URL) throws -> SymmetricKey {
        let keyDirectory = url.deletingLastPathComponent().standardizedFileURL.path
        let store = storeDirectory.standardizedFileURL.path
        guard keyDirectory != store, !keyDirectory.hasPrefix(store + "/"), !store.hasPrefix(keyDirectory + "/") else {
            throw StowageError(
                code: .invalidArgument,
                message: """
                    the key file \(url.path) would sit with the data it protects (\(store)); put it in a directory \
                    of its own outside the store
                    """,
                path: url.path
            )
        }
        try SecureFiles.createDirectory(url.deletingLastPathComponent())
        if let bytes = try SecureFiles.read(url) {
            guard bytes.count == 32 else {
                throw StowageError(
                    code: .corrupt,
                    message: "the key file \(url.path) holds \(bytes.count) bytes, not 32; restore it from a backup",
                    path: url.path
                )
            }
            return SymmetricKey(data: bytes)
        }
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { [UInt8]($0) }
        // O_EXCL: two processes creating it at once must not end up with different keys.
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if descriptor < 0 {
            if errno == EEXIST { return try loadOrCreate(url, storeDirectory: storeDirectory) }
            throw StowageError.syscall(.current, "create the key file", path: url.path)
        }
        defer { close(descriptor) }
        do {
            try bytes.withUnsafeBytes {
                try FileDescriptorIO.writeAll($0, to: descriptor, action: "write the key file", path: url.path)
            }
            try FileDescriptorIO.synchronize(descriptor, action: "flush the key file", path: url.path)
        } catch {
            // A partial key file would lock the store for good: remove it so the next open retries.
            unlink(url.path)
            throw error
        }
        return key
    }
}
