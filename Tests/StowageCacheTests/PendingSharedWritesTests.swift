import Foundation
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

    @Test("a key is covered by the waiting bans whose prefix its UTF-8 bytes start with, as bans come and go")
    func coverageFollowsTheBans() {
        let pending = PendingSharedWrites(limit: 100)
        let prefixes = ["a", "ab", "abc/", "b/", "\u{E9}", "e\u{301}", "K"]
        for prefix in prefixes { _ = pending.record(.ban, forKey: prefix) }
        let keys = ["a", "abx", "abc/1", "b", "b/2", "\u{E9}t", "e\u{301}t", "et", "\u{212A}", "Kx", "", "zz"]
        // An array, not a Set: "\u{E9}" and "e\u{301}" are equal Strings, and two bans.
        var waiting = prefixes
        for removed in [nil] + prefixes.map(Optional.some) {
            if let removed {
                pending.settle(removed, isPrefix: true)
                waiting.removeAll { $0.utf8.elementsEqual(removed.utf8) }
            }
            for key in keys {
                let expected = waiting.contains { key.utf8.starts(with: $0.utf8) }
                #expect(
                    (pending.change(forKey: key) == .ban) == expected,
                    "\(key.unicodeScalars.map(\.value)) with \(waiting)"
                )
            }
        }
        #expect(pending.isEmpty)
        _ = pending.record(.ban, forKey: "")
        #expect(keys.allSatisfy { pending.change(forKey: $0) == .ban }, "the empty prefix covers every key")
    }

    @Test("with 10,000 bans waiting a read's check stays in microseconds, not one prefix after another")
    func manyWaitingBansStayCheap() {
        let pending = PendingSharedWrites(limit: 20_000)
        for n in 0..<10_000 { _ = pending.record(.ban, forKey: "m https://origin.test/section-\(n)/") }
        let keys = (0..<5_000).map { "r https://origin.test/page/\($0)?q=\($0 * 7)" }
        let covered = "r https://origin.test/section-9999/x"
        _ = pending.record(.ban, forKey: "r https://origin.test/section-9999/")
        var hits = 0
        let elapsed = ContinuousClock().measure {
            for key in keys where pending.change(forKey: key) != nil { hits += 1 }
        }
        #expect(hits == 0)
        #expect(pending.change(forKey: covered) == .ban)
        // Tried one by one, 10,000 prefixes took about 1 ms a read in a debug build (5 s here);
        // found by hash at each length some prefix has, a few microseconds.
        #expect(elapsed < .seconds(1), "\(elapsed / keys.count) a read")
    }

    @Test("bans of canonically equivalent prefixes spelt apart are two bans, both sent, and once sent cover nothing")
    func equivalentSpellingsAreApart() {
        let pending = PendingSharedWrites(limit: 10)
        #expect(pending.record(.ban, forKey: "e\u{301}"))
        #expect(pending.record(.ban, forKey: "\u{E9}"))
        let waiting = pending.snapshot()
        #expect(waiting.map { Array($0.key.utf8) } == [Array("e\u{301}".utf8), Array("\u{E9}".utf8)])
        #expect(pending.change(forKey: "e\u{301}t") == .ban)
        #expect(pending.change(forKey: "\u{E9}t") == .ban)
        for ban in waiting { pending.sent(ban) }
        #expect(pending.isEmpty)
        #expect(pending.change(forKey: "e\u{301}t") == nil, "nothing reads as changed once every ban is sent")
        _ = pending.record(.set, forKey: "x")
        #expect(pending.change(forKey: "e\u{301}t") == nil && pending.change(forKey: "\u{E9}t") == nil)
    }
}
