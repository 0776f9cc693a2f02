import Foundation
import StowageCore
import StowageTestSupport
import Testing

@testable import StowageHousekeeping

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Purgeable directories: deep trees")
struct DeepSweepTests {
    private static let depth = 2_500

    @Test("a sweep walks and trims a tree 2,500 levels deep on a thread with a 256 KiB stack")
    func deepTreeOnSmallStack() async throws {
        raiseDescriptorLimit(toAtLeast: Self.depth + 256)
        let fixture = try TestContainer()
        defer { _ = try? runCommand(["rm", "-rf", "--", fixture.root.path]) }
        let purgeable = PurgeableDirectories(container: fixture.container)
        try await purgeable.register("Library/Caches/deep", policy: .oneWeek, sizeCap: ByteCount(1))
        // "d/d/…/d" with an old file and a new one at the bottom: a 5,000-byte path, longer
        // than PATH_MAX, so it is made relative to descriptors.
        var directory = open(fixture.url("Library/Caches/deep").path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        for _ in 0..<Self.depth {
            #expect(mkdirat(directory, "d", 0o755) == 0)
            let child = openat(directory, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            close(directory)
            directory = child
        }
        for name in ["old", "new"] {
            let file = openat(directory, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            _ = write(file, "xxxx", 4)
            close(file)
        }
        var times = [timespec](repeating: timespec(tv_sec: 1_000_000_000, tv_nsec: 0), count: 2)
        #expect(utimensat(directory, "old", &times, 0) == 0)
        close(directory)

        // The walk that recursed once per level (and reopened by recursion) overflowed this stack.
        let report = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<PurgeReport, any Error>) in
            let thread = Thread { continuation.resume(with: Result { try purgeable.sweep() }) }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        let deep = try #require(report.directories.first)
        #expect(deep.failures.isEmpty, "\(deep.failures.prefix(3))")
        #expect(deep.removedForAge == 1, "the old file, by age")
        #expect(deep.removedForCap == 1, "the new file, for the one-byte cap")
    }
}
