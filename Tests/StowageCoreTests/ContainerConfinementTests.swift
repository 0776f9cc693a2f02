import Foundation
import StowageTestSupport
import Testing

@testable import StowageCore

#if canImport(Glibc)
import Glibc
#endif

/// A location directory (`Library/Caches`, or `Library` above it) replaced by
/// a symbolic link. Stowage follows such a link only when it stays inside the container's root.
@Suite("Container confinement")
struct ContainerConfinementTests {
    @Test("Library → outside: clearing caches is refused with pathEscapesRoot and the outside is untouched")
    func libraryLinkOutside() async throws {
        let root = try TemporaryDirectory()
        let outside = try TemporaryDirectory("outside")
        try outside.write("Caches/precious")
        try root.symlink("Library", to: outside.path)
        let container = Container(root: root.url)
        let error = try await #require(throws: StowageError.self) { _ = try await container.clear(.caches) }
        #expect(error.code == .pathEscapesRoot)
        #expect(error.message.contains("Library"), "\(error.message)")
        #expect(outside.exists("Caches/precious"))
        #expect(!outside.exists("Caches/CACHEDIR.TAG"), "no mark may land outside either")
    }

    @Test("Library/Caches → outside: creating the directory and clearing it are refused")
    func cachesLinkOutside() async throws {
        let root = try TemporaryDirectory()
        let outside = try TemporaryDirectory("outside")
        try outside.write("precious")
        try root.makeDirectory("Library")
        try root.symlink("Library/Caches", to: outside.path)
        let container = Container(root: root.url)
        #expect(throws: StowageError.self) { _ = try container.directory(for: .caches) }
        await #expect(throws: StowageError.self) { _ = try await container.clear(.caches) }
        #expect(outside.exists("precious"))
    }

    @Test("a link that stays inside the root is followed: Library → RealLibrary")
    func linkInsideRoot() async throws {
        let root = try TemporaryDirectory()
        try root.write("RealLibrary/Caches/gone")
        try root.symlink("Library", to: "RealLibrary")
        let container = Container(root: root.url)
        let report = try await container.clear(.caches)
        #expect(report.removedCount == 1)
        #expect(!root.exists("RealLibrary/Caches/gone"))
        #expect(root.exists("RealLibrary/Caches/CACHEDIR.TAG"))
    }

    @Test("a link with an absolute target back inside the root is followed; a relative one out of it is not")
    func absoluteAndRelativeTargets() throws {
        let root = try TemporaryDirectory()
        try root.makeDirectory("Inside/Caches")
        try root.makeDirectory("Library")
        try root.symlink("Library/Caches", to: root.path + "/Inside/Caches")
        let container = Container(root: root.url)
        let descriptor = try #require(try container.openLocationDirectory(.caches, creating: false))
        close(descriptor)

        let other = try TemporaryDirectory()
        try other.makeDirectory("Library")
        try other.symlink("Documents", to: "../")
        #expect {
            _ = try Container(root: other.url).openLocationDirectory(.documents, creating: false)
        } throws: { ($0 as? StowageError)?.code == .pathEscapesRoot }
    }

    @Test("a missing location is nil without creating; created 0700 with creating")
    func missingAndCreated() throws {
        let root = try TemporaryDirectory()
        let container = Container(root: root.url)
        #expect(try container.openLocationDirectory(.applicationSupport, creating: false) == nil)
        let descriptor = try #require(try container.openLocationDirectory(.applicationSupport, creating: true))
        close(descriptor)
        var status = stat()
        #expect(stat(root.path + "/Library/Application Support", &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)
    }
}
