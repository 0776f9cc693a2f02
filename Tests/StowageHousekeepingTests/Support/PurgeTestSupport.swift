import Foundation
import StowageCore
import StowageHousekeeping
import StowageTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A rooted container in a fresh temporary directory, with helpers to lay out files.
final class TestContainer: Sendable {
    let directory: TemporaryDirectory
    let container: Container
    var root: URL { directory.url }

    init(_ name: String = #function) throws {
        directory = try TemporaryDirectory(name)
        container = Container(root: directory.url)
    }

    func url(_ relative: String) -> URL { root.appending(path: relative) }

    /// Writes `bytes` bytes at `relative` (parents created) and sets its modification time to
    /// `modified` seconds since 1970 with `utimensat`, when given.
    @discardableResult
    func file(_ relative: String, bytes: Int = 4_096, modified: Double? = nil) throws -> URL {
        let url = url(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: bytes).write(to: url)
        if let modified { try setModificationTime(url, modified) }
        return url
    }

    /// Writes `relative` as ``file(_:bytes:modified:)`` does, born after `earlier` where the file
    /// system records birth times.
    ///
    /// Birth times cannot be set, and the kernel stamps them from a coarse clock (one tick is
    /// 1–10 ms), so files made one after another can share one. Until the new file's birth time
    /// is later than `earlier`'s, it is removed and made again after a millisecond: the event
    /// waited for is the kernel's clock passing `earlier`'s birth, however late a loaded machine
    /// runs.
    @discardableResult
    func file(_ relative: String, bytes: Int = 4_096, modified: Double? = nil, bornAfter earlier: URL) throws -> URL {
        while true {
            let made = try file(relative, bytes: bytes, modified: modified)
            guard let before = birthTime(earlier), let birth = birthTime(made), birth <= before else { return made }
            try FileManager.default.removeItem(at: made)
            usleep(1_000)
        }
    }

    /// Writes `directories × filesPerDirectory` one-byte files quickly (no FileManager per file).
    func manyFiles(_ relative: String, directories: Int, filesPerDirectory: Int, modified: Double? = nil) throws {
        for directory in 0..<directories {
            let folder = url("\(relative)/d\(directory)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for file in 0..<filesPerDirectory {
                let path = folder.appending(path: "f\(file)").path
                let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { throw TestFailure("cannot create \(path): errno \(errno)") }
                _ = write(descriptor, "x", 1)
                close(descriptor)
                if let modified { try setModificationTime(URL(filePath: path), modified) }
            }
        }
    }

    func directory(_ relative: String) throws {
        try FileManager.default.createDirectory(at: url(relative), withIntermediateDirectories: true)
    }

    func symlink(_ relative: String, to destination: String) throws {
        try FileManager.default.createDirectory(
            at: url(relative).deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        guard createSymbolicLink(destination, at: url(relative).path) == 0 else {
            throw TestFailure("symlink \(relative) failed: errno \(errno)")
        }
    }

    func exists(_ relative: String) -> Bool {
        var status = stat()
        return lstat(url(relative).path, &status) == 0
    }

    /// Names of the regular files below `relative`, relative to it, sorted.
    func files(under relative: String) -> [String] {
        let base = url(relative)
        guard let enumerator = FileManager.default.enumerator(atPath: base.path) else { return [] }
        return enumerator.compactMap { $0 as? String }.filter {
            var status = stat()
            return lstat(base.appending(path: $0).path, &status) == 0 && status.st_mode & S_IFMT != S_IFDIR
        }.sorted()
    }
}

/// Sets a file's access and modification times, without following a final link.
func setModificationTime(_ url: URL, _ seconds: Double) throws {
    var times = [timespec](
        repeating: timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9)),
        count: 2
    )
    guard utimensat(AT_FDCWD, url.path, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
        throw TestFailure("utimensat \(url.path) failed: errno \(errno)")
    }
}

/// `st_blocks × 512` of a file.
func allocatedBytes(_ url: URL) -> Int64 {
    var status = stat()
    return lstat(url.path, &status) == 0 ? Int64(status.st_blocks) * 512 : 0
}

/// The birth time of the file at `url` in seconds since 1970, `nil` where the file system has none.
func birthTime(_ url: URL) -> Double? {
    FileStatus.at(AT_FDCWD, url.path)?.birthTime
}

/// Whether the file system under `url` reports birth times through statx.
func hasBirthTime(_ url: URL) -> Bool {
    let output = (try? runCommand(["stat", "-c", "%W", url.path])) ?? "0"
    return (Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0
}

/// One day in seconds.
let day: Double = 86_400

/// `symlink(2)`, under a name the container's `symlink(_:to:)` method does not shadow.
private func createSymbolicLink(_ destination: String, at path: String) -> Int32 {
    symlink(destination, path)
}
