import Foundation
import StowageCore
import Synchronization

/// An RFC 6265 cookie store: takes `Set-Cookie` fields from responses and gives the `Cookie`
/// field for requests, in memory and, when opened on a file, on disk.
///
/// ```swift
/// let cookies = try CookieStore.open(at: library.appending(path: "Cookies/cookies.stowcookies"))
/// let url = URL(string: "https://example.com/account")!
/// try cookies.setCookies(["id=42; Path=/; Max-Age=3600; Secure; HttpOnly"], from: url)
/// cookies.cookieHeader(for: url)            // "id=42"
/// ```
///
/// What it does, by RFC 6265:
/// - Domain and path matching (§5.1.3, §5.1.4); host-only cookies when there is no `Domain`
///   (§5.3 step 6); `Secure` cookies go only to `https`/`wss` and are accepted only from them
///   (RFC 6265bis), as are `__Secure-` and `__Host-` names (in any case); an `http` response
///   cannot replace, delete or shadow a `Secure` cookie of the same name (RFC 6265bis §5.7
///   step 16).
/// - `Max-Age` wins over `Expires` (§5.3 step 3); `Max-Age` ≤ 0 or a past `Expires` deletes the
///   cookie; lifetimes are capped at ``Configuration/maximumLifetime``.
/// - A `Domain` that is a public suffix (`com`, `co.uk`, any single label) or that does not
///   match the host (an IP-address host accepts only its own address) refuses the cookie.
/// - A cookie with the same name, domain and path replaces the old one, keeping its creation
///   date; the `Cookie` field lists longer paths first, then earlier creation (§5.4 step 2).
/// - `HttpOnly` is stored and the cookie is sent (this is an HTTP client). `SameSite` is stored
///   and changes nothing: a client outside a browser has no cross-site requests.
/// - Limits as browsers: ``Configuration/maximumCookieSize``,
///   ``Configuration/maximumCookiesPerDomain`` and ``Configuration/maximumCookieCount``, the
///   least recently used cookie evicted first.
///
/// Persistence: every change to a persistent cookie rewrites the file atomically (see
/// `open(at:configuration:clock:)`); session cookies stay in memory unless
/// ``Configuration/persistsSessionCookies``. Open one store per file and share it: two
/// stores (or processes) on one file each overwrite the other's changes.
///
/// A store on a file is removed with its directory: when a user is signed out
/// (`UserSpaces.wipe(user:)`) or a cleaner deletes the directory, every store open on it, in
/// this process or another, is retired before the file goes (``isRemoved``): it sends no cookie
/// and stores none from then on, as disk caches and preferences are retired.
public final class CookieStore: Sendable {
    /// The file the store keeps its persistent cookies in; `nil` for a store in memory only.
    public let fileURL: URL?
    /// The limits and rules.
    public let configuration: Configuration
    /// The records of the file that were damaged when it was opened and were left out.
    public let damagedRecordCount: Int
    private let clock: CacheClock
    /// The generation of the cookie file's directory, retired when the directory is removed
    /// (`StoreGeneration`); `nil` for a store in memory only.
    private let storeGeneration: StoreGeneration?
    private let state: Mutex<State>
    /// The generation last written to the file. Held only while the file is written, so that
    /// an older snapshot never replaces a newer one; lookups never wait for it.
    private let writer = Mutex<UInt64>(0)

    private struct Entry {
        var cookie: Cookie
        /// Orders cookies created in the same instant by arrival.
        var sequence: UInt64
        /// The cookie's registrable domain, which the per-site limit counts by.
        var site: String
    }

    private struct State {
        private(set) var entries: [Cookie.Identity: Entry] = [:]
        /// The cookies of each site, so that the per-site limit walks that site's cookies only,
        /// not every cookie.
        private(set) var siteMembers: [String: Set<Cookie.Identity>] = [:]
        /// How many Secure cookies bear each name, so that a cookie from `http` walks the
        /// store for one it may not shadow only when such a name is there.
        private(set) var secureNames: [String: Int] = [:]
        var nextSequence: UInt64 = 0
        /// Bumped by every change the file must show.
        var generation: UInt64 = 0

        mutating func insert(_ entry: Entry) {
            if let previous = entries.updateValue(entry, forKey: entry.cookie.identity) {
                leaveSite(previous)
            }
            siteMembers[entry.site, default: []].insert(entry.cookie.identity)
            if entry.cookie.isSecure { secureNames[entry.cookie.name, default: 0] += 1 }
        }

        mutating func remove(_ identity: Cookie.Identity) {
            guard let removed = entries.removeValue(forKey: identity) else { return }
            leaveSite(removed)
        }

        private mutating func leaveSite(_ entry: Entry) {
            siteMembers[entry.site]?.remove(entry.cookie.identity)
            if siteMembers[entry.site]?.isEmpty == true { siteMembers[entry.site] = nil }
            if entry.cookie.isSecure {
                secureNames[entry.cookie.name, default: 1] -= 1
                if secureNames[entry.cookie.name] == 0 { secureNames[entry.cookie.name] = nil }
            }
        }

        mutating func removeAll() {
            entries.removeAll()
            siteMembers.removeAll()
            secureNames.removeAll()
        }

        mutating func markUsed(_ identity: Cookie.Identity, at date: Date) {
            entries[identity]?.cookie.lastAccessDate = date
        }
    }

    /// A store in memory only.
    ///
    /// - Parameters:
    ///   - configuration: Limits and rules; see ``Configuration``.
    ///   - clock: The time cookies expire by. Tests pass a clock they move.
    public convenience init(configuration: Configuration = Configuration(), clock: CacheClock = .system) {
        self.init(fileURL: nil, cookies: [], damaged: 0, configuration: configuration, clock: clock, generation: nil)
    }

    private init(
        fileURL: URL?,
        cookies: [Cookie],
        damaged: Int,
        configuration: Configuration,
        clock: CacheClock,
        generation: StoreGeneration?
    ) {
        self.fileURL = fileURL
        storeGeneration = generation
        self.configuration = configuration
        self.clock = clock
        damagedRecordCount = damaged
        let now = clock.now()
        var state = State()
        for cookie in cookies.sorted(by: { $0.creationDate < $1.creationDate })
        where cookie.expiresDate.map({ $0 > now }) ?? configuration.persistsSessionCookies {
            let site = configuration.publicSuffixes.registrableDomain(of: cookie.domain)
            state.insert(Entry(cookie: cookie, sequence: state.nextSequence, site: site))
            state.nextSequence += 1
        }
        self.state = Mutex(state)
    }

    /// Opens the store kept in the file at `url`, creating the directory; an absent file is an
    /// empty store.
    ///
    /// The file is replaced whole and atomically on each change (temporary file, fsync,
    /// rename): a process killed mid-write leaves the previous file. Each cookie is a
    /// checksummed line, so a damaged file loses only its damaged records
    /// (``damagedRecordCount``). Expired cookies are not loaded.
    ///
    /// - Parameters:
    ///   - url: The cookie file, e.g. `…/Cookies/cookies.stowcookies`.
    ///   - configuration: Limits and rules; see ``Configuration``.
    ///   - clock: The time cookies expire by.
    /// - Throws: `StowageError` when the directory cannot be made or the file read;
    ///   `.invalidArgument` when the path is not a regular file (a FIFO, a directory, a
    ///   device) or is over 64 MiB, far beyond what the store's limits write (the file is left
    ///   as it is); `.unsupported` for a file written by a newer format.
    public static func open(
        at url: URL,
        configuration: Configuration = Configuration(),
        clock: CacheClock = .system
    ) throws -> CookieStore {
        let directory = url.deletingLastPathComponent()
        try DirectoryCreation.createDirectory(at: directory)
        // The generation file is installed under a lock: two processes installing one at once
        // would each map their own, and a removal would retire one of them only.
        let openLock = try LockFile(path: directory.fileSystemPath + "/open.lock")
        try openLock.lock(.exclusive)
        defer { openLock.unlock() }
        let generation = try StoreGeneration(directory: directory.fileSystemPath)
        // Temporaries of the cookie file that a writer killed mid-write left (its process gone).
        TemporaryFile.removeLeftovers(beside: url.fileSystemPath)
        let contents = try CookieStoreFile.read(url)
        return CookieStore(
            fileURL: url,
            cookies: contents.cookies,
            damaged: contents.damagedRecords,
            configuration: configuration,
            clock: clock,
            generation: generation
        )
    }

    /// The asynchronous overload of `open(at:configuration:clock:)`: reads the file off the
    /// cooperative pool.
    public static func open(
        at url: URL,
        configuration: Configuration = Configuration(),
        clock: CacheClock = .system
    ) async throws -> CookieStore {
        try await BlockingWork.run { try open(at: url, configuration: configuration, clock: clock) }
    }

    // MARK: Receiving cookies

    /// Stores the cookie of one `Set-Cookie` field value received from `url`.
    ///
    /// - Parameters:
    ///   - header: The field value, e.g. `id=42; Path=/; Max-Age=3600`.
    ///   - url: The URL of the request the response answered.
    /// - Returns: The cookie as stored; when it expired on arrival (`Max-Age=0`, a past
    ///   `Expires`), the cookie that was removed by it, or it.
    /// - Throws: `StowageError` when the cookie is refused (nothing stored changes): `.malformed`,
    ///   `.tooLarge`, `.publicSuffix`, `.domainMismatch`, `.notSecure`, or `.invalidArgument`
    ///   for a URL with no scheme or host; or when the file cannot be written (the cookie is set
    ///   in memory).
    @discardableResult
    public func setCookie(_ header: String, from url: URL) throws -> Cookie {
        let cookie = try accept(header, from: url)
        try persist()
        return cookie
    }

    /// The asynchronous overload of `setCookie(_:from:)`: writes the file off the cooperative pool.
    @discardableResult
    public func setCookie(_ header: String, from url: URL) async throws -> Cookie {
        let cookie = try accept(header, from: url)
        try await BlockingWork.run { try self.persist() }
        return cookie
    }

    /// Stores the cookies of a response's `Set-Cookie` field values, ignoring the ones RFC
    /// 6265 says to ignore; the file is written once.
    ///
    /// - Returns: Why each ignored cookie was refused, in order.
    /// - Throws: `StowageError` when the file cannot be written (the cookies are set in memory).
    @discardableResult
    public func setCookies(_ headers: [String], from url: URL) throws -> [StowageError] {
        let refusals = acceptAll(headers, from: url)
        try persist()
        return refusals
    }

    /// The asynchronous overload of `setCookies(_:from:)`: writes the file off the cooperative pool.
    @discardableResult
    public func setCookies(_ headers: [String], from url: URL) async throws -> [StowageError] {
        let refusals = acceptAll(headers, from: url)
        if !headers.isEmpty { try await BlockingWork.run { try self.persist() } }
        return refusals
    }

    private func acceptAll(_ headers: [String], from url: URL) -> [StowageError] {
        var refusals: [StowageError] = []
        for header in headers {
            do {
                try accept(header, from: url)
            } catch let error as StowageError {
                refusals.append(error)
            } catch {
                refusals.append(StowageError(code: .malformed, message: "\(error)", cause: error))
            }
        }
        return refusals
    }

    /// RFC 6265 §5.3, with the limits of ``Configuration``.
    @discardableResult
    private func accept(_ header: String, from url: URL) throws -> Cookie {
        guard !dropsRemovedCookies() else { throw removedError() }
        guard let request = CookieMatching.Request(url) else {
            throw StowageError(
                code: .invalidArgument,
                message: "cannot scope a cookie to \(url): it has no scheme or host; pass the URL of the request"
            )
        }
        // A whole header far past the limit is refused before it is parsed.
        let limit = Int(configuration.maximumCookieSize.rawValue)
        guard header.utf8.count <= limit + 16 * SetCookie.maximumAttributeValueSize else {
            throw tooLarge(header.utf8.count)
        }
        let parsed = try SetCookie.parse(header)
        let size = parsed.name.utf8.count + parsed.value.utf8.count
        guard size <= limit else { throw tooLarge(size) }
        let now = clock.now()
        var cookie = Cookie(name: parsed.name, value: parsed.value, domain: request.host, creationDate: now)

        // §5.3 step 3: Max-Age wins over Expires; lifetimes are capped (RFC 6265bis §5.6).
        let longest = TimeInterval(configuration.maximumLifetime.components.seconds)
        if let maxAge = parsed.maxAge {
            cookie.expiresDate =
                maxAge <= 0 ? Date.distantPast : now.addingTimeInterval(min(TimeInterval(maxAge), longest))
        } else if let expires = parsed.expires {
            cookie.expiresDate = min(expires, now.addingTimeInterval(longest))
        }

        // §5.3 steps 4–6: the domain.
        if let domain = parsed.domain {
            if configuration.publicSuffixes.isPublicSuffix(domain) && domain != request.host {
                throw StowageError(
                    code: .publicSuffix,
                    message: "refused cookie \(parsed.name.debugDescription) from \(request.host): Domain=\(domain) is "
                        + "a public suffix, and one site may not set cookies for every site under it; the server should "
                        + "leave Domain out or name its own domain"
                )
            }
            guard CookieMatching.domainMatches(host: request.host, domain: domain) else {
                throw StowageError(
                    code: .domainMismatch,
                    message: "refused cookie \(parsed.name.debugDescription) from \(request.host): Domain=\(domain) "
                        + (CookieMatching.isIPAddress(request.host)
                            ? "is not the request's IP address" : "does not domain-match the request's host")
                        + "; the server should name the host or a parent domain of it, or leave Domain out"
                )
            }
            // §5.3 step 5: a suffix equal to the host makes a host-only cookie. So does an IP
            // address (as in browsers): a name such as `x.127.0.0.1` is not a subdomain of the
            // address, yet it would domain-match a Domain=127.0.0.1 cookie by §5.1.3's text.
            cookie.domain = domain
            cookie.isHostOnly =
                configuration.publicSuffixes.isPublicSuffix(domain) || CookieMatching.isIPAddress(domain)
        }

        // §5.3 step 7.
        cookie.path = parsed.path ?? CookieMatching.defaultPath(of: request.path)
        cookie.isSecure = parsed.isSecure
        cookie.isHTTPOnly = parsed.isHTTPOnly
        cookie.sameSite = parsed.sameSite

        // RFC 6265bis §5.6 step 14 and the cookie prefixes (§4.1.3): secure cookies come from
        // secure origins only.
        if cookie.isSecure && !request.isSecure {
            throw notSecure(cookie, request, "has the Secure attribute")
        }
        // The prefixes match case-insensitively (RFC 6265bis §4.1.3, as browsers do since
        // 2024): a server that reads names without case would take `__HOST-id` for `__Host-id`.
        if Self.hasPrefix(cookie.name, "__secure-") && !(cookie.isSecure && request.isSecure) {
            throw notSecure(cookie, request, "is a __Secure- cookie without Secure, or not from https")
        }
        if Self.hasPrefix(cookie.name, "__host-")
            && !(cookie.isSecure && request.isSecure && parsed.domain == nil && parsed.path == "/")
        {
            throw notSecure(
                cookie,
                request,
                "is a __Host- cookie without Secure, with a Domain, or without Path=/"
            )
        }

        let persistsSessions = configuration.persistsSessionCookies
        let site = configuration.publicSuffixes.registrableDomain(of: cookie.domain)
        let shadowed = state.withLock { state -> Bool in
            // RFC 6265bis §5.7 step 16 ("Strict Secure"): a cookie from an insecure origin may not
            // replace, delete or shadow a Secure cookie of the same name whose domain matches
            // its own either way and whose path it path-matches; else anyone on the network
            // path of an http request could overwrite an https session.
            if !cookie.isSecure && !request.isSecure && state.secureNames[cookie.name] != nil
                && state.entries.values.contains(where: { Self.isShadowed($0.cookie, by: cookie) })
            {
                return true
            }
            let identity = cookie.identity
            let previous = state.entries[identity]
            // §5.3 step 11: replace, keeping the old creation date (and so the old place in order).
            if let previous { cookie.creationDate = previous.cookie.creationDate }
            if previous.map({ $0.cookie.isPersistent || persistsSessions }) == true
                || cookie.isPersistent || persistsSessions
            {
                state.generation += 1
            }
            if let expires = cookie.expiresDate, expires <= now {
                state.remove(identity)  // §5.3 step 12: an expired cookie only deletes.
                return false
            }
            state.insert(Entry(cookie: cookie, sequence: previous?.sequence ?? state.nextSequence, site: site))
            if previous == nil { state.nextSequence += 1 }
            evict(&state, keeping: identity, site: site, now: now)
            return false
        }
        if shadowed {
            throw notSecure(cookie, request, "would replace or shadow a Secure cookie of the same name")
        }
        return cookie
    }

    /// Whether `name` starts with `prefix` (lowercase) in any case.
    private static func hasPrefix(_ name: String, _ prefix: String) -> Bool {
        name.utf8.count >= prefix.utf8.count
            && zip(name.utf8, prefix.utf8).allSatisfy { byte, lower in
                ((0x41...0x5A).contains(byte) ? byte | 0x20 : byte) == lower
            }
    }

    /// RFC 6265bis §5.7 step 16's criteria: same name, `existing` Secure, domains matching
    /// either way, the new path path-matching the existing one.
    private static func isShadowed(_ existing: Cookie, by new: Cookie) -> Bool {
        existing.isSecure && existing.name == new.name
            && (CookieMatching.domainMatches(host: existing.domain, domain: new.domain)
                || CookieMatching.domainMatches(host: new.domain, domain: existing.domain))
            && CookieMatching.pathMatches(requestPath: new.path, cookiePath: existing.path)
    }

    /// RFC 6265 §5.3 step 12 and §6.1: drop expired cookies, then the least recently used of
    /// a site over its limit (non-Secure first), then the least recently used overall.
    ///
    /// An insert goes over a limit by one cookie, so each limit removes its one victim found in
    /// a single walk (the site's cookies, or every cookie), never a sort: a response of 10,000
    /// `Set-Cookie` fields, or a crawl of 10,000 sites, costs linear work per cookie under the
    /// store's lock rather than a sort of the whole store per cookie.
    private func evict(_ state: inout State, keeping kept: Cookie.Identity, site: String, now: Date) {
        while (state.siteMembers[site]?.count ?? 0) > configuration.maximumCookiesPerDomain {
            guard let victim = siteVictim(in: state, site: site, keeping: kept, now: now) else { break }
            remove(victim, from: &state)
        }
        while state.entries.count > configuration.maximumCookieCount {
            guard let victim = leastRecentlyUsed(state.entries.values, keeping: kept, now: now) else { break }
            remove(victim, from: &state)
        }
    }

    /// The least recently used cookie of `site` (`state` borrowed, so nothing is copied).
    private func siteVictim(in state: State, site: String, keeping kept: Cookie.Identity, now: Date) -> Entry? {
        let members = state.siteMembers[site] ?? []
        return leastRecentlyUsed(members.lazy.compactMap { state.entries[$0] }, keeping: kept, now: now)
    }

    /// Expired first, then cookies without `Secure`, then by last access, then by arrival.
    ///
    /// RFC 6265bis §5.7 ("remove excess cookies") evicts a site's non-Secure cookies before its
    /// Secure ones: else an `http` response setting 50 cookies would push the site's Secure
    /// session out of the store and then set its own in its place, which the Strict Secure
    /// rule exists to prevent.
    private func leastRecentlyUsed(
        _ candidates: some Sequence<Entry>,
        keeping kept: Cookie.Identity,
        now: Date
    ) -> Entry? {
        var victim: Entry?
        for candidate in candidates where candidate.cookie.identity != kept {
            guard let current = victim else {
                victim = candidate
                continue
            }
            let candidateExpired = candidate.cookie.expiresDate.map { $0 <= now } ?? false
            let currentExpired = current.cookie.expiresDate.map { $0 <= now } ?? false
            let earlier: Bool
            if candidateExpired != currentExpired {
                earlier = candidateExpired
            } else if candidate.cookie.isSecure != current.cookie.isSecure {
                earlier = !candidate.cookie.isSecure
            } else if candidate.cookie.lastAccessDate != current.cookie.lastAccessDate {
                earlier = candidate.cookie.lastAccessDate < current.cookie.lastAccessDate
            } else {
                earlier = candidate.sequence < current.sequence
            }
            if earlier { victim = candidate }
        }
        return victim
    }

    private func remove(_ victim: Entry, from state: inout State) {
        state.remove(victim.cookie.identity)
        if victim.cookie.isPersistent || configuration.persistsSessionCookies { state.generation += 1 }
    }

    private func tooLarge(_ size: Int) -> StowageError {
        StowageError(
            code: .tooLarge,
            message: "refused a cookie of \(size) bytes: name and value may take at most "
                + "\(configuration.maximumCookieSize.rawValue) bytes (Configuration.maximumCookieSize)"
        )
    }

    private func notSecure(_ cookie: Cookie, _ request: CookieMatching.Request, _ reason: String) -> StowageError {
        StowageError(
            code: .notSecure,
            message: "refused cookie \(cookie.name.debugDescription) from \(request.host): it \(reason); "
                + "such cookies are accepted only from https"
        )
    }

    // MARK: Sending cookies

    /// The cookies to send with a request to `url`, in the order RFC 6265 §5.4 gives: longer
    /// paths first, then earlier creation. Marks them used now (for eviction).
    public func cookies(for url: URL) -> [Cookie] {
        guard !dropsRemovedCookies(), let request = CookieMatching.Request(url) else { return [] }
        let now = clock.now()
        return state.withLock { state in
            var matched: [Entry] = []
            for (identity, entry) in state.entries {
                let cookie = entry.cookie
                if let expires = cookie.expiresDate, expires <= now {
                    state.remove(identity)
                    continue
                }
                let domainMatches =
                    cookie.isHostOnly
                    ? request.host == cookie.domain
                    : CookieMatching.domainMatches(host: request.host, domain: cookie.domain)
                guard domainMatches, CookieMatching.pathMatches(requestPath: request.path, cookiePath: cookie.path),
                    !cookie.isSecure || request.isSecure
                else { continue }
                state.markUsed(identity, at: now)
                matched.append(entry)
            }
            matched.sort { lhs, rhs in
                if lhs.cookie.path.utf8.count != rhs.cookie.path.utf8.count {
                    return lhs.cookie.path.utf8.count > rhs.cookie.path.utf8.count
                }
                if lhs.cookie.creationDate != rhs.cookie.creationDate {
                    return lhs.cookie.creationDate < rhs.cookie.creationDate
                }
                return lhs.sequence < rhs.sequence
            }
            return matched.map {
                var cookie = $0.cookie
                cookie.lastAccessDate = now
                return cookie
            }
        }
    }

    /// The `Cookie` field value for a request to `url` (`a=1; b=2`), or `nil` when no cookie
    /// matches (RFC 6265 §5.4).
    public func cookieHeader(for url: URL) -> String? {
        let cookies = cookies(for: url)
        return cookies.isEmpty ? nil : cookies.map(\.description).joined(separator: "; ")
    }

    /// Every cookie that has not expired, oldest first.
    public var allCookies: [Cookie] {
        guard !dropsRemovedCookies() else { return [] }
        let now = clock.now()
        return state.withLock { state in
            state.entries.values.filter { $0.cookie.expiresDate.map { $0 > now } ?? true }
                .sorted { $0.sequence < $1.sequence }.map(\.cookie)
        }
    }

    // MARK: Removing and saving

    /// Removes every cookie, from memory and from the file.
    ///
    /// - Throws: `StowageError` when the file cannot be written.
    public func removeAll() throws {
        state.withLock { state in
            state.removeAll()
            state.generation += 1
        }
        try persist()
    }

    /// The asynchronous overload of `removeAll()`.
    public func removeAll() async throws {
        state.withLock { state in
            state.removeAll()
            state.generation += 1
        }
        try await BlockingWork.run { try self.persist() }
    }

    /// Writes the file now, with the cookies' last-access dates (which alone do not cause a
    /// write). Does nothing for a store in memory.
    ///
    /// - Throws: `StowageError` when the file cannot be written.
    public func save() throws {
        state.withLock { $0.generation += 1 }
        try persist()
    }

    /// The asynchronous overload of `save()`.
    public func save() async throws {
        state.withLock { $0.generation += 1 }
        try await BlockingWork.run { try self.persist() }
    }

    // MARK: Removal

    /// Whether the store's directory was removed while it was open (its user signed out with
    /// `UserSpaces.wipe(user:)`, or a cleaner deleted it), in this process or another: it then
    /// holds no cookie, sends none and stores none. Open the file again for a new, empty store.
    /// Always `false` for a store in memory only.
    public var isRemoved: Bool { storeGeneration?.isRetired ?? false }

    /// Whether the store was removed; its cookies are dropped from memory then. One load from
    /// shared memory while it was not.
    private func dropsRemovedCookies() -> Bool {
        guard isRemoved else { return false }
        state.withLock { $0.removeAll() }
        return true
    }

    private func removedError() -> StowageError {
        StowageError(
            code: .notFound,
            message: "the cookie store was removed (its user was signed out, or its directory wiped or cleaned "
                + "away) while open; it stores no cookie: open it again for a new store",
            path: fileURL?.fileSystemPath
        )
    }

    /// Writes the file when it is behind the state; nothing once the store was removed (its
    /// directory is gone, and must not come back with the signed-out user's cookies).
    private func persist() throws {
        guard let fileURL, !dropsRemovedCookies() else { return }
        let persistsSessions = configuration.persistsSessionCookies
        try writer.withLock { written in
            let now = clock.now()
            let (generation, cookies) = state.withLock { state in
                (
                    state.generation,
                    state.entries.values.sorted { $0.sequence < $1.sequence }.map(\.cookie).filter {
                        $0.expiresDate.map { $0 > now } ?? persistsSessions
                    }
                )
            }
            guard generation > written else { return }
            try AtomicFile.write(CookieStoreFile.encode(cookies), to: fileURL)
            written = generation
        }
    }
}
