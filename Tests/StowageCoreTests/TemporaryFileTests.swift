import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `TemporaryFile`: the one write-flush-rename sequence every store uses. A commit replaces the
/// destination whole; every failure leaves the destination as it was and no temporary behind.
@Suite("TemporaryFile: write aside, rename into place")
struct TemporaryFileTests {
    /// The names in `directory`, sorted.
    static func names(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    static func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(filePath: path)), as: UTF8.self)
    }

    @Test("a commit replaces the destination with the new bytes and leaves no temporary", arguments: [false, true])
    func success(synchronized: Bool) throws {
        let scratch = try TemporaryDirectory()
        let destination = scratch.path + "/file"
        try Data("old".utf8).write(to: URL(filePath: destination))
        let file = try TemporaryFile(beside: destination, permissions: 0o640)
        #expect(file.path.hasPrefix(destination + ".tmp-"))
        try file.write(Array("new ".utf8))
        try file.write(Array("bytes".utf8))
        #expect(try Self.contents(destination) == "old", "nothing is visible before the commit")
        try file.commit(to: destination, durability: synchronized ? .synchronized : .none)
        #expect(try Self.contents(destination) == "new bytes")
        #expect(try Self.names(scratch) == ["file"])
        let attributes = try FileManager.default.attributesOfItem(atPath: destination)
        let permissions = try #require(attributes[.posixPermissions] as? Int)
        #expect(permissions & 0o007 == 0, "the mode asked for (less the umask), never more")
        #expect(permissions & 0o600 == 0o600)
    }

    @Test("a write that fails half-way leaves the old destination and no temporary")
    func failedWrite() throws {
        let scratch = try TemporaryDirectory()
        let destination = scratch.path + "/file"
        try Data("old".utf8).write(to: URL(filePath: destination))
        struct Interrupted: Error {}
        // A writer that produces half its bytes and then fails, as an encoder or a source might.
        func replace() throws {
            let file = try TemporaryFile(beside: destination)
            try file.write(Array("half of the new".utf8))
            #expect(try Self.names(scratch).count == 2, "the temporary exists while writing")
            throw Interrupted()
        }
        #expect(throws: Interrupted.self) { try replace() }
        #expect(try Self.contents(destination) == "old")
        #expect(try Self.names(scratch) == ["file"])
    }

    @Test("a write the system refuses throws a typed error and leaves no temporary")
    func refusedWrite() throws {
        let scratch = try TemporaryDirectory()
        let destination = scratch.path + "/file"
        try Data("old".utf8).write(to: URL(filePath: destination))
        let error = #expect(throws: StowageError.self) {
            let file = try TemporaryFile(beside: destination)
            // A read-only descriptor in the file's place: the next write(2) fails with EBADF.
            let readOnly = open(destination, O_RDONLY)
            defer { close(readOnly) }
            #expect(dup2(readOnly, file.descriptor) == file.descriptor)
            try file.write(Array("new".utf8), action: "write the test file")
            try file.commit(to: destination, durability: .synchronized)
        }
        #expect(error?.message.contains("write the test file") == true, "\(String(describing: error))")
        #expect(try Self.contents(destination) == "old")
        #expect(try Self.names(scratch) == ["file"])
    }

    @Test("a symbolic link at the destination is refused, neither followed nor replaced")
    func symlinkDestination() throws {
        let scratch = try TemporaryDirectory()
        let outside = scratch.path + "/outside"
        try Data("precious".utf8).write(to: URL(filePath: outside))
        let destination = scratch.path + "/link"
        try scratch.symlink("link", to: outside)
        let error = #expect(throws: StowageError.self) {
            let file = try TemporaryFile(beside: destination)
            try file.write(Array("new".utf8))
            try file.commit(to: destination, durability: .none)
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("symbolic link") == true, "\(String(describing: error))")
        #expect(error?.path == destination)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: destination) == outside)
        #expect(try Self.contents(outside) == "precious")
        #expect(try Self.names(scratch) == ["link", "outside"])
    }

    @Test("a directory at the destination is refused, also when links may be replaced", arguments: [false, true])
    func directoryDestination(anyFile: Bool) throws {
        let scratch = try TemporaryDirectory()
        try scratch.write("directory/inside")
        let destination = scratch.path + "/directory"
        let error = #expect(throws: StowageError.self) {
            let file = try TemporaryFile(beside: destination)
            try file.write(Array("new".utf8))
            try file.commit(to: destination, durability: .none, replacing: anyFile ? .anyFile : .regularFile)
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("is a directory") == true, "\(String(describing: error))")
        #expect(try Self.names(scratch) == ["directory"])
        #expect(scratch.exists("directory/inside"))
    }

    @Test("a FIFO or a socket at the destination is refused with .regularFile, and stays")
    func specialFileDestination() throws {
        let scratch = try TemporaryDirectory()
        let fifo = scratch.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let socketPath = scratch.path + "/socket"
        #if canImport(Darwin)
        let socketDescriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #elseif canImport(Glibc)
        let socketDescriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        defer { close(socketDescriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        for (destination, what) in [(fifo, "FIFO"), (socketPath, "socket")] {
            let error = #expect(throws: StowageError.self, "\(what)") {
                let file = try TemporaryFile(beside: destination)
                try file.write(Array("new".utf8))
                try file.commit(to: destination, durability: .none)
            }
            #expect(error?.code == .invalidArgument, "\(what): \(String(describing: error))")
            #expect(error?.message.contains("not a regular file") == true, "\(String(describing: error))")
            let type = try FileManager.default.attributesOfItem(atPath: destination)[.type] as? FileAttributeType
            #expect(type != .typeRegular, "the \(what) was replaced")
        }
        #expect(try Self.names(scratch) == ["fifo", "socket"])
    }

    @Test("with .anyFile a link in the destination's place is replaced by the file, the target untouched")
    func anyFileReplacesLink() throws {
        let scratch = try TemporaryDirectory()
        let outside = scratch.path + "/outside"
        try Data("precious".utf8).write(to: URL(filePath: outside))
        try scratch.symlink("link", to: outside)
        let file = try TemporaryFile(beside: scratch.path + "/link")
        try file.write(Array("new".utf8))
        try file.commit(to: scratch.path + "/link", durability: .none, replacing: .anyFile)
        let type = try FileManager.default.attributesOfItem(atPath: scratch.path + "/link")[.type]
        #expect(type as? FileAttributeType == .typeRegular)
        #expect(try Self.contents(scratch.path + "/link") == "new")
        #expect(try Self.contents(outside) == "precious")
    }

    @Test("a missing parent is created on request; otherwise the rename's error, and no temporary")
    func missingParent() throws {
        let scratch = try TemporaryDirectory()
        try scratch.makeDirectory("tmp")
        let destination = scratch.path + "/data/ab/file"
        try scratch.makeDirectory("data")
        let error = #expect(throws: StowageError.self) {
            try TemporaryFile(in: scratch.path + "/tmp").commit(to: destination, durability: .none)
        }
        #expect(error?.code == .notFound)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/tmp").isEmpty)

        let file = try TemporaryFile(in: scratch.path + "/tmp")
        try file.write(Array("value".utf8))
        try file.commit(to: destination, durability: .none, createsParentDirectory: true)
        #expect(try Self.contents(destination) == "value")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/tmp").isEmpty)
    }

    @Test("commitIfAbsent installs only where nothing is, and removes its temporary either way")
    func commitIfAbsent() throws {
        let scratch = try TemporaryDirectory()
        let destination = scratch.path + "/file"
        let first = try TemporaryFile(beside: destination)
        try first.write(Array("first".utf8))
        #expect(try first.commitIfAbsent(to: destination))
        let second = try TemporaryFile(beside: destination)
        try second.write(Array("second".utf8))
        #expect(try !second.commitIfAbsent(to: destination))
        #expect(try Self.contents(destination) == "first")
        #expect(try Self.names(scratch) == ["file"])
    }

    @Test("commitKeepingOpen hands over a descriptor of the installed file")
    func commitKeepingOpen() throws {
        let scratch = try TemporaryDirectory()
        let destination = scratch.path + "/file"
        let file = try TemporaryFile(beside: destination, readable: true)
        try file.write(Array("abc".utf8))
        let descriptor = try file.commitKeepingOpen(to: destination, durability: .none)
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 3)
        #expect(pread(descriptor, &buffer, 3, 0) == 3)
        #expect(buffer == Array("abc".utf8))
        #expect(try Self.names(scratch) == ["file"])
    }

    @Test(
        ".synchronized flushes the new name's directory (and the one above a directory it made); .none flushes none"
    )
    func synchronizedCommitFlushesDirectories() throws {
        let scratch = try TemporaryDirectory()
        try scratch.makeDirectory("plain")
        try scratch.makeDirectory("flushed")
        try scratch.makeDirectory("made")
        try scratch.makeDirectory("linked")
        func flushed(_ name: String) -> Bool {
            TemporaryFile.synchronizedDirectories.withLock { $0.contains(scratch.path + "/" + name) }
        }
        try TemporaryFile(beside: scratch.path + "/plain/file").commit(
            to: scratch.path + "/plain/file",
            durability: .none
        )
        #expect(!flushed("plain"))
        try TemporaryFile(beside: scratch.path + "/flushed/file").commit(
            to: scratch.path + "/flushed/file",
            durability: .synchronized
        )
        #expect(flushed("flushed"))
        try TemporaryFile(in: scratch.path + "/made").commit(
            to: scratch.path + "/made/ab/file",
            durability: .synchronized,
            createsParentDirectory: true
        )
        #expect(flushed("made/ab"))
        #expect(flushed("made"), "the directory the commit created is a new name in its parent")
        let descriptor = try TemporaryFile(beside: scratch.path + "/made/kept").commitKeepingOpen(
            to: scratch.path + "/made/kept",
            durability: .synchronized
        )
        close(descriptor)
        #expect(
            try TemporaryFile(beside: scratch.path + "/linked/file").commitIfAbsent(
                to: scratch.path + "/linked/file",
                durability: .synchronized
            )
        )
        #expect(flushed("linked"))
    }

    @Test("leftover temporaries of processes that are gone are removed; a running one's, and other names, stay")
    func leftoversOfDeadProcesses() throws {
        let scratch = try TemporaryDirectory()
        let dead = try deadProcessID()
        let outside = scratch.path + "-outside"
        try Data("precious".utf8).write(to: URL(filePath: outside))
        defer { unlink(outside) }
        let gone = ["items.json.tmp-\(dead)-123", "k.secret.tmp-\(dead)-4294967295"]
        let kept = [
            "mine.tmp-\(getpid())-1", "init.tmp-1-1", "a.tmp-x-1", "a.tmp-12", "a.tmp-\(dead)-", "b.txt",
            "a.tmp-\(dead)-1-2", "a.tmp-\(dead)-99999999999",
        ]
        for name in gone + kept { try Data().write(to: URL(filePath: scratch.path + "/" + name)) }
        #expect(symlink(outside, scratch.path + "/link.tmp-\(dead)-7") == 0)
        #expect(TemporaryFile.removeLeftovers(in: scratch.path) == 3)
        #expect(try Self.names(scratch) == kept.sorted())
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "precious", "a link goes, not its target")
    }

    @Test("leftovers beside one file: only that file's temporaries of processes that are gone, long names included")
    func leftoversBesideOneFile() throws {
        let scratch = try TemporaryDirectory()
        let dead = try deadProcessID()
        // A name as long as a name may be: its temporaries carry a shortened prefix.
        let long = String(repeating: "n", count: 255)
        let longPrefix = try #require(
            TemporaryFile.temporaryPrefix(beside: scratch.path + "/" + long).split(separator: "/").last
        )
        let gone = ["suite.prefs.tmp-\(dead)-1", "\(longPrefix)\(dead)-2"]
        let kept = [
            "suite.prefs.tmp-\(getpid())-3", "other.prefs.tmp-\(dead)-4", "suite.prefs", "xsuite.prefs.tmp-\(dead)-5",
        ]
        for name in gone + kept { try Data().write(to: URL(filePath: scratch.path + "/" + name)) }
        #expect(TemporaryFile.removeLeftovers(beside: scratch.path + "/suite.prefs") == 1)
        #expect(TemporaryFile.removeLeftovers(beside: scratch.path + "/" + long) == 1)
        #expect(try Self.names(scratch) == kept.sorted())
    }

    @Test("an unnamed file leaves no name behind")
    func unnamed() throws {
        let scratch = try TemporaryDirectory()
        let descriptor = try TemporaryFile.unnamed(in: scratch.path)
        defer { close(descriptor) }
        #expect(write(descriptor, "x", 1) == 1)
        #expect(try Self.names(scratch).isEmpty)
    }

    @Test("a directory the process may not write: a typed error, the old destination intact, nothing left")
    func readOnlyDirectory() throws {
        let scratch = try TemporaryDirectory()
        try scratch.makeDirectory("locked")
        let destination = scratch.path + "/locked/file"
        try Data("old".utf8).write(to: URL(filePath: destination))
        #expect(chmod(scratch.path + "/locked", 0o555) == 0)
        defer { chmod(scratch.path + "/locked", 0o755) }
        let error = #expect(throws: StowageError.self) {
            try withoutPrivileges {
                let file = try TemporaryFile(beside: destination)
                try file.write(Array("new".utf8))
                try file.commit(to: destination, durability: .synchronized)
            }
        }
        #expect(error?.code == .permissionDenied, "\(String(describing: error))")
        #expect(try Self.contents(destination) == "old")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/locked") == ["file"])
    }

    @Test("a destination with a NUL byte is refused naming it, and nothing is created where the C string ends")
    func destinationWithNUL() throws {
        let scratch = try TemporaryDirectory()
        let destination = scratch.path + "/file\0/../../elsewhere"
        let error = #expect(throws: StowageError.self) {
            let file = try TemporaryFile(beside: destination)
            try file.write(Array("new".utf8))
            try file.commit(to: destination, durability: .none)
        }
        #expect(error?.code == .invalidArgument, "\(String(describing: error))")
        #expect(error?.message.contains("NUL") == true, "\(String(describing: error))")
        #expect(try Self.names(scratch).isEmpty, "nothing written at the path the kernel would have seen")

        let inDirectory = #expect(throws: StowageError.self) {
            let file = try TemporaryFile(in: scratch.path + "/x\0y")
            _ = file.descriptor
        }
        #expect(inDirectory?.code == .invalidArgument)
        let committed = #expect(throws: StowageError.self) {
            try TemporaryFile(beside: scratch.path + "/file").commit(to: scratch.path + "/file\0x", durability: .none)
        }
        #expect(committed?.code == .invalidArgument, "\(String(describing: committed))")
        #expect(try Self.names(scratch).isEmpty)
    }

    @Test("a destination whose name is as long as a name may be (255 bytes) is written", arguments: [255, 250, 200])
    func longestName(length: Int) throws {
        let scratch = try TemporaryDirectory()
        // Two-byte characters too: a shortened temporary name must stay valid UTF-8.
        let name = String(repeating: "é", count: length / 2) + String(repeating: "a", count: length % 2)
        #expect(name.utf8.count == length)
        let destination = scratch.path + "/" + name
        let file = try TemporaryFile(beside: destination)
        try file.write(Array("value".utf8))
        try file.commit(to: destination, durability: .synchronized)
        #expect(try Self.contents(destination) == "value")
        #expect(try Self.names(scratch) == [name])
    }

    @Test(
        "a write past a file size limit (EFBIG: ulimit -f, a FAT volume's 4 GiB) says what limit it hit and what to do"
    )
    func fileSizeLimit() throws {
        let error = StowageError.syscall(Errno(rawValue: EFBIG), "write", path: "/x/file")
        #expect(error.message.contains("ulimit -f"), "\(error)")
    }

    /// Runs `body` with file access checked as an unprivileged user: root writes into any
    /// directory, so on Linux this thread's file-system uid becomes `nobody` meanwhile
    /// (`setfsuid(2)` is per thread and drops `CAP_DAC_OVERRIDE` with it).
    func withoutPrivileges<T>(_ body: () throws -> T) throws -> T {
        #if os(Linux)
        guard geteuid() == 0 else { return try body() }
        // Glibc's module map leaves out <sys/fsuid.h>; the function is in libc all the same.
        let symbol = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setfsuid"))
        let setfsuid = unsafeBitCast(symbol, to: (@convention(c) (uid_t) -> Int32).self)
        _ = setfsuid(65534)
        defer { _ = setfsuid(0) }
        #expect(setfsuid(UInt32.max) == 65534, "file access is checked as nobody")
        return try body()
        #else
        return try body()
        #endif
    }
}
