import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs of our own, mounted for one test and unmounted after (needs root, as CI has).
public final class SmallVolume: Sendable {
    /// Where the volume is mounted.
    public let path: String

    /// Mounts a tmpfs of `bytes` bytes; `nil` where mounting is not allowed.
    public init?(bytes: Int, _ name: String = #function) {
        path =
            FileManager.default.temporaryDirectory.path(percentEncoded: false)
            + "/stowage-volume-\(name.filter { $0.isLetter })-\(UUID().uuidString)"
        guard mkdir(path, 0o700) == 0 else { return nil }
        let status = try? SmallVolume.command(["mount", "-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path])
        guard status == 0 else {
            rmdir(path)
            return nil
        }
    }

    deinit {
        _ = try? SmallVolume.command(["umount", "-l", path])
        rmdir(path)
    }

    /// Fills the volume with one file until the kernel says ENOSPC.
    public func fill() {
        let descriptor = open(path + "/filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let chunk = [UInt8](repeating: 0xAB, count: 4_096)
        while chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        close(descriptor)
    }

    /// Fills the volume with one file until about `bytes` bytes are left free (`statvfs`'s
    /// available blocks), for tests of what a cache does when space is short but not gone.
    public func fill(leaving bytes: Int) {
        var status = statvfs()
        guard statvfs(path, &status) == 0 else { return }
        let available = Int(status.f_bavail) * Int(status.f_frsize)
        var remaining = max(0, available - bytes)
        let descriptor = open(path + "/filler", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let chunk = [UInt8](repeating: 0xAB, count: 65_536)
        while remaining > 0 {
            let count = min(remaining, chunk.count)
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, count) }
            guard written > 0 else { break }
            remaining -= written
        }
        close(descriptor)
    }

    /// Frees what ``fill()`` took.
    public func free() { unlink(path + "/filler") }

    /// Whether this process may mount a tmpfs (it runs as root).
    public static var canMount: Bool {
        guard let probe = SmallVolume(bytes: 1 << 20, "probe") else { return false }
        _ = probe
        return true
    }

    /// Runs a command and returns its exit status.
    private static func command(_ arguments: [String]) throws -> Int32 {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
