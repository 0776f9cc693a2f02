import Crypto
import Foundation
import StowageCore

/// `store.json`: the store's format, its scrypt parameters when a passphrase opens it, and a
/// sealed check value that tells a wrong key apart from a damaged item.
struct StoreHeader: Codable {
    struct Scrypt: Codable {
        var salt: [UInt8]
        var cost: SecretStore.ScryptCost
    }

    static let currentFormat = 1
    /// What ``check`` seals.
    private static let checkPlaintext = Data("stowage secret store key check".utf8)

    var format: Int
    var scrypt: Scrypt?
    /// `AES.GCM.seal("stowage secret store key check")` with the store's key, or nil until the
    /// first open with a key writes it.
    var check: Data?

    /// Reads `store.json`, or creates it (with a fresh salt for a passphrase).
    static func loadOrCreate(in directory: URL, masterKey: SecretStore.MasterKey) throws -> StoreHeader {
        let url = directory.appending(path: "store.json")
        if let bytes = try SecureFiles.read(url) {
            let header: StoreHeader
            do {
                header = try JSONDecoder().decode(StoreHeader.self, from: Data(bytes))
            } catch {
                throw StowageError(
                    code: .corrupt,
                    message: "\(url.path) is damaged (\(error)); restore it from a backup — without it no item opens",
                    path: url.path
                )
            }
            guard header.format <= currentFormat else {
                throw StowageError(
                    code: .unsupported,
                    message:
                        "the secret store at \(directory.path) has format \(header.format); update Stowage to open it",
                    path: url.path
                )
            }
            // Factors scrypt refuses were never written by a store (they are checked before the
            // first derivation), so in the file they mean damage, not a bad argument.
            if let cost = header.scrypt?.cost, !cost.isRunnable {
                throw StowageError(
                    code: .corrupt,
                    message: "\(url.path) holds scrypt factors no store writes (N = \(cost.rounds), r = "
                        + "\(cost.blockSize), p = \(cost.parallelism)); restore it from a backup — without it no item opens",
                    path: url.path
                )
            }
            return header
        }
        var header = StoreHeader(format: currentFormat, scrypt: nil, check: nil)
        if case .passphrase(_, let cost) = masterKey {
            var salt = [UInt8](repeating: 0, count: 16)
            var generator = SystemRandomNumberGenerator()
            for index in salt.indices { salt[index] = UInt8.random(in: 0...255, using: &generator) }
            header.scrypt = Scrypt(salt: salt, cost: cost)
        }
        return header
    }

    /// Checks `key` against the stored check value, writing one on first use.
    ///
    /// - Throws: `StowageError` `.invalidArgument` when the key is not the store's.
    func verify(key: SymmetricKey, area: String, storePath: String) throws {
        let associated = Data("stowage secret store check \(area)".utf8)
        guard let check else {
            var header = self
            header.check = try AES.GCM.seal(Self.checkPlaintext, using: key, authenticating: associated).combined
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try AtomicFile.write(
                [UInt8](try encoder.encode(header)),
                to: URL(filePath: storePath).appending(path: "store.json"),
                permissions: 0o600
            )
            return
        }
        do {
            _ = try AES.GCM.open(try AES.GCM.SealedBox(combined: check), using: key, authenticating: associated)
        } catch {
            throw StowageError(
                code: .invalidArgument,
                message: """
                    the master key does not open the secret store at \(storePath): it was created with another key, \
                    key file or passphrase (or for another area)
                    """,
                path: storePath
            )
        }
    }
}
