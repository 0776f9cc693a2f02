import Testing

@testable import StowageCache

/// The levels' one outage queue: writes, removals and bans that wait for the shared level.
@Suite("PendingSharedWrites: the outage queue of writes, removals and bans")
struct PendingSharedWritesTests {
    @Test("a key's later change replaces its earlier one; a ban of the same name is kept apart")
    func keysAndPrefixesAreApart() {
        let pending = PendingSharedWrites(limit: 10)
        #expect(pending.record(.set, forKey: "img/"))
        #expect(pending.record(.ban, forKey: "img/"))
        #expect(pending.record(.remove, forKey: "img/"))
        #expect(pending.waitingCount == 2)
        #expect(pending.change(forKey: "img/") == .remove)
        #expect(pending.snapshot().map(\.change) == [.ban, .remove], "oldest first")

        pending.settle("img/")
        #expect(pending.snapshot().map(\.change) == [.ban], "settling the key leaves the ban")
        #expect(pending.change(forKey: "img/") == .ban, "not the key's own change: the waiting ban covers it")
        pending.settle("img/", isPrefix: true)
        #expect(pending.isEmpty)
    }

    @Test("a sent change is forgotten unless a later one replaced it meanwhile")
    func sentKeepsALaterChange() throws {
        let pending = PendingSharedWrites(limit: 10)
        _ = pending.record(.ban, forKey: "p/")
        let first = try #require(pending.snapshot().first)
        _ = pending.record(.ban, forKey: "p/")
        #expect(!pending.isWaiting(first))
        pending.sent(first)
        #expect(pending.waitingCount == 1, "the later ban still waits")
        let second = try #require(pending.snapshot().first)
        pending.sent(second)
        #expect(pending.isEmpty)
    }

    @Test(
        "past the limit a new key stays local and a new ban widens to a ban of every key, last; one already waiting is still replaced"
    )
    func limit() {
        let pending = PendingSharedWrites(limit: 2)
        #expect(pending.record(.set, forKey: "a"))
        #expect(pending.record(.ban, forKey: "b/"))
        #expect(pending.record(.ban, forKey: "c/"))
        #expect(pending.record(.ban, forKey: "d/"))
        #expect(!pending.record(.remove, forKey: "c"))
        #expect(pending.change(forKey: "c") == .ban, "the widened ban covers every key")
        #expect(pending.record(.remove, forKey: "a"))
        #expect(pending.record(.ban, forKey: "b/"))
        #expect(pending.waitingCount == 3)
        #expect(pending.snapshot().map(\.key) == ["", "a", "b/"])
        #expect(pending.snapshot().first?.change == .ban)
        // A limit of 0 keeps nothing, bans included.
        #expect(!PendingSharedWrites(limit: 0).record(.ban, forKey: "e/"))
    }

    @Test("a key under a waiting ban reads as changed, so no read takes back from the shared level what it removed")
    func aWaitingBanCoversItsKeys() throws {
        let pending = PendingSharedWrites(limit: 10)
        _ = pending.record(.ban, forKey: "img/")
        #expect(pending.change(forKey: "img/a") == .ban)
        #expect(pending.change(forKey: "img/") == .ban)
        #expect(pending.change(forKey: "css/a") == nil)
        _ = pending.record(.remove, forKey: "img/a")
        #expect(pending.change(forKey: "img/a") == .remove, "the key's own change first")
        let ban = try #require(pending.snapshot().first)
        pending.sent(ban)
        #expect(pending.change(forKey: "img/b") == nil, "sent: nothing covers the key any more")
        _ = pending.record(.ban, forKey: "v/")
        pending.settle("v/", isPrefix: true)
        #expect(pending.change(forKey: "v/1") == nil, "settled: the same")
    }
}
