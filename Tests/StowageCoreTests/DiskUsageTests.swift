import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `du -s -B1` is the reference for allocated bytes; logical bytes are the files' lengths.
@Suite("DiskUsage")
struct DiskUsageTests {
    @Test("a mixed tree matches du -s -B1 and counts files and directories")
    func mixedTree() async throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("a.txt", bytes: 1)
        try scratch.write("b/c.bin", bytes: 70_000)
        try scratch.write("b/d/e.bin", bytes: 4_097)
        try scratch.makeDirectory("empty")
        let usage = try await DiskUsage.measure(scratch.url)
        #expect(usage.allocatedBytes.rawValue == (try duAllocatedBytes(scratch.path)))
        #expect(usage.fileCount == 3)
        #expect(usage.directoryCount == 4)  // root, b, b/d, empty
        #expect(usage.issues.isEmpty)
        // Logical bytes are the regular files' st_size (directories' own sizes are not content).
        #expect(usage.logicalBytes.rawValue == 1 + 70_000 + 4_097)
    }

    @Test("hard links count once, as du does")
    func hardLinks() throws {
        let scratch = try TemporaryDirectory()
        let file = try scratch.write("original", bytes: 100_000)
        #expect(link(file.path(percentEncoded: false), scratch.path + "/second") == 0)
        #expect(link(file.path(percentEncoded: false), scratch.path + "/third") == 0)
        let usage = try DiskUsage.measure(scratch.url)
        #expect(usage.fileCount == 1)
        #expect(usage.allocatedBytes.rawValue == (try duAllocatedBytes(scratch.path)))
    }

    @Test("symbolic links are counted as links and never followed (file, directory, dangling, loop)")
    func symbolicLinks() throws {
        let outside = try TemporaryDirectory("outside")
        try outside.write("big", bytes: 1_000_000)
        let scratch = try TemporaryDirectory()
        try scratch.symlink("to-dir", to: outside.path)
        try scratch.symlink("to-file", to: outside.path + "/big")
        try scratch.symlink("dangling", to: "/nonexistent/target")
        try scratch.symlink("loop", to: "loop")
        let usage = try DiskUsage.measure(scratch.url)
        #expect(usage.allocatedBytes.rawValue == (try duAllocatedBytes(scratch.path)))
        #expect(usage.allocatedBytes.rawValue < 1_000_000)
        #expect(usage.fileCount == 0)
        #expect(usage.issues.isEmpty)
    }

    @Test("sparse files count their allocated blocks, not their length")
    func sparseFile() throws {
        let scratch = try TemporaryDirectory()
        let path = scratch.path + "/sparse"
        let descriptor = open(path, O_CREAT | O_WRONLY, 0o600)
        #expect(descriptor >= 0)
        #expect(ftruncate(descriptor, 1 << 30) == 0)
        close(descriptor)
        let usage = try DiskUsage.measure(URL(filePath: path))
        #expect(usage.logicalBytes.rawValue == 1 << 30)
        #expect(usage.allocatedBytes.rawValue == (try duAllocatedBytes(path)))
        #expect(usage.allocatedBytes.rawValue < 1 << 20)
    }

    @Test("the per-child breakdown adds up to the total")
    func children() throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("one/a", bytes: 10_000)
        try scratch.write("one/b", bytes: 20_000)
        try scratch.write("two", bytes: 300_000)
        let usage = try DiskUsage.measure(scratch.url, options: .init(includesChildren: true))
        #expect(usage.children.map(\.name).sorted() == ["one", "two"])
        let one = try #require(usage.children.first { $0.name == "one" })
        #expect(one.isDirectory)
        #expect(one.totals.fileCount == 2)
        #expect(one.totals.allocatedBytes.rawValue == (try duAllocatedBytes(scratch.path + "/one")))
        var status = stat()
        #expect(lstat(scratch.path, &status) == 0)
        let childSum = usage.children.reduce(Int64(0)) { $0 + $1.totals.allocatedBytes.rawValue }
        #expect(childSum + Int64(status.st_blocks) * 512 == usage.allocatedBytes.rawValue)
    }

    @Test("an empty directory and a single file are measured")
    func trivialInputs() throws {
        let scratch = try TemporaryDirectory()
        let empty = try DiskUsage.measure(scratch.url)
        #expect(empty.fileCount == 0 && empty.directoryCount == 1)
        let file = try scratch.write("file", bytes: 123)
        let single = try DiskUsage.measure(file)
        #expect(single.fileCount == 1 && single.logicalBytes.rawValue == 123)
        #expect(single.allocatedBytes.rawValue == (try duAllocatedBytes(file.path(percentEncoded: false))))
    }

    @Test("a missing path is a notFound error naming the path")
    func missingPath() async throws {
        let scratch = try TemporaryDirectory()
        let missing = scratch.url.appending(path: "nope")
        await #expect {
            try await DiskUsage.measure(missing)
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .notFound && error.message.contains("nope")
        }
    }

    @Test("a cancelled task stops measuring")
    func cancellation() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }  // cancelled before it measures, not in a sleep
            return try await DiskUsage.measure(URL(filePath: "/usr"))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
