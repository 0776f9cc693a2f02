import StowageCore

extension HTTPCache.Configuration {
    /// Checks that these rules are a shared cache's, as a server answering many clients needs
    /// (RFC 9111 §3.5: a private cache stores `private` responses and serves them to whoever
    /// asks next).
    ///
    /// - Parameters:
    ///   - user: What needs the shared cache, as a message names it ("the proxy's cache").
    ///   - remedy: What to do instead, appended to the message.
    /// - Throws: `StowageError` `.invalidConfiguration` for a private cache.
    public func requireShared(by user: String, remedy: String) throws {
        guard rules.kind == .shared else {
            throw StowageError(
                code: .invalidConfiguration,
                message: "\(user).rules.kind is \(rules.kind); a server answers many clients, so its cache must be "
                    + "shared (RFC 9111 §3.5: private responses are not stored for everyone); \(remedy)"
            )
        }
    }
}
