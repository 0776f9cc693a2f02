import Crypto
import Foundation

extension SecretStore {
    /// Where the key that encrypts every item comes from. The key never sits in plain text
    /// beside the data.
    ///
    /// | option | protects against | does not protect against |
    /// |---|---|---|
    /// | ``key(_:)`` | anyone holding the store's files without the key (backups, sync, a stolen disk image) | whoever can read the key where the caller keeps it |
    /// | ``keyFile(_:)`` | a copy of the store directory alone (it is backed up or synced without the key file, which lives in another owner-only directory) | another process of the same user, or root: both can read the key file |
    /// | ``passphrase(_:cost:)`` | anyone without the passphrase, including another process of the same user; scrypt makes each guess cost memory and time | a weak passphrase; a keylogger |
    public enum MasterKey: Sendable {
        /// A 256-bit key the caller provides (from an OS keyring, a hardware token, a secrets
        /// manager). Nothing is written.
        case key(SymmetricKey)
        /// A 256-bit random key in a file, created `0600` on first use in a `0700` directory of
        /// its own. Refused when the file or its directory is readable by others, or when it is
        /// inside the store's directory.
        case keyFile(URL)
        /// A key derived from a passphrase with scrypt; the salt and cost are stored with the
        /// store (they are not secret).
        case passphrase(String, cost: ScryptCost = .default)
    }

    /// scrypt's work factors: memory is `128 × blockSize × rounds` bytes per derivation.
    public struct ScryptCost: Sendable, Hashable, Codable {
        /// N, a power of two. Default 2^15.
        public var rounds: Int
        /// r. Default 8.
        public var blockSize: Int
        /// p. Default 1.
        public var parallelism: Int

        /// 2^15 × 8 × 1: 32 MiB and about a tenth of a second per derivation (RFC 7914's
        /// interactive-login figures).
        public static let `default` = ScryptCost(rounds: 1 << 15, blockSize: 8, parallelism: 1)

        public init(rounds: Int, blockSize: Int, parallelism: Int) {
            self.rounds = rounds
            self.blockSize = blockSize
            self.parallelism = parallelism
        }
    }
}
