import Crypto
import Foundation
import StowageCore
import StowageSecrets
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Scratch {
    var keyFile: String { url.path(percentEncoded: false) + "/Library/Preferences/keys/secrets.key" }
}

/// What stands in a key file's or an item's place is opened
/// without following links or blocking, and refused unless it is a regular file.
@Suite("secret files that are not files")
struct SecretFileTypeTests {
    enum Intruder: String, CaseIterable, Sendable { case fifo, symlink, directory }

    static func place(_ intruder: Intruder, at path: String, outside: String) throws {
        unlink(path)
        switch intruder {
        case .fifo: #expect(mkfifo(path, 0o600) == 0)
        case .symlink: #expect(symlink(outside, path) == 0)
        case .directory: #expect(mkdir(path, 0o700) == 0)
        }
    }

    @Test(
        "a FIFO, a symbolic link or a directory as the key file: a typed error naming it, promptly",
        arguments: Intruder.allCases
    )
    func keyFile(intruder: Intruder) throws {
        let scratch = try Scratch()
        _ = try SecretStore.open(in: scratch.container)  // creates the key file and its directory
        let outside = scratch.url.appending(path: "outside.key")
        try Data(repeating: 7, count: 32).write(to: outside)
        chmod(outside.path(percentEncoded: false), 0o600)
        try Self.place(intruder, at: scratch.keyFile, outside: outside.path(percentEncoded: false))
        // A hang here (a FIFO opened for reading) would stop the run: the regression is a timeout.
        let error = try #require(throws: StowageError.self) { _ = try SecretStore.open(in: scratch.container) }
        #expect(error.message.contains("secrets.key"), "\(error.message)")
    }

    @Test(
        "a FIFO, a symbolic link or a directory in an item's place: a typed error, never a value",
        arguments: Intruder.allCases
    )
    func item(intruder: Intruder) throws {
        let scratch = try Scratch()
        let store = try SecretStore(
            directory: scratch.url.appending(path: "store"),
            masterKey: .key(SymmetricKey(size: .bits256))
        )
        try store.set("value", service: "s", account: "a")
        let items = scratch.url.appending(path: "store/items")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: items.path).first)
        let outside = scratch.url.appending(path: "outside")
        try Data(repeating: 1, count: 100).write(to: outside)
        try Self.place(
            intruder,
            at: items.path(percentEncoded: false) + "/" + name,
            outside: outside.path(percentEncoded: false)
        )
        let error = try #require(throws: StowageError.self) { _ = try store.secret(service: "s", account: "a") }
        #expect(error.message.contains(name), "\(error.message)")
    }
}
