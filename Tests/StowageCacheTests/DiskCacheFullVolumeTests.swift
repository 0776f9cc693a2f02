import Foundation
import StowageCore
import Testing

@testable import StowageCache

#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs of our own, mounted for one test and unmounted after (needs root, as CI has).
final class SmallVolume: Sendable {
    let path: String

    /// Mounts a tmpfs of `bytes` bytes; `nil` where mounting is not allowed.
    init?(bytes: Int, _ name: String = #function) {
        path =
            FileManager.default.temporaryDirectory.path(percentEncoded: false)
            + "/stowage-volume-\(name.filter { $0.isLetter })-\(UUID().uuidString)"
        guard mkdir(path, 0o700) == 0 else { return nil }
        let status = try? StowageCacheTestsRun.command(["mount", "-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path])
        guard status == 0 else {
            rmdir(path)
            return nil
        }
    }

    deinit {
        _ = try? StowageCacheTestsRun.command(["umount", "-l", path])
        rmdir(path)
    }

    /// Fills the volume with one file until the kernel says ENOSPC.
    func fill() {
        let descriptor = open(path + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let chunk = [UInt8](repeating: 0xAB, count: 4_096)
        while chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        close(descriptor)
    }

    /// Frees what ``fill()`` took.
    func free() { unlink(path + "/filler") }

    static var canMount: Bool {
        guard let probe = SmallVolume(bytes: 1 << 20, "probe") else { return false }
        _ = probe
        return true
    }
}

enum StowageCacheTestsRun {
    /// Runs a command and returns its exit status.
    static func command(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Issue 17, item 8: a full volume must not keep a disk cache (and so the proxy) from opening.
@Suite("DiskCache on a full volume", .enabled(if: SmallVolume.canMount, "needs to mount a tmpfs (root)"))
struct DiskCacheFullVolumeTests {
    @Test(
        "a cache on a full volume opens, serves its values, refuses writes with .noSpace, and writes again once space returns"
    )
    func fullVolume() throws {
        let volume = try #require(SmallVolume(bytes: 4 << 20))
        let directory = URL(filePath: volume.path + "/cache", directoryHint: .isDirectory)
        let small = Data(repeating: 1, count: 1_000)
        let large = Data(repeating: 2, count: 100_000)
        do {
            let cache = try DiskCache(directory: directory)
            try cache.setData(small, forKey: "small")
            try cache.setData(large, forKey: "large")
        }
        volume.fill()

        let cache = try DiskCache(directory: directory)
        #expect(try cache.data(forKey: "small") == small)
        #expect(try cache.data(forKey: "large") == large)
        let error = try #require(throws: StowageError.self) {
            try cache.setData(Data(repeating: 3, count: 100_000), forKey: "new")
        }
        #expect(error.code == .noSpace, "\(error)")
        #expect(try cache.data(forKey: "large") == large, "a failed write leaves what was there")

        volume.free()
        try cache.setData(Data(repeating: 3, count: 100_000), forKey: "new")
        #expect(try cache.data(forKey: "new") == Data(repeating: 3, count: 100_000))
        try cache.setData(small, forKey: "small2")
        #expect(try cache.data(forKey: "small2") == small)
    }
}
