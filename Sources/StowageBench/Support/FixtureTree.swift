import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A generated directory tree of small files, built once and reused by later runs.
enum FixtureTree {
    /// Makes (or reuses) a tree of `directories` directories in groups of 100 with
    /// `filesPerDirectory` files each, sizes 0 to `largestFile` bytes from `seed`.
    ///
    /// A `.complete` marker is written last: an interrupted generation is wiped and redone.
    ///
    /// - Parameters:
    ///   - links: One hard link and one symbolic link per directory, so that counting them
    ///     right matters (for sizes). Default `true`.
    ///   - oddFilesAge: How far back every odd file is dated (for age policies); `nil`, the
    ///     default, for now.
    static func make(
        at root: URL,
        directories: Int,
        filesPerDirectory: Int,
        largestFile: Int = 8_192,
        seed: UInt64 = 0x5709_A6E0,
        links: Bool = true,
        oddFilesAge: Duration? = nil
    ) throws -> URL {
        let marker = root.appending(path: ".complete")
        if FileManager.default.fileExists(atPath: marker.fileSystemPath) { return root }
        if FileManager.default.fileExists(atPath: root.fileSystemPath) {
            _ = try DirectoryClearing.clearContents(of: root)
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var generator = SplitMix64(seed: seed)
        let payload = [UInt8](repeating: 0x61, count: largestFile)
        let oddFilesDate = oddFilesAge.map { Int(Date().timeIntervalSince1970) - Int($0.components.seconds) }
        for index in 0..<directories {
            let directory = root.appending(path: "group-\(index / 100)/dir-\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for file in 0..<filesPerDirectory {
                let path = directory.appending(path: "file-\(file).dat").fileSystemPath
                let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { throw BenchFailure("cannot create \(path): errno \(errno)") }
                let size = Int(generator.next() % UInt64(largestFile + 1))
                _ = payload.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
                if let oddFilesDate, file % 2 == 1 {
                    var times = [timespec](repeating: timespec(tv_sec: oddFilesDate, tv_nsec: 0), count: 2)
                    futimens(descriptor, &times)
                }
                close(descriptor)
            }
            guard links else { continue }
            link(
                directory.appending(path: "file-0.dat").fileSystemPath,
                directory.appending(path: "hardlink.dat").fileSystemPath
            )
            symlink("file-1.dat", directory.appending(path: "symlink.dat").fileSystemPath)
        }
        guard FileManager.default.createFile(atPath: marker.fileSystemPath, contents: Data()) else {
            throw BenchFailure("cannot create \(marker.fileSystemPath)")
        }
        return root
    }
}

/// A small deterministic random number generator, so every run builds the same tree.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
