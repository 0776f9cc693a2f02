import Crypto
import Foundation
import StowageCore
import StowageSecrets
import StowageTestSupport
import Testing

/// A container root for one test, and the store's directory in it.
final class Scratch: Sendable {
    private let directory: TemporaryDirectory
    let container: Container
    var url: URL { directory.url }
    var store: URL { url.appending(path: "store") }

    init(_ name: String = #function) throws {
        directory = try TemporaryDirectory(name)
        container = Container(root: directory.url, identifier: "org.stowage.tests")
    }
}

private let cheap = SecretStore.ScryptCost(rounds: 1 << 10, blockSize: 8, parallelism: 1)

private func code(_ error: any Error) -> StowageError.Code? { (error as? StowageError)?.code }

private func mode(_ path: String) throws -> Int {
    try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
}

@Suite("SecretStore")
struct SecretStoreTests {
    @Test("round trip with the default key file, which lives owner-only outside the store")
    func defaultKeyFile() throws {
        let scratch = try Scratch()
        let store = try SecretStore.open(in: scratch.container)
        try store.set("s3cret", service: "api.example.com", account: "ada")
        try store.set(Data([0, 1, 2]), service: "api.example.com", account: "bob")
        let reopened = try SecretStore.open(in: scratch.container)
        #expect(try reopened.string(service: "api.example.com", account: "ada") == "s3cret")
        #expect(try reopened.secret(service: "api.example.com", account: "bob") == Data([0, 1, 2]))
        #expect(try reopened.secret(service: "api.example.com", account: "eve") == nil)
        #expect(try reopened.items().map(\.account) == ["ada", "bob"])
        #expect(try reopened.remove(service: "api.example.com", account: "bob"))
        #expect(try !reopened.remove(service: "api.example.com", account: "bob"))

        let keyFile = scratch.url.appending(path: "Library/Preferences/keys/secrets.key").path
        #expect(try mode(keyFile) == 0o600)
        #expect(try mode((keyFile as NSString).deletingLastPathComponent) == 0o700)
        #expect(try mode(store.directory.path) == 0o700)
        let item = try FileManager.default.contentsOfDirectory(atPath: store.directory.path + "/items")[0]
        #expect(try mode(store.directory.path + "/items/" + item) == 0o600)
        // The plaintext appears nowhere in the store's files.
        let bytes = try Data(contentsOf: store.directory.appending(path: "items/\(item)"))
        #expect(bytes.range(of: Data("s3cret".utf8)) == nil)
    }

    @Test("opening removes the temporaries a writer killed before its rename left; the items stay")
    func leftoverTemporariesRemoved() throws {
        let scratch = try Scratch()
        let key = SecretStore.MasterKey.key(SymmetricKey(size: .bits256))
        let directory = scratch.url.appending(path: "store")
        try SecretStore(directory: directory, masterKey: key).set("value", service: "s", account: "a")
        let leftover = directory.appending(path: "items/0a.secret.tmp-\(try deadProcessID())-42")
        try Data(repeating: 7, count: 64).write(to: leftover)
        let reopened = try SecretStore(directory: directory, masterKey: key)
        #expect(!FileManager.default.fileExists(atPath: leftover.path(percentEncoded: false)))
        #expect(try reopened.secret(service: "s", account: "a") == Data("value".utf8))
    }

    @Test("a wrong key or passphrase is refused as such")
    func wrongKey() throws {
        let scratch = try Scratch()
        let key = SymmetricKey(size: .bits256)
        try SecretStore(directory: scratch.store, masterKey: .key(key)).set("x", service: "s", account: "a")
        #expect {
            try SecretStore(directory: scratch.store, masterKey: .key(SymmetricKey(size: .bits256)))
        } throws: { code($0) == .invalidArgument }

        let other = scratch.url.appending(path: "by-passphrase")
        let store = try SecretStore(directory: other, masterKey: .passphrase("correct horse", cost: cheap))
        try store.set("y", service: "s", account: "a")
        let reopened = try SecretStore(directory: other, masterKey: .passphrase("correct horse", cost: cheap))
        #expect(try reopened.string(service: "s", account: "a") == "y")
        #expect {
            try SecretStore(directory: other, masterKey: .passphrase("battery staple", cost: cheap))
        } throws: { code($0) == .invalidArgument }
    }

    @Test("tampered, truncated and swapped items are corrupt, never garbage")
    func damagedItems() throws {
        let scratch = try Scratch()
        let store = try SecretStore(directory: scratch.store, masterKey: .key(SymmetricKey(size: .bits256)))
        try store.set("alpha-secret", service: "s", account: "a")
        try store.set("bravo-secret", service: "s", account: "b")
        let items = scratch.store.appending(path: "items")
        func file(for account: String) throws -> URL {
            for name in try FileManager.default.contentsOfDirectory(atPath: items.path) {
                let data = try Data(contentsOf: items.appending(path: name))
                if data.range(of: Data("\u{1}\0\0\0\(account)".utf8)) != nil { return items.appending(path: name) }
            }
            throw StowageError(code: .notFound, message: account)
        }
        let fileA = try file(for: "a")
        let fileB = try file(for: "b")
        let original = try Data(contentsOf: fileA)

        var tampered = original
        tampered[tampered.count - 20] ^= 0x40
        try tampered.write(to: fileA)
        #expect { try store.secret(service: "s", account: "a") } throws: { code($0) == .corrupt }

        try original.prefix(original.count - 10).write(to: fileA)
        #expect { try store.secret(service: "s", account: "a") } throws: { code($0) == .corrupt }
        try original.prefix(12).write(to: fileA)
        #expect { try store.secret(service: "s", account: "a") } throws: { code($0) == .corrupt }

        // B's header with A's ciphertext: the associated data no longer matches.
        let dataB = try Data(contentsOf: fileB)
        let sealedA = original.suffix(12 + "alpha-secret".utf8.count + 16)
        let headerB = dataB.prefix(dataB.count - (12 + "bravo-secret".utf8.count + 16))
        try (headerB + sealedA).write(to: fileB)
        #expect { try store.secret(service: "s", account: "b") } throws: { code($0) == .corrupt }
        // A's whole file under B's name is caught too.
        try original.write(to: fileB)
        #expect { try store.secret(service: "s", account: "b") } throws: { code($0) == .corrupt }
        for url in [fileA, fileB] { chmod(url.path, 0o600) }
    }

    @Test("files or directories others can read are refused with the chmod that fixes them")
    func widePermissions() throws {
        let scratch = try Scratch()
        let key = SymmetricKey(size: .bits256)
        let store = try SecretStore(directory: scratch.store, masterKey: .key(key))
        try store.set("x", service: "s", account: "a")
        let item = try FileManager.default.contentsOfDirectory(atPath: scratch.store.path + "/items")[0]
        let itemPath = scratch.store.path + "/items/" + item
        chmod(itemPath, 0o644)
        do {
            _ = try store.secret(service: "s", account: "a")
            Issue.record("a world-readable item was read")
        } catch let error as StowageError {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("chmod 600"))
        }
        chmod(itemPath, 0o600)
        chmod(scratch.store.path, 0o755)
        #expect { try SecretStore(directory: scratch.store, masterKey: .key(key)) } throws: {
            code($0) == .permissionDenied && ($0 as? StowageError)?.message.contains("chmod 700") == true
        }
    }

    @Test("a key file inside the store it protects is refused")
    func keyFileBesideData() throws {
        let scratch = try Scratch()
        #expect {
            try SecretStore(directory: scratch.store, masterKey: .keyFile(scratch.store.appending(path: "keys/k")))
        } throws: { code($0) == .invalidArgument }
    }

    @Test("a shared group's items do not open as another area's, even with the same key")
    func areasAreBound() throws {
        let scratch = try Scratch()
        let key = SymmetricKey(size: .bits256)
        let shared = try SecretStore.openShared(group: "team", directory: scratch.store, masterKey: .key(key))
        try shared.set("t", service: "s", account: "a")
        #expect(
            try SecretStore.openShared(group: "team", directory: scratch.store, masterKey: .key(key))
                .string(service: "s", account: "a") == "t"
        )
        #expect {
            try SecretStore(directory: scratch.store, masterKey: .key(key))
        } throws: { code($0) == .invalidArgument }
    }
}
