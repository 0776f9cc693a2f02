import Foundation
import StowageCore
import StowageDatabase
import StowageStores
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("UserSpaces wipe under kill -9")
struct WipeCrashTests {
    @Test("a wipe killed mid-way is finished by the next open; the other user is left byte for byte")
    func killedWipe() async throws {
        let fixture = try PopulatedContainer()
        let databases = UserDatabases(container: fixture.container, migrator: noteMigrator())
        let spaces = UserSpaces(container: fixture.container, databases: databases)
        let ada = try spaces.space(for: "ada")
        let bob = try spaces.space(for: "bob")
        try await populate(ada)
        try await populate(bob)
        try databases.close("ada")
        try databases.close("bob")
        let bobBefore = try snapshot([
            bob.cachesDirectory, bob.dataDirectory, bob.temporaryDirectory, try databases.userDirectory("bob"),
        ])
        let journal = fixture.container.url(for: .applicationSupport).appending(path: "Stowage/wipes/ada.json")

        // Kill the worker once it says its deletions begin (the journal written, ada's data
        // moved out of place: a kill between journal and move leaves the data in place for the
        // next open to wipe), from a thread that does nothing else. On a loaded machine the
        // worker may still finish first: then give ada her files back and try again.
        var interrupted = false
        for _ in 0..<5 where !interrupted {
            try await BlockingWork.run {
                for folder in 0..<30 {
                    let directory = ada.dataDirectory.appending(path: "many/\(folder)")
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    for file in 0..<200 { try Data(count: 64).write(to: directory.appending(path: "\(file)")) }
                }
            }
            let process = TestWorker.process("stores", ["wipe", fixture.root.path, "ada"])
            let output = childPipe()
            process.standardOutput = output
            try process.run()
            _ = try await kill(process, once: output.fileHandleForReading, contains: "deleting them")
            interrupted =
                process.terminationReason == .uncaughtSignal && FileManager.default.fileExists(atPath: journal.path)
        }
        #expect(interrupted, "the worker finished every time before it could be killed")
        // Whatever the kill left, ada's data is no longer where a space would serve it from.
        #expect(!FileManager.default.fileExists(atPath: ada.dataDirectory.path))

        let reopened = UserSpaces(container: fixture.container, databases: databases)
        _ = try reopened.space(for: "bob")
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        #expect(try reopened.users() == ["bob"])
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: ada.dataDirectory.deletingLastPathComponent().path
        )
        #expect(leftovers == ["bob"])
        #expect(
            try snapshot([
                bob.cachesDirectory, bob.dataDirectory, bob.temporaryDirectory, try databases.userDirectory("bob"),
            ]) == bobBefore
        )
    }
}
