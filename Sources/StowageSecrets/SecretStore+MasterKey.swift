import Crypto
import CryptoExtras
import Foundation
import StowageCore

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
        /// N, a power of two above 1. Default 2^17.
        public var rounds: Int
        /// r. Default 8.
        public var blockSize: Int
        /// p. Default 1.
        public var parallelism: Int

        /// 2^17 × 8 × 1: 128 MiB and about half a second per derivation on a 2-core server
        /// (OpenSSL's scrypt: 0.56 s; N = 2^15 took 0.13 s). OWASP's password-storage cheat sheet
        /// gives these as the minimum for scrypt. The store derives once per open.
        public static let `default` = ScryptCost(rounds: 1 << 17, blockSize: 8, parallelism: 1)

        /// scrypt's parameters: `rounds` (N, a power of two), `blockSize` (r) and `parallelism` (p).
        public init(rounds: Int, blockSize: Int, parallelism: Int) {
            self.rounds = rounds
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        /// Whether scrypt can run with these factors: N a power of two above 1, r and p at least 1,
        /// and at most 1 GiB of memory.
        var isRunnable: Bool {
            let memory = 128 * blockSize.multipliedReportingOverflow(by: rounds).partialValue
            return rounds > 1 && rounds & (rounds - 1) == 0 && blockSize >= 1 && parallelism >= 1
                && blockSize <= 1 << 20 && rounds <= 1 << 30 && parallelism <= 1 << 10 && memory > 0
                && memory <= 1 << 30
        }

        /// The 256-bit key scrypt derives from `passphrase` and `salt` with these factors.
        ///
        /// - Throws: `StowageError` `.invalidArgument` for factors scrypt refuses (N not a power
        ///   of two above 1, r or p below 1, or more than 1 GiB of memory).
        func deriveKey(from passphrase: String, salt: [UInt8]) throws -> SymmetricKey {
            guard isRunnable else {
                throw StowageError(
                    code: .invalidArgument,
                    message: "scrypt cannot run with N = \(rounds), r = \(blockSize), p = \(parallelism); N must be a "
                        + "power of two above 1, r and p at least 1, and 128·r·N at most 1 GiB (the default is "
                        + "N = 2^17, r = 8, p = 1)"
                )
            }
            return try KDF.Scrypt.deriveKey(
                from: Array(passphrase.utf8),
                salt: salt,
                outputByteCount: 32,
                rounds: rounds,
                blockSize: blockSize,
                parallelism: parallelism
            )
        }
    }
}
