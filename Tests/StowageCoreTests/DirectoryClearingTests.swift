import Foundation
import StowageTestSupport
import Testing

@testable import StowageCore

#if canImport(Glibc)
import Glibc
#endif

@Suite("DirectoryClearing")
struct DirectoryClearingTests {
    @Test("clearing removes everything inside, keeps the directory and reports bytes freed like du")
    func clearsContents() async throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("a", bytes: 50_000)
        try scratch.write("deep/er/b", bytes: 9_000)
        try scratch.makeDirectory("empty")
        // What du counts, less the directory's own blocks (it stays).
        var status = stat()
        #expect(lstat(scratch.path, &status) == 0)
        let before = try duAllocatedBytes(scratch.path) - Int64(status.st_blocks) * 512
        let report = try await DirectoryClearing.clearContents(of: scratch.url)
        #expect(report.isComplete)
        #expect(report.removedCount == 5)
        #expect(report.bytesFreed.rawValue == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
    }

    @Test("a symbolic link to a directory outside is removed as a link; the outside stays")
    func outsideLinkUntouched() throws {
        let outside = try TemporaryDirectory("outside")
        try outside.write("precious", bytes: 10)
        let scratch = try TemporaryDirectory()
        try scratch.symlink("escape", to: outside.path)
        let report = try DirectoryClearing.clearContents(of: scratch.url)
        #expect(report.removedCount == 1)
        #expect(!scratch.exists("escape"))
        #expect(outside.exists("precious"))
    }

    #if os(Linux)
    // Linux file systems take any bytes for a name; APFS refuses invalid UTF-8.
    @Test("names that are not UTF-8 are removed as themselves, files and directories alike, never as a look-alike")
    func undecodableNames() throws {
        let scratch = try TemporaryDirectory()
        // "a\xFF" and a directory "d\xFE" holding "x\xFD": a String holds only their look-alikes
        // ("a\u{FFFD}", …), which name other files or none. Python makes them.
        let script = """
            import os, sys
            base = os.fsencode(sys.argv[1])
            open(base + b"/a\\xff", "wb").write(b"1" * 5000)
            os.mkdir(base + b"/d\\xfe")
            open(base + b"/d\\xfe/x\\xfd", "wb").write(b"2" * 5000)
            """
        _ = try runCommand(["python3", "-c", script, scratch.path])
        let report = try DirectoryClearing.clearContents(of: scratch.url)
        #expect(report.isComplete, "\(report.failures)")
        #expect(report.removedCount == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
    }
    #endif

    @Test("names in keeping stay")
    func keeping() throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("CACHEDIR.TAG")
        try scratch.write("keep-me/inside")
        try scratch.write("gone")
        _ = try DirectoryClearing.clearContents(of: scratch.url, keeping: ["CACHEDIR.TAG", "keep-me"])
        #expect(scratch.exists("CACHEDIR.TAG") && scratch.exists("keep-me/inside"))
        #expect(!scratch.exists("gone"))
    }

    @Test("a missing directory is notFound; a symbolic link as the directory is refused")
    func badRoots() throws {
        let scratch = try TemporaryDirectory()
        #expect {
            try DirectoryClearing.clearContents(of: scratch.url.appending(path: "missing"))
        } throws: { ($0 as? StowageError)?.code == .notFound }

        let target = try TemporaryDirectory("target")
        try target.write("survivor")
        try scratch.symlink("link", to: target.path)
        #expect(throws: StowageError.self) {
            try DirectoryClearing.clearContents(of: scratch.url.appending(path: "link"))
        }
        #expect(target.exists("survivor"))

        let file = try scratch.write("file")
        #expect {
            try DirectoryClearing.clearContents(of: file)
        } throws: { ($0 as? StowageError)?.code == .notADirectory }
    }

    @Test("a tree hundreds of levels deep is removed on a thread with a small stack")
    func deepTreeOnSmallStack() async throws {
        let scratch = try TemporaryDirectory()
        try scratch.write(Array(repeating: "d", count: 500).joined(separator: "/") + "/leaf")
        // Removal that recursed once per level overflowed this stack (and, deeper, a dispatch
        // thread's 8 MiB: a marked directory 5,000 levels deep crashed `stowage purge --marked`).
        let url = scratch.url
        let report = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<ClearReport, any Error>) in
            let thread = Thread { continuation.resume(with: Result { try DirectoryClearing.clearContents(of: url) }) }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        #expect(report.isComplete, "\(report.failures)")
        #expect(report.removedCount == 501)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
    }
}

/// The refusal to clear through a symbolic link, judged on what is opened.
@Suite("DirectoryClearing through links")
struct DirectoryClearingLinkTests {
    @Test(
        "LINK/. and its spellings are refused like LINK; the target keeps its contents",
        arguments: ["link/.", "link/./", "link//.", "link/./.", "link/"]
    )
    func trailingDotThroughLink(suffix: String) throws {
        let scratch = try TemporaryDirectory()
        let target = try TemporaryDirectory("target")
        try target.write("survivor")
        try scratch.symlink("link", to: target.path)
        let error = try #require(throws: StowageError.self) {
            try DirectoryClearing.clearContents(of: URL(filePath: scratch.path + "/" + suffix))
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("symbolic link"), "\(error.message)")
        #expect(target.exists("survivor"))
    }

    @Test("a path ending in '..' is refused: it names a directory through another")
    func trailingDotDot() throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("inner/file")
        let error = try #require(throws: StowageError.self) {
            try DirectoryClearing.clearContents(of: URL(filePath: scratch.path + "/inner/.."))
        }
        #expect(error.message.contains("'..'"))
        #expect(scratch.exists("inner/file"))
    }

    @Test("a link to '/' written LINK/. is refused at the open; '/' itself is refused by device and inode")
    func rootByIdentity() throws {
        // Only the open and the identity check run here: a regression must never reach a removal.
        let scratch = try TemporaryDirectory()
        try scratch.symlink("root", to: "/")
        #expect(throws: StowageError.self) { _ = try ClearingTarget.openDirectory(scratch.path + "/root/.") }
        for spelling in ["/", "/.", "//", "/./."] {
            let descriptor = try ClearingTarget.openDirectory(spelling)
            defer { close(descriptor) }
            #expect(throws: StowageError.self) { try ClearingTarget.refuseProtected(descriptor, path: spelling) }
        }
        let home = FileManager.default.homeDirectoryForCurrentUser.path(percentEncoded: false)
        let descriptor = open(home, O_RDONLY | O_DIRECTORY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(throws: StowageError.self) { try ClearingTarget.refuseProtected(descriptor, path: home) }
    }

    @Test("a directory reached through a link in a parent is cleared (only the final component matters)")
    func linkInParent() throws {
        let scratch = try TemporaryDirectory()
        let target = try TemporaryDirectory("target")
        try target.write("dir/gone")
        try scratch.symlink("link", to: target.path)
        let report = try DirectoryClearing.clearContents(of: URL(filePath: scratch.path + "/link/dir/."))
        #expect(report.removedCount == 1)
        #expect(!target.exists("dir/gone") && target.exists("dir"))
    }
}
