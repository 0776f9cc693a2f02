import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `OpenDirectory.openBeneath` opens names below its directory and nothing else: every path
/// refused here would open a file if handed to the kernel as it is.
@Suite("OpenDirectory: opening beneath a directory")
struct OpenDirectoryConfinedTests {
    /// `root/a/b` and `root/b` (files), `root/a/c/d` (a file below a subdirectory).
    private func fixture() throws -> (TemporaryDirectory, OpenDirectory) {
        let scratch = try TemporaryDirectory()
        try scratch.makeDirectory("root/a/c")
        for name in ["root/a/b", "root/b", "root/a/c/d"] {
            try Data(name.utf8).write(to: URL(filePath: scratch.path + "/" + name))
        }
        return (scratch, try OpenDirectory.open(path: scratch.path + "/root"))
    }

    private func contents(_ descriptor: Int32) -> String {
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(descriptor, &buffer, buffer.count)
        return String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self)
    }

    @Test("names joined by single slashes open", arguments: ["b", "a/b", "a/c/d"])
    func opensNames(path: String) throws {
        let (scratch, root) = try fixture()
        let descriptor = root.openBeneath(path, flags: O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0, "errno \(errno)")
        #expect(contents(descriptor) == "root/" + path)
        withExtendedLifetime(scratch) {}
    }

    @Test(
        "a path that is not names joined by single slashes is refused with EINVAL",
        arguments: [
            "", "..", "../root/b", "a/../b", "a/..", "/abs", "a//b", "a/b/", "/", "//b", ".", "./b", "a/./b", "a/.",
            "a/b\u{0}", "b\u{0}/../../x", "\u{0}",
        ]
    )
    func refusesOtherPaths(path: String) throws {
        let (scratch, root) = try fixture()
        let refused = path == "/abs" ? scratch.path + "/root/b" : path
        errno = 0
        let descriptor = root.openBeneath(refused, flags: O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 { close(descriptor) }
        #expect(descriptor == -1, "\(refused.debugDescription) opened")
        #expect(errno == EINVAL, "\(refused.debugDescription): errno \(errno)")
    }

    @Test("a symbolic link anywhere on the way is not followed")
    func linksRefused() throws {
        let (scratch, root) = try fixture()
        #expect(symlink(scratch.path + "/root/a", scratch.path + "/root/link") == 0)
        #expect(symlink(scratch.path + "/root/b", scratch.path + "/root/a/c/file-link") == 0)
        for path in ["link/b", "a/c/file-link"] {
            let descriptor = root.openBeneath(path, flags: O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 { close(descriptor) }
            #expect(descriptor == -1, "\(path) opened through a link")
            #expect(errno == ELOOP || errno == ENOTDIR || errno == EXDEV, "\(path): errno \(errno)")
        }
    }
}
