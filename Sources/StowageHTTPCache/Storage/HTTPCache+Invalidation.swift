import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import Synchronization

// Invalidation: what an operator removes by URL, by URL prefix, or by surrogate key (Varnish's
// purge and ban, Fastly's purge by surrogate key). The word "purge" in Stowage's API means one
// thing only, freeing space under storage pressure (`Purging`, `purge(_:)`); the proxy's admin
// listener keeps Varnish's wire names (`PURGE`, `/purge`, `/ban`) for operators' tools. Tags are
// kept as index entries `k <tag> <uri>` beside the records (`m <uri>`), so invalidating a tag is
// one range scan of the index, whatever the cache's size.

extension HTTPCache {
    static func tagKey(_ tag: String, uri: String) -> String { "k " + tag + " " + uri }

    /// The tags `fields` give a response: every configured tag field's values, split on
    /// spaces and commas.
    func tags(in fields: HTTPFields) -> [String] {
        var tags: [String] = []
        for name in configuration.tagFields {
            for value in fields[values: name] {
                for tag in value.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" })
                where !tags.contains(String(tag)) {
                    tags.append(String(tag))
                }
            }
        }
        return tags
    }

    /// Records that `uri`'s stored response carries `tags` (in the disk cache's index: a cache
    /// without a disk tier keeps no tags, and ``invalidate(tag:)`` finds nothing in it).
    func recordTags(_ tags: [String], uri: String) async throws {
        guard let disk else { return }
        for tag in tags { try await disk.setData(Data(), forKey: Self.tagKey(tag, uri: uri)) }
    }

    /// Removes every stored response (all variants) of `url`, an absolute URL such as
    /// `https://example.com/a?b=1` (normalized and shaped by the key rules as requests are).
    ///
    /// - Returns: Whether anything was stored for it.
    @discardableResult
    public func invalidate(url: String) async throws -> Bool {
        guard let key = CacheKey(reference: url, base: CacheKey(uri: "")) else {
            throw StowageError(
                code: .invalidArgument,
                message:
                    "invalidate(url:) needs an absolute URL such as https://example.com/a, not \(url.debugDescription)"
            )
        }
        let shaped = rules.keyRules.apply(to: key)
        await invalidations.begin(.uri(shaped.uri))
        let existed = try await !variants(for: shaped).isEmpty
        try await remove(shaped)
        return existed
    }

    /// Removes every stored response whose URL starts with `prefix` (e.g.
    /// `https://example.com/images/`); returns how many URLs went here. With a shared level, every
    /// node sharing it removes the same URLs.
    @discardableResult
    public func invalidate(urlPrefix prefix: String) async throws -> Int {
        let count = try await invalidateLocally(urlPrefix: prefix)
        await broadcastInvalidation("m " + prefix)
        return count
    }

    /// ``invalidate(urlPrefix:)`` on this node only.
    func invalidateLocally(urlPrefix prefix: String) async throws -> Int {
        await invalidations.begin(.prefix(prefix))
        let recordKeys = try await recordKeys(withPrefix: "m " + prefix)
        for recordKey in recordKeys { try await remove(CacheKey(uri: String(recordKey.dropFirst(2)))) }
        return recordKeys.count
    }

    /// Removes every stored response tagged `tag` by a ``Configuration/tagFields`` field
    /// (`Surrogate-Key`, `Cache-Tag`); returns how many URLs went here. With a shared level,
    /// every node sharing it does the same: each removes the responses it stored with
    /// the tag, and their shared copies with them, so a node that took a tagged response from
    /// the shared level loses it too.
    @discardableResult
    public func invalidate(tag: String) async throws -> Int {
        let count = try await invalidateLocally(tag: tag)
        await broadcastInvalidation(Self.tagKey(tag, uri: ""))
        return count
    }

    /// ``invalidate(tag:)`` on this node only.
    func invalidateLocally(tag: String) async throws -> Int {
        await invalidations.begin(.tag(tag))
        let prefix = Self.tagKey(tag, uri: "")
        guard let disk else { return 0 }
        let tagKeys = try await disk.keys(withPrefix: prefix)
        var removed = 0
        for tagKey in tagKeys {
            let key = CacheKey(uri: String(tagKey.dropFirst(prefix.count)))
            if try await !variants(for: key).isEmpty { removed += 1 }
            try await remove(key)
            try await disk.removeData(forKey: tagKey)
        }
        return removed
    }

    /// The record keys starting with `prefix`: from the disk cache's index, or, without a disk
    /// tier, from the memory tier.
    private func recordKeys(withPrefix prefix: String) async throws -> [String] {
        if let disk { return try await disk.keys(withPrefix: prefix) }
        let found = Mutex<[String]>([])
        memory.removeValues { key in
            if KeyPrefix.covers(key, under: prefix) { found.withLock { $0.append(key) } }
            return false
        }
        return found.withLock { $0 }
    }
}
