import Foundation
import StowageCore
import StowageTestSupport
import Testing

/// The shared primitives refuse paths a system call would cut short at a NUL byte (and so open
/// another file than the one named), and never follow a link or block on a FIFO at a lock path.
@Suite("File-system primitives: hostile paths")
struct FileSystemPrimitivesTests {
    @Test("OpenDirectory refuses a path with a NUL or control byte instead of opening its prefix")
    func directoryPathWithNUL() throws {
        let scratch = try TemporaryDirectory()
        let inner = scratch.url.appending(path: "a")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        try Data().write(to: inner.appending(path: "secret"))
        for bad in [scratch.path + "/a\u{0}/elsewhere", scratch.path + "/a\n"] {
            let error = #expect(throws: StowageError.self) { _ = try OpenDirectory.names(at: bad) }
            #expect(error?.code == .invalidArgument)
        }
        #expect(try OpenDirectory.names(at: inner.path) == ["secret"])
    }

    @Test("LockFile refuses a path with a NUL byte and creates nothing at its prefix")
    func lockPathWithNUL() throws {
        let scratch = try TemporaryDirectory()
        let error = #expect(throws: StowageError.self) { _ = try LockFile(path: scratch.path + "/lock\u{0}x") }
        #expect(error?.code == .invalidArgument)
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/lock"))
    }

    @Test("LockFile does not follow a symbolic link, and a FIFO at the path neither blocks nor is replaced")
    func lockPathLinkAndFIFO() throws {
        let scratch = try TemporaryDirectory()
        let target = scratch.path + "/target"
        try FileManager.default.createSymbolicLink(atPath: scratch.path + "/link", withDestinationPath: target)
        #expect(throws: StowageError.self) { _ = try LockFile(path: scratch.path + "/link") }
        #expect(!FileManager.default.fileExists(atPath: target))

        #expect(mkfifo(scratch.path + "/fifo", 0o600) == 0)
        let lock = try LockFile(path: scratch.path + "/fifo")
        #expect(try lock.tryLock(.exclusive))
        lock.unlock()
    }
}
