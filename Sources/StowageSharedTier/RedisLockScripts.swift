/// The Lua scripts behind the cross-node load lock. Each touches only keys of one hash tag
/// (`{=key}`), so it runs on one cluster node.
enum RedisLockScripts {
    /// KEYS: lock, fence, value. ARGV: lease in ms. Returns the new fencing token, or 0 when the
    /// lock is held or the value is already there — a node that missed the value a moment ago
    /// must not load it again because the last loader has just stored it and let go. The fence
    /// counter lives a day past the last grant: tokens only need to grow within a lease, and a
    /// day of silence leaves no lock that could compare with an old one.
    static let acquire = """
        if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
        local token = redis.call('INCR', KEYS[2])
        redis.call('PEXPIRE', KEYS[2], 86400000)
        redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
        return token
        """

    /// KEYS: value, lock. ARGV: token, entry, expiry in ms (0 = none). Stores the entry and
    /// deletes the lock only while the lock still holds this token. Returns 1 or 0.
    static let fencedSet = """
        if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
        if tonumber(ARGV[3]) > 0 then
            redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
        else
            redis.call('SET', KEYS[1], ARGV[2])
        end
        redis.call('DEL', KEYS[2])
        return 1
        """

    /// KEYS: lock. ARGV: token. Deletes the lock only while it holds this token.
    static let release = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """
}
