import Crypto
import CryptoExtras
import Foundation
import StowageCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small secrets (tokens, passwords, keys) by service and account, encrypted at rest: the role
/// of the Keychain.
///
/// ```swift
/// let secrets = try SecretStore.open(in: container)           // key file in the preferences tree
/// try secrets.set(Data(token.utf8), service: "api.example.com", account: "ada")
/// let token = try secrets.secret(service: "api.example.com", account: "ada")
/// ```
///
/// Each item is one file, `items/SHA256(service, account).secret`, holding the service and
/// account and an AES-256-GCM sealed box (random 96-bit nonce, 128-bit tag). The associated data
/// binds the sealed box to the store's area, the service and the account, so a ciphertext moved
/// to another item's file fails authentication instead of decrypting. `store.json` records the
/// format, the scrypt salt and cost for a passphrase, and a sealed check value that tells a
/// wrong key apart from a damaged item. Files are `0600`, directories `0700`, and opening a
/// store whose directory or files are readable by others is refused. Writes are atomic
/// (temporary file, `fsync`, rename).
///
/// Errors: a wrong key is `.invalidArgument`; a tampered, truncated or swapped item is
/// `.corrupt`; wide permissions are `.permissionDenied` with the `chmod` that fixes them.
public final class SecretStore: Sendable {
    /// The store's directory.
    public let directory: URL
    /// What the associated data names: `private` or `shared:GROUP`.
    let area: String
    private let key: SymmetricKey

    private static let itemMagic = Array("STWSEC1\n".utf8)

    /// Opens (creating if needed) a store in `directory`.
    ///
    /// - Parameters:
    ///   - directory: The store's directory, created owner-only when missing.
    ///   - masterKey: The key that seals the store's data key.
    ///   - area: The name bound into every item (`private`, or `shared:GROUP`): items
    ///     do not decrypt in a store of another area.
    /// - Throws: `StowageError` (see the type's documentation).
    public init(directory: URL, masterKey: MasterKey, area: String = "private") throws {
        _ = try directory.checkedFileSystemPath(subject: "the secret store directory")
        self.directory = directory
        self.area = area
        try SecureFiles.createDirectory(directory)
        try SecureFiles.createDirectory(directory.appending(path: "items", directoryHint: .isDirectory))
        // An item or header write killed between its temporary and the rename left the temporary.
        for part in [directory, directory.appending(path: "items", directoryHint: .isDirectory)] {
            TemporaryFile.removeLeftovers(in: part.path(percentEncoded: false))
        }
        let header = try StoreHeader.loadOrCreate(in: directory, masterKey: masterKey)
        key = try Self.resolve(masterKey, header: header, storeDirectory: directory)
        try header.verify(key: key, area: area, storePath: directory.path)
    }

    /// Opens (creating if needed) a store in `directory` off Swift's cooperative threads:
    /// deriving a passphrase's key (scrypt) takes a noticeable fraction of a second.
    ///
    /// - Throws: `StowageError`, as `init(directory:masterKey:area:)`.
    public static func open(directory: URL, masterKey: MasterKey, area: String = "private") async throws -> SecretStore
    {
        try await BlockingWork.run { try SecretStore(directory: directory, masterKey: masterKey, area: area) }
    }

    /// The app's private store, opened off Swift's cooperative threads: the asynchronous
    /// overload of `open(in:masterKey:)`.
    public static func open(in container: Container, masterKey: MasterKey? = nil) async throws -> SecretStore {
        try await BlockingWork.run { try open(in: container, masterKey: masterKey) }
    }

    /// A store several apps share, opened off Swift's cooperative threads: the asynchronous
    /// overload of `openShared(group:directory:masterKey:)`.
    public static func openShared(group: String, directory: URL, masterKey: MasterKey) async throws -> SecretStore {
        try await BlockingWork.run { try openShared(group: group, directory: directory, masterKey: masterKey) }
    }

    /// The app's private store: `application support/secrets`, with its key file in the
    /// preferences location's `keys/` directory (another XDG tree on Linux), unless `masterKey`
    /// says otherwise.
    public static func open(in container: Container, masterKey: MasterKey? = nil) throws -> SecretStore {
        let directory = container.url(for: .applicationSupport).appending(path: "secrets", directoryHint: .isDirectory)
        return try SecretStore(directory: directory, masterKey: masterKey ?? .keyFile(defaultKeyFile(in: container)))
    }

    /// The key file a container's stores use unless told otherwise: `keys/secrets.key` in the
    /// preferences location (another XDG tree on Linux than the stores in application support).
    public static func defaultKeyFile(in container: Container) -> URL {
        container.url(for: .preferences).appending(path: "keys/secrets.key")
    }

    /// A store several apps of one user share: `directory` is agreed between them (e.g.
    /// `$XDG_DATA_HOME/GROUP/secrets`), and so is the master key.
    public static func openShared(group: String, directory: URL, masterKey: MasterKey) throws -> SecretStore {
        try SecretStore(directory: directory, masterKey: masterKey, area: "shared:\(group)")
    }

    // MARK: - Items

    /// Stores `secret` for `service` and `account`, replacing any previous one, atomically.
    public func set(_ secret: Data, service: String, account: String) throws {
        let sealed = try AES.GCM.seal(secret, using: key, authenticating: associatedData(service, account))
        var bytes = Self.itemMagic
        bytes.appendLengthPrefixed(service)
        bytes.appendLengthPrefixed(account)
        bytes.append(contentsOf: sealed.combined!)
        try AtomicFile.write(bytes, to: itemURL(service, account), permissions: 0o600)
    }

    /// Stores a string secret as UTF-8.
    public func set(_ secret: String, service: String, account: String) throws {
        try set(Data(secret.utf8), service: service, account: account)
    }

    /// The secret stored for `service` and `account`; `nil` when there is none.
    ///
    /// - Throws: `StowageError` `.corrupt` when the item was tampered with, truncated or
    ///   moved from another item; `.permissionDenied` when its file is readable by others.
    public func secret(service: String, account: String) throws -> Data? {
        let url = itemURL(service, account)
        guard let bytes = try SecureFiles.read(url) else { return nil }
        let item = try Self.parse(bytes, path: url.path)
        guard item.service == service, item.account == account else {
            throw StowageError(
                code: .corrupt,
                message: "the secret file \(url.path) holds another item; remove it and store the secret again",
                path: url.path
            )
        }
        do {
            let box = try AES.GCM.SealedBox(combined: item.sealed)
            return try AES.GCM.open(box, using: key, authenticating: associatedData(service, account))
        } catch {
            throw StowageError(
                code: .corrupt,
                message: """
                    the secret for \(service)/\(account) fails authentication: the file was altered, truncated or \
                    copied from another item; remove it and store the secret again
                    """,
                path: url.path
            )
        }
    }

    /// The secret as a UTF-8 string.
    public func string(service: String, account: String) throws -> String? {
        try secret(service: service, account: account).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Removes the secret; returns whether there was one.
    @discardableResult
    public func remove(service: String, account: String) throws -> Bool {
        let url = itemURL(service, account)
        if FileNames.remove(url.path) { return true }
        if errno == ENOENT { return false }
        throw StowageError.syscall(.current, "remove the secret", path: url.path)
    }

    /// The (service, account) pairs stored, sorted; unreadable items are skipped.
    public func items() throws -> [(service: String, account: String)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.appending(path: "items").path)
        return names.filter { $0.hasSuffix(".secret") }.compactMap { name in
            let url = directory.appending(path: "items").appending(path: name)
            guard let bytes = try? SecureFiles.read(url), let item = try? Self.parse(bytes, path: url.path) else {
                return nil
            }
            return (item.service, item.account)
        }.sorted { ($0.service, $0.account) < ($1.service, $1.account) }
    }

    // MARK: - Format

    private func itemURL(_ service: String, _ account: String) -> URL {
        var name: [UInt8] = []
        name.appendLengthPrefixed(service)
        name.appendLengthPrefixed(account)
        let digest = SHA256.hash(data: name).map { String(format: "%02x", $0) }.joined()
        return directory.appending(path: "items").appending(path: digest + ".secret")
    }

    private func associatedData(_ service: String, _ account: String) -> Data {
        var bytes = Self.itemMagic
        bytes.appendLengthPrefixed(area)
        bytes.appendLengthPrefixed(service)
        bytes.appendLengthPrefixed(account)
        return Data(bytes)
    }

    private static func parse(_ bytes: [UInt8], path: String) throws -> (service: String, account: String, sealed: Data)
    {
        func damaged(_ what: String) -> StowageError {
            StowageError(
                code: .corrupt,
                message: "the secret file \(path) is damaged (\(what)); remove it and store the secret again",
                path: path
            )
        }
        guard bytes.count > itemMagic.count, Array(bytes[0..<itemMagic.count]) == itemMagic else {
            throw damaged("not a Stowage secret")
        }
        return try bytes.withUnsafeBytes { raw in
            var reader = BinaryReader(raw, offset: itemMagic.count)
            let service: String
            let account: String
            do {
                service = try reader.readLengthPrefixedString()
                account = try reader.readLengthPrefixedString()
            } catch {
                throw damaged("\(error)")
            }
            // Nonce (12) and tag (16) at least.
            guard reader.remaining >= 28 else { throw damaged("truncated") }
            return (service, account, Data(bytes[reader.offset...]))
        }
    }

    private static func resolve(_ masterKey: MasterKey, header: StoreHeader, storeDirectory: URL) throws -> SymmetricKey
    {
        switch masterKey {
        case .key(let key):
            guard key.bitCount == 256 else {
                throw StowageError(
                    code: .invalidArgument,
                    message: "the master key has \(key.bitCount) bits; use a 256-bit key (SymmetricKey(size: .bits256))"
                )
            }
            return key
        case .keyFile(let url):
            return try KeyFile.loadOrCreate(url, storeDirectory: storeDirectory)
        case .passphrase(let passphrase, _):
            guard let scrypt = header.scrypt else {
                throw StowageError(
                    code: .invalidArgument,
                    message:
                        "the secret store at \(storeDirectory.path) was not created with a passphrase; open it with its key"
                )
            }
            return try scrypt.cost.deriveKey(from: passphrase, salt: scrypt.salt)
        }
    }
}
