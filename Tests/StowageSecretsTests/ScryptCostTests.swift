import Crypto
import Foundation
import StowageCore
import Testing

@testable import StowageSecrets

@Suite("scrypt cost")
struct ScryptCostTests {
    @Test("the derivation is scrypt as RFC 7914 §12 defines it (test vector 2, first 32 bytes)")
    func rfc7914Vector() throws {
        let cost = SecretStore.ScryptCost(rounds: 1024, blockSize: 8, parallelism: 16)
        let key = try cost.deriveKey(from: "password", salt: Array("NaCl".utf8))
        let hex = key.withUnsafeBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162")
    }

    @Test(
        "factors scrypt cannot run are refused with a message, and nothing is written",
        arguments: [(1000, 8, 1), (1, 8, 1), (1024, 0, 1), (1024, 8, 0), (1 << 24, 8, 1)]
    )
    func badFactors(rounds: Int, blockSize: Int, parallelism: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-scrypt-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cost = SecretStore.ScryptCost(rounds: rounds, blockSize: blockSize, parallelism: parallelism)
        let error = #expect(throws: StowageError.self) {
            try SecretStore(directory: directory, masterKey: .passphrase("pw", cost: cost))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("power of two") == true)
        #expect(!FileManager.default.fileExists(atPath: directory.appending(path: "store.json").path))
    }

    @Test("the default is OWASP's minimum for scrypt: N = 2^17, r = 8, p = 1")
    func defaultCost() {
        #expect(SecretStore.ScryptCost.default == SecretStore.ScryptCost(rounds: 1 << 17, blockSize: 8, parallelism: 1))
    }

    @Test("factors no store writes, found in store.json, are corrupt, not a bad argument")
    func damagedStoredFactors() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-scrypt-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cost = SecretStore.ScryptCost(rounds: 1024, blockSize: 8, parallelism: 1)
        try SecretStore(directory: directory, masterKey: .passphrase("pw", cost: cost))
            .set("v", service: "s", account: "a")
        let headerURL = directory.appending(path: "store.json")
        var header = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: headerURL)) as? [String: Any])
        var scrypt = try #require(header["scrypt"] as? [String: Any])
        var stored = try #require(scrypt["cost"] as? [String: Any])
        #expect(stored["rounds"] as? Int == 1024)
        stored["rounds"] = 1000
        scrypt["cost"] = stored
        header["scrypt"] = scrypt
        // Rewritten in place, so the file keeps the 0600 mode the store checks.
        let handle = try FileHandle(forWritingTo: headerURL)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: try JSONSerialization.data(withJSONObject: header))
        try handle.close()

        let error = try #require(throws: StowageError.self) {
            try SecretStore(directory: directory, masterKey: .passphrase("pw", cost: cost))
        }
        #expect(error.code == .corrupt)
        #expect(error.path == headerURL.path)
        #expect(error.message.contains("N = 1000"))
    }
}
