import Foundation
import StowageCore
import StowageTestSupport
import Testing

@Suite("Marks")
struct MarksTests {
    @Test("backup exclusion round-trips and is the freedesktop attribute")
    func backupRoundTrip() throws {
        let scratch = try TemporaryDirectory()
        let file = try scratch.write("file")
        let path = file.path(percentEncoded: false)
        #expect(try !Marks.isExcludedFromBackup(file))
        try Marks.setExcludedFromBackup(true, at: file)
        #expect(try Marks.isExcludedFromBackup(file))
        #if os(Linux)  // Apple platforms keep it as Foundation's isExcludedFromBackup instead
        #expect(try pythonGetXattr(path, "user.xdg.robots.backup") == "false")
        #endif
        try Marks.setExcludedFromBackup(false, at: file)
        #expect(try !Marks.isExcludedFromBackup(file))
        #if os(Linux)
        #expect(try pythonGetXattr(path, "user.xdg.robots.backup") == nil)
        #else
        _ = path
        #endif
        // Clearing a mark that is not there is not an error.
        try Marks.setExcludedFromBackup(false, at: file)
    }

    @Test("purgeable round-trips on a directory")
    func purgeableRoundTrip() throws {
        let scratch = try TemporaryDirectory()
        #expect(try !Marks.isPurgeable(scratch.url))
        try Marks.setPurgeable(true, at: scratch.url)
        #expect(try Marks.isPurgeable(scratch.url))
        #expect(try pythonGetXattr(scratch.path, "user.stowage.purgeable") == "true")
        try Marks.setPurgeable(false, at: scratch.url)
        #expect(try !Marks.isPurgeable(scratch.url))
    }

    @Test("marks on a symbolic link mark the link, not its target")
    func symlinkNotFollowed() throws {
        let scratch = try TemporaryDirectory()
        let target = try scratch.write("target")
        try scratch.symlink("link", to: target.path(percentEncoded: false))
        let link = scratch.url.appending(path: "link")
        // Linux refuses user xattrs on symlinks (EPERM); either way the target stays unmarked.
        do {
            try Marks.setPurgeable(true, at: link)
        } catch let error as StowageError {
            #expect(error.code == .permissionDenied || error.code == .unsupported)
        }
        #expect(try !Marks.isPurgeable(target))
    }

    #if os(Linux)
    // procfs: a Linux file system with no user extended attributes.
    @Test("a file system without user xattrs is reported as unsupported, never pretended")
    func unsupportedFileSystem() throws {
        let proc = URL(filePath: "/proc/self/comm")
        #expect {
            try Marks.setExcludedFromBackup(true, at: proc)
        } throws: { error in
            (error as? StowageError)?.code == .unsupported
        }
    }
    #endif

    @Test("a missing item is notFound")
    func missingItem() throws {
        let scratch = try TemporaryDirectory()
        #expect {
            try Marks.isPurgeable(scratch.url.appending(path: "missing"))
        } throws: { error in
            (error as? StowageError)?.code == .notFound
        }
    }

    @Test("CACHEDIR.TAG carries the exact signature and is recognised")
    func cacheDirectoryTag() throws {
        let scratch = try TemporaryDirectory()
        #expect(!CacheDirectoryTag.isPresent(in: scratch.url))
        try CacheDirectoryTag.write(in: scratch.url)
        let contents = try String(contentsOf: scratch.url.appending(path: "CACHEDIR.TAG"), encoding: .utf8)
        #expect(contents.hasPrefix("Signature: 8a477f597d28d172789f06886806bc55"))
        #expect(CacheDirectoryTag.isPresent(in: scratch.url))
        // A file with the wrong signature is not a tag.
        try Data("Signature: nope".utf8).write(to: scratch.url.appending(path: "CACHEDIR.TAG"))
        #expect(!CacheDirectoryTag.isPresent(in: scratch.url))
    }
}
