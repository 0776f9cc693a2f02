import Foundation
import HTTPTypes
import StowageCache
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageHTTPCache

/// The shared level's behaviour, proved once for both caches that put one behind memory and
/// disk: `HybridCache` (typed values) and `HTTPCache` (records and bodies). Both run on
/// `CacheLevels`' shared-level engine, so an outage, its replay, a fill an invalidation
/// overtakes and the confirmation of disk copies must look the same through either.
@Suite("Shared level: the same behaviour through HybridCache and HTTPCache")
struct SharedLevelEngineTests {
    @Test(
        "an outage: writes and removals stay local and wait, nothing throws, local copies serve",
        arguments: Facade.allCases
    )
    func outage(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        try await a.write("v1", forKey: "k")
        try await a.write("j1", forKey: "j")
        #expect(try await b.read("k") == "v1")
        fleet.level.goDown()
        try await a.write("v2", forKey: "k")
        try await a.remove("j")
        #expect(a.pendingSharedWrites > 0)
        #expect(a.sharedTierFailures > 0)
        #expect(try await a.read("k") == "v2")
        #expect(try await a.read("j") == nil)
        // b keeps serving what it has, and a key only the shared level has reads as a miss.
        #expect(try await b.read("k") == "v1")
        #expect(try await b.read("j") == nil)
        fleet.level.comeBack(notifying: false)
        // The shared level has not heard of a's changes yet.
        #expect(fleet.level.data(forKey: a.storedKey("j")) != nil)
    }

    @Test(
        "when the shared level is back (.all), the changes made during the outage reach it and the other nodes",
        arguments: Facade.allCases
    )
    func replayOnReturn(facade: Facade) async throws {
        let fleet = try EngineFleet(facade, running: ["a", "b"])
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        try await a.write("v1", forKey: "k")
        try await a.write("j1", forKey: "j")
        #expect(try await b.read("k") == "v1")
        #expect(try await b.read("j") == "j1")
        fleet.level.goDown()
        try await a.write("v2", forKey: "k")
        try await a.remove("j")
        #expect(a.pendingSharedWrites > 0)
        fleet.level.comeBack()
        try await eventually { a.pendingSharedWrites == 0 }
        #expect(fleet.level.data(forKey: a.storedKey("j")) == nil)
        try await eventually { try await b.read("k") == "v2" }
        try await eventually { try await b.read("j") == nil }
    }

    @Test(
        "a replay the shared level refuses (its channel back before its calls answer) is tried again, with no other call",
        arguments: Facade.allCases
    )
    func refusedReplayRetried(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        fleet.level.goDown(interruptingInvalidations: false)
        try await a.write("v1", forKey: "k")
        #expect(a.pendingSharedWrites > 0)
        // The channel says it is back while calls still fail (a Redis client's circuit breaker
        // not yet closed): the replay is refused.
        await a.apply(.all)
        #expect(a.pendingSharedWrites > 0)
        fleet.level.comeBack(notifying: false)
        // The retry waits on the wait clock: 100 ms after the refusal, then doubling.
        try await eventually {
            fleet.waitClock.advance(by: .seconds(5))
            return a.pendingSharedWrites == 0
        }
        #expect(try await b.read("k") == "v1")
    }

    @Test(
        "a change kept during an outage is retried on the wait clock until the level takes it, with no other call",
        arguments: Facade.allCases
    )
    func keptChangeRetried(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        fleet.level.goDown(interruptingInvalidations: false)
        try await a.write("v1", forKey: "k")
        // One change (HybridCache), or two (HTTPCache: a record and its body).
        let kept = a.pendingSharedWrites
        #expect(kept > 0)
        let failures = a.sharedTierFailures
        // Still down: a retry fails and the changes keep waiting.
        try await eventually {
            fleet.waitClock.advance(by: .seconds(5))
            return a.sharedTierFailures > failures
        }
        #expect(a.pendingSharedWrites == kept)
        fleet.level.comeBack(notifying: false)
        try await eventually {
            fleet.waitClock.advance(by: .seconds(5))
            return a.pendingSharedWrites == 0
        }
        #expect(try await b.read("k") == "v1")
    }

    @Test(
        "a ban made during an outage waits in the same queue as the removals and reaches the other node when the level is back"
    )
    func banDuringOutageReachesOtherNode() async throws {
        let fleet = try EngineFleet(.http, running: ["b"])
        defer { fleet.close() }
        let a = try #require(fleet.a as? HTTPNode)
        let b = fleet.b
        // Only b stored the response: a knows of no key under the prefix, so only the ban can
        // tell b to drop it.
        try await b.write("v1", forKey: "img/1")
        try await b.write("v1", forKey: "text/1")
        fleet.level.goDown(interruptingInvalidations: false)
        #expect(try await a.cache.invalidate(urlPrefix: "http://origin.test/img/") == 0)
        #expect(a.pendingSharedWrites == 1, "the ban waits for the level")
        #expect(try await b.read("img/1") == "v1", "b has not heard of it yet")
        fleet.level.comeBack(notifying: false)
        try await eventually {
            fleet.waitClock.advance(by: .seconds(5))
            return a.pendingSharedWrites == 0
        }
        try await eventually { try await b.read("img/1") == nil }
        #expect(try await b.read("text/1") == "v1")
    }

    @Test(
        "bans past maximumPendingWrites made during an outage widen to one ban of every key, not dropped: the other node drops what each removed"
    )
    func bansPastTheLimitWiden() async throws {
        let fleet = try OneBanWaitingFleet(bRuns: true)
        defer { fleet.level.shutDown() }
        let (a, b) = (fleet.a, fleet.b)
        for key in ["img/1", "css/1"] { try await b.write("v1", forKey: key) }
        fleet.level.goDown(interruptingInvalidations: false)
        for prefix in ["img/", "css/"] {
            #expect(try await a.cache.invalidate(urlPrefix: "http://origin.test/\(prefix)") == 0)
        }
        #expect(fleet.shared.pendingCount == 2, "the first ban, and one of every key past the limit")
        fleet.level.comeBack(notifying: false)
        try await fleet.replayed()
        try await eventually { try await b.read("img/1") == nil }
        // Heard after the first ban (a hang catcher: a ban dropped at the limit never comes).
        try await eventually { try await b.read("css/1") == nil }
    }

    @Test(
        "while a widened ban of every key waits, nothing is read from the shared level; once it is sent, reads from it resume"
    )
    func widenedBanThenReadsResume() async throws {
        // b does not run: it keeps its shared copies whatever a bans.
        let fleet = try OneBanWaitingFleet(bRuns: false)
        defer { fleet.level.shutDown() }
        let (a, b) = (fleet.a, fleet.b)
        try await b.write("v1", forKey: "page/1")
        fleet.level.goDown(interruptingInvalidations: false)
        for prefix in ["img/", "css/"] {
            #expect(try await a.cache.invalidate(urlPrefix: "http://origin.test/\(prefix)") == 0)
        }
        #expect(fleet.shared.pendingCount == 2, "the first ban, and one of every key past the limit")
        fleet.level.comeBack(notifying: false)
        // Up, but the ban not sent yet: the shared copy is not taken back.
        #expect(try await a.read("page/1") == nil)
        try await fleet.replayed()
        #expect(try await a.read("page/1") == "v1", "filled from the shared level again")
    }

    @Test(
        "the first call that succeeds after an outage sends what waits, with no word from the channel",
        arguments: Facade.allCases
    )
    func replayOnFirstSuccess(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        fleet.level.goDown(interruptingInvalidations: false)
        try await a.write("v1", forKey: "k")
        #expect(a.pendingSharedWrites > 0)
        #expect(fleet.level.data(forKey: a.storedKey("k")) == nil)
        fleet.level.comeBack(notifying: false)
        try await a.write("x", forKey: "other")
        try await eventually { a.pendingSharedWrites == 0 }
        #expect(try await b.read("k") == "v1")
    }

    @Test(
        "a change heard from another node settles a change waiting for the shared level: the newer value stands",
        arguments: Facade.allCases
    )
    func heardChangeSettlesPending(facade: Facade) async throws {
        let fleet = try EngineFleet(facade, running: ["a"])
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        fleet.level.goDown(interruptingInvalidations: false)
        try await a.write("mine", forKey: "k")
        #expect(a.pendingSharedWrites > 0)
        fleet.level.comeBack(notifying: false)
        try await b.write("newer", forKey: "k")
        // a hears b's write and drops its copy; its own older change must not be replayed over it.
        try await eventually { try await !a.hasLocalCopy("k") }
        await a.apply(.all)
        try await eventually { a.pendingSharedWrites == 0 }
        #expect(try await a.read("k") == "newer")
        #expect(try await b.read("k") == "newer")
    }

    @Test(
        "a change heard from another node while the replay runs is not overwritten by the replay",
        arguments: Facade.allCases
    )
    func changeHeardDuringReplaySettlesPending(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        fleet.level.goDown(interruptingInvalidations: false)
        try await a.write("first", forKey: "k1")
        try await a.write("mine", forKey: "k2")
        fleet.level.comeBack(notifying: false)
        let (first, second) = (a.storedKey("k1"), a.storedKey("k2"))
        let fired = Atomic<Bool>(false)
        // While a's replay sends k1, b writes k2 and a hears of it: a's older k2 is settled.
        fleet.level.setWriteHook { key in
            guard key == first, !fired.exchange(true, ordering: .relaxed) else { return }
            try? await b.write("newer", forKey: "k2")
            await a.apply(.key(second))
        }
        await a.apply(.all)
        let didFire = fired.load(ordering: .relaxed)
        #expect(didFire)
        #expect(a.pendingSharedWrites == 0)
        #expect(fleet.level.data(forKey: second) != nil)
        #expect(try await a.read("k2") == "newer")
    }

    @Test(
        "a change the shared level misses while a replay runs is sent by that replay, not left waiting",
        arguments: Facade.allCases
    )
    func changeMissedDuringReplayIsSent(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        fleet.level.goDown(interruptingInvalidations: false)
        try await a.write("first", forKey: "k1")
        fleet.level.comeBack(notifying: false)
        let first = a.storedKey("k1")
        let fired = Atomic<Bool>(false)
        // While a's replay sends k1, the level blips: a's write of k2 misses it, and the next
        // call that succeeds asks for a replay, which finds this one under way. The hook holds
        // this replay until that one has returned.
        let foundUnderWay = a.replaysFoundUnderWay
        fleet.level.setWriteHook { key in
            guard key == first, !fired.exchange(true, ordering: .relaxed) else { return }
            fleet.level.goDown(interruptingInvalidations: false)
            try? await a.write("second", forKey: "k2")
            fleet.level.comeBack(notifying: false)
            try? await a.write("third", forKey: "k3")
            try? await eventually { a.replaysFoundUnderWay > foundUnderWay }
        }
        await a.apply(.all)
        let didFire = fired.load(ordering: .relaxed)
        #expect(didFire)
        #expect(a.replaysFoundUnderWay > foundUnderWay, "the recovery's replay met this one under way")
        try await eventually { a.pendingSharedWrites == 0 }
        #expect(try await b.read("k2") == "second")
    }

    @Test(
        "a fill from the shared level that an invalidation overtakes keeps no local copy",
        arguments: Facade.allCases
    )
    func fillOvertakenByInvalidation(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        try await a.write("v1", forKey: "k")
        let storedKey = b.storedKey("k")
        // The invalidation lands after b has read the entry and before it keeps it.
        let firstRead = FirstRead(of: storedKey, on: fleet.level) {
            await b.apply(.key(storedKey))
        }
        #expect(try await b.read("k") == "v1")  // current when read
        let didFire = firstRead.didFire
        #expect(didFire)
        #expect(try await !b.hasLocalCopy("k"))
    }

    @Test(
        "a read on the node whose removal has left its own levels but not yet the shared one keeps nothing: the key is gone after",
        arguments: Facade.allCases
    )
    func readDuringOwnRemoval(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let a = fleet.a
        try await a.write("v1", forKey: "k")
        let storedKey = a.storedKey("k")
        let fired = Atomic<Bool>(false)
        // a's removal has dropped its memory and disk copies and is about to remove the shared
        // one, which still holds v1: a read of a's now misses locally and finds v1 there. A node
        // does not hear its own removals back, so a copy it kept would outlive the removal.
        fleet.level.setWriteHook { key in
            guard key == storedKey, fleet.level.data(forKey: storedKey) != nil,
                !fired.exchange(true, ordering: .relaxed)
            else { return }
            _ = try? await a.read("k")
        }
        try await a.remove("k")
        let didFire = fired.load(ordering: .relaxed)
        #expect(didFire)
        #expect(try await a.read("k") == nil)
        #expect(try await !a.hasLocalCopy("k"))
    }

    @Test(
        "a read that found the old value in the shared level before this node's own write reached it keeps nothing over the write",
        arguments: Facade.allCases
    )
    func readOvertakenByOwnWrite(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        try await b.write("v1", forKey: "k")
        let storedKey = a.storedKey("k")
        // a's read misses locally and takes v1 from the shared level; before the value reaches a,
        // a writes v2 everywhere. Landing after that write, the fill would put v1 back in front of
        // v2 on a, which never hears its own write back to drop it.
        let firstRead = FirstRead(of: storedKey, on: fleet.level) {
            try? await a.write("v2", forKey: "k")
        }
        let during = try await a.read("k")
        fleet.level.setReadHook(nil)
        let didFire = firstRead.didFire
        #expect(didFire)
        #expect(during == "v1" || during == "v2")
        #expect(try await a.read("k") == "v2")
    }

    @Test("a memory-only write of this node's that overtook a shared fill stays readable")
    func readOvertakenByOwnMemoryOnlyWrite() async throws {
        let fleet = try EngineFleet(.hybrid)
        defer { fleet.close() }
        let a = try #require(fleet.a as? HybridNode)
        try await fleet.b.write("v1", forKey: "k")
        // a's read takes v1 from the shared level; before the value reaches a, a stores v2 in
        // memory only (which removes the shared copy). The fill keeps nothing over v2, and must
        // not drop v2 either as though v2 were the fill's own copy: v2 is nowhere else.
        let firstRead = FirstRead(of: "k", on: fleet.level) {
            _ = try? await a.cache.setValue("v2", forKey: "k", placement: .memoryOnly)
        }
        let during = try await a.read("k")
        fleet.level.setReadHook(nil)
        let didFire = firstRead.didFire
        #expect(didFire)
        #expect(during == "v1" || during == "v2")
        #expect(try await a.read("k") == "v2")
    }

    @Test("a memory-only write of this node's that overtook the confirmation of a disk copy stays readable")
    func confirmationOvertakenByOwnMemoryOnlyWrite() async throws {
        let fleet = try EngineFleet(.hybrid)
        defer { fleet.close() }
        let a = try #require(fleet.a as? HybridNode)
        try await a.write("old", forKey: "k")
        // b removes the shared copy, which a never hears; then a's channel broke and came back:
        // its memory goes, and its disk copy, older than the horizon, is confirmed when read.
        fleet.level.setSendsInvalidations(false)
        try await fleet.b.remove("k")
        fleet.level.setSendsInvalidations(true)
        fleet.clock.advance(by: .seconds(1))
        await a.apply(.interrupted)
        await a.apply(.all)
        // The confirmation finds no shared copy; before it drops the disk copy, a stores v2 in
        // memory only. The drop, meant for the unconfirmed copy, must not take v2, which is
        // nowhere else.
        let firstRead = FirstRead(of: "k", on: fleet.level) {
            _ = try? await a.cache.setValue("v2", forKey: "k", placement: .memoryOnly)
        }
        let during = try await a.read("k")
        fleet.level.setReadHook(nil)
        let didFire = firstRead.didFire
        #expect(didFire)
        #expect(during == nil || during == "v2")
        #expect(try await a.read("k") == "v2")
    }

    @Test(
        "disk copies that may have missed an invalidation are confirmed: replaced, removed, or served unchecked in an outage",
        arguments: Facade.allCases
    )
    func confirmation(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        for key in ["changed", "removed", "unchecked"] {
            try await a.write("old", forKey: key)
            #expect(try await b.read(key) == "old")
        }
        // Changes b never hears (as a plain client's writes reach no node listening for messages).
        fleet.level.setSendsInvalidations(false)
        try await a.write("new", forKey: "changed")
        try await a.remove("removed")
        try await a.write("new", forKey: "unchecked")
        fleet.level.setSendsInvalidations(true)
        #expect(try await b.read("changed") == "old")  // not heard: still served
        // b's channel broke and came back: memory goes, older disk copies are confirmed.
        fleet.clock.advance(by: .seconds(1))
        await b.apply(.interrupted)
        await b.apply(.all)
        fleet.level.goDown(interruptingInvalidations: false)
        #expect(try await b.read("unchecked") == "old")
        fleet.level.comeBack(notifying: false)
        #expect(try await b.read("changed") == "new")
        #expect(try await b.read("removed") == nil)
        #expect(try await !b.hasLocalCopy("removed"))
    }

    @Test("during a gap (.interrupted) disk copies are served unconfirmed", arguments: Facade.allCases)
    func gapServesUnconfirmed(facade: Facade) async throws {
        let fleet = try EngineFleet(facade)
        defer { fleet.close() }
        let (a, b) = (fleet.a, fleet.b)
        try await a.write("old", forKey: "k")
        #expect(try await b.read("k") == "old")
        fleet.level.setSendsInvalidations(false)
        try await a.remove("k")
        fleet.clock.advance(by: .seconds(1))
        await b.apply(.all)  // memory dropped; b's disk copy now predates the horizon
        await b.apply(.interrupted)  // and a gap begins: the shared level may be coming back empty
        #expect(try await b.read("k") == "old")
        await b.apply(.all)  // the gap ends: the copy is confirmed, and the shared level has none
        #expect(try await b.read("k") == nil)
    }
}

/// HTTPCache's own part: a record and its body are two entries, which invalidations reach apart.
@Suite("Shared level: HTTPCache records whose bodies went")
struct SharedLevelHTTPBodyTests {
    @Test("a response whose body another node's change removed is dropped here only: the newer shared record stays")
    func bodyGoneWithNewerSharedRecord() async throws {
        let fleet = try EngineFleet(.http)
        defer { fleet.close() }
        let (a, b) = (fleet.a, try #require(fleet.b as? HTTPNode))
        try await a.write("v1", forKey: "k")
        #expect(try await b.read("k") == "v1")
        // a replaces the response; b has not heard yet, and v1's body is gone from the shared level.
        fleet.level.setSendsInvalidations(false)
        try await a.write("v2", forKey: "k")
        fleet.level.setSendsInvalidations(true)
        let oldBody = try #require(try await b.cache.variants(for: b.cache.rules.key(for: b.request(for: "k"))).first)
        await b.apply(.key(oldBody.bodyKey))  // b hears of the body before the record
        // Its record's body is gone: the record goes here, and the shared level's newer one,
        // untouched, answers.
        #expect(try await b.read("k") == "v2")
        #expect(fleet.level.data(forKey: b.storedKey("k")) != nil)
    }

    @Test("a shared body whose length is not its record's is not served: a truncated or foreign value reads as a miss")
    func sharedBodyOfTheWrongLength() async throws {
        let fleet = try EngineFleet(.http)
        defer { fleet.close() }
        let (a, b) = (try #require(fleet.a as? HTTPNode), fleet.b)
        try await a.write("the whole body", forKey: "k")
        let record = try #require(try await a.cache.variants(for: a.cache.rules.key(for: a.request(for: "k"))).first)
        #expect(record.stored.bodyLength == 14)
        // The shared level hands out other bytes under the body's key.
        for garbled in ["the whole", "the whole body, and more"] {
            try await fleet.level.node().setData(Data(garbled.utf8), forKey: record.bodyKey, timeToLive: nil)
            #expect(try await b.read("k") == nil)
        }
        #expect(try await !b.hasLocalCopy("k"))
    }
}

/// A change landed in the middle of a node's fill: run once, the first time the shared level
/// hands out `key` (after the value is taken, before it reaches the node).
final class FirstRead: Sendable {
    private let fired = Atomic<Bool>(false)

    init(of key: String, on level: InMemorySharedLevel, _ change: @escaping @Sendable () async -> Void) {
        level.setReadHook { [fired = self] read in
            guard read == key, !fired.fired.exchange(true, ordering: .relaxed) else { return }
            await change()
        }
    }

    /// Whether the change ran.
    var didFire: Bool { fired.load(ordering: .relaxed) }
}

/// The two caches with a shared level behind memory and disk.
enum Facade: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case hybrid
    case http

    var testDescription: String { self == .hybrid ? "HybridCache" : "HTTPCache" }
}

/// One node of a test fleet, through either cache: what the suite does with a string value.
protocol EngineNode: Sendable {
    func write(_ value: String, forKey key: String) async throws
    /// The value for `key` from the cache, never from an origin; `nil` on a miss.
    func read(_ key: String) async throws -> String?
    func remove(_ key: String) async throws
    func apply(_ invalidation: SharedCacheInvalidation) async
    func run() async throws
    var pendingSharedWrites: Int { get }
    var sharedTierFailures: Int { get }
    /// How many replays of its missed writes found another under way (``SharedLevel/replaysFoundUnderWay``).
    var replaysFoundUnderWay: Int { get }
    /// The key of `key`'s entry in the levels: the one a fill from the shared level reads first.
    func storedKey(_ key: String) -> String
    /// Whether memory or disk holds that entry.
    func hasLocalCopy(_ key: String) async throws -> Bool
}

/// Two HTTP cache nodes over one ``InMemorySharedLevel``: `a` keeps at most one change for the
/// replay (`maximumPendingWrites = 1`, so a second ban widens to a ban of every key), `b` runs
/// (applies `a`'s invalidations) when `bRuns`.
struct OneBanWaitingFleet {
    let level = InMemorySharedLevel()
    let scratch: TemporaryDirectory
    let clock = ManualClock(startingAt: t0)
    /// What the retries of kept changes wait on.
    let waitClock = SteppedClock()
    let a: HTTPNode
    let b: HTTPNode
    /// `a`'s shared level.
    let shared: SharedLevel

    init(bRuns: Bool, _ name: String = #function) throws {
        scratch = try TemporaryDirectory(name)
        b = try HTTPNode(
            directory: scratch.url.appending(path: "b"),
            tier: level.node(),
            clock: clock,
            waitClock: waitClock,
            name: "b"
        )
        if bRuns { Task { [b] in try await b.run() } }
        var configuration = HTTPCache.Configuration(kind: .shared)
        configuration.name = "a"
        configuration.clock = clock.cacheClock
        configuration.sharedTier = level.node()
        configuration.sharedLevel.waitClock = waitClock
        configuration.sharedLevel.maximumPendingWrites = 1
        a = HTTPNode(
            cache: try HTTPCache(directory: scratch.url.appending(path: "a"), configuration: configuration),
            clock: clock
        )
        guard let shared = a.cache.levels.sharedLevel else { throw TestFailure("a has no shared level") }
        self.shared = shared
    }

    /// Moves the wait clock until `a` has sent every change it kept.
    func replayed() async throws {
        try await eventually {
            waitClock.advance(by: .seconds(5))
            return shared.pendingCount == 0
        }
    }
}

/// Two nodes, `a` and `b`, over one ``InMemorySharedLevel``, each with memory and a disk in its
/// own directory.
final class EngineFleet: Sendable {
    let level = InMemorySharedLevel()
    let clock = ManualClock(startingAt: t0)
    /// What the retries of kept changes wait on: they run only when a test advances it.
    let waitClock = SteppedClock()
    let scratch: TemporaryDirectory
    let a: any EngineNode
    let b: any EngineNode

    /// The nodes named in `running` run (apply other nodes' invalidations) from the start.
    init(_ facade: Facade, running: Set<String> = [], _ name: String = #function) throws {
        scratch = try TemporaryDirectory("\(name)-\(facade.rawValue)")
        let (scratch, level, clock, waitClock) = (scratch, level, clock, waitClock)
        func node(_ name: String) throws -> any EngineNode {
            let directory = scratch.url.appending(path: name)
            let node: any EngineNode =
                switch facade {
                case .hybrid:
                    try HybridNode(
                        directory: directory,
                        tier: level.node(),
                        clock: clock,
                        waitClock: waitClock,
                        name: name
                    )
                case .http:
                    try HTTPNode(
                        directory: directory,
                        tier: level.node(),
                        clock: clock,
                        waitClock: waitClock,
                        name: name
                    )
                }
            if running.contains(name) { Task { try await node.run() } }
            return node
        }
        a = try node("a")
        b = try node("b")
    }

    /// Shuts the level down, which ends the nodes' runs (in a `defer`, which also keeps the
    /// fleet and its directory alive to the end of the test).
    func close() { level.shutDown() }
}

struct HybridNode: EngineNode {
    let cache: HybridCache<String>

    init(directory: URL, tier: InMemorySharedTier, clock: ManualClock, waitClock: SteppedClock, name: String) throws {
        var memory = MemoryCache<String, String>.Configuration(name: name)
        memory.memoryPressureSource = nil
        memory.clock = clock.cacheClock
        var disk = DiskCache.Configuration(name: name)
        disk.clock = clock.cacheClock
        var options = SharedTierOptions()
        options.waitClock = waitClock
        cache = HybridCache(
            memory: try MemoryCache(configuration: memory),
            disk: try DiskCache(directory: directory, configuration: disk),
            serializer: StringSerializer(),
            shared: tier,
            configuration: HybridCache.Configuration(sharedLevel: options)
        )
    }

    func write(_ value: String, forKey key: String) async throws { try await cache.setValue(value, forKey: key) }
    func read(_ key: String) async throws -> String? { try await cache.value(forKey: key) }
    func remove(_ key: String) async throws { try await cache.removeValue(forKey: key) }
    func apply(_ invalidation: SharedCacheInvalidation) async { await cache.apply(invalidation) }
    func run() async throws { try await cache.run() }
    var pendingSharedWrites: Int { cache.pendingSharedWrites }
    var replaysFoundUnderWay: Int { cache.levels.sharedLevel?.replaysFoundUnderWay.load(ordering: .relaxed) ?? 0 }
    var sharedTierFailures: Int { cache.sharedTierFailures }
    func storedKey(_ key: String) -> String { key }

    func hasLocalCopy(_ key: String) async throws -> Bool {
        let onDisk = try await cache.disk.data(forKey: key) != nil
        return onDisk || cache.levels.memory.value(forKey: key) != nil
    }
}

struct HTTPNode: EngineNode {
    let cache: HTTPCache
    let clock: ManualClock

    init(cache: HTTPCache, clock: ManualClock) {
        self.cache = cache
        self.clock = clock
    }

    init(directory: URL, tier: InMemorySharedTier, clock: ManualClock, waitClock: SteppedClock, name: String) throws {
        var configuration = HTTPCache.Configuration(kind: .shared)
        configuration.name = name
        configuration.clock = clock.cacheClock
        configuration.sharedTier = tier
        configuration.sharedLevel.waitClock = waitClock
        cache = try HTTPCache(directory: directory, configuration: configuration)
        self.clock = clock
    }

    func request(for key: String) -> HTTPRequest {
        StowageHTTPCacheTests.request(.get, "/" + key)
    }

    func write(_ value: String, forKey key: String) async throws {
        let origin = TestOrigin { [clock] _, _ in ok(value, [("Cache-Control", "max-age=3600")], clock: clock) }
        let served = try await cache.respond(
            to: request(for: key),
            policy: .reloadIgnoringLocalCacheData,
            fetch: origin.fetch
        )
        _ = try await text(served)
    }

    func read(_ key: String) async throws -> String? {
        // A miss reaches this origin, whose answer is not stored.
        let origin = TestOrigin { _, _ in (response(404, [("Cache-Control", "no-store")], date: t0), []) }
        let served = try await cache.respond(
            to: request(for: key),
            policy: .returnCacheDataElseLoad,
            fetch: origin.fetch
        )
        let body = try await text(served)
        return origin.count == 0 ? body : nil
    }

    func remove(_ key: String) async throws { try await cache.removeResponses(for: request(for: key)) }
    func apply(_ invalidation: SharedCacheInvalidation) async { await cache.apply(invalidation) }
    func run() async throws { try await cache.run() }
    var pendingSharedWrites: Int { cache.levels.sharedLevel?.pendingCount ?? 0 }
    var replaysFoundUnderWay: Int { cache.levels.sharedLevel?.replaysFoundUnderWay.load(ordering: .relaxed) ?? 0 }
    var sharedTierFailures: Int { cache.levels.sharedLevel?.health.failureTotal ?? 0 }
    func storedKey(_ key: String) -> String { HTTPCache.recordKey(cache.rules.key(for: request(for: key))) }

    func hasLocalCopy(_ key: String) async throws -> Bool {
        let recordKey = storedKey(key)
        let onDisk = try await cache.disk?.data(forKey: recordKey) != nil
        return onDisk || cache.levels.memory.value(forKey: recordKey) != nil
    }
}

/// A tier that fails bans with a transport error while `failing`, then answers that it cannot
/// send bans at all (`.unsupported`), as a tier behind a circuit breaker that wraps every call
/// would; everything else goes to `base`.
final class BanRefusingTier: SharedCacheTier {
    let base: InMemorySharedTier
    let failing = Atomic<Bool>(true)
    let banCalls = Atomic<Int>(0)

    init(_ base: InMemorySharedTier) { self.base = base }

    func entry(forKey key: String) async throws -> SharedCacheEntry? { try await base.entry(forKey: key) }
    func setData(_ data: Data, forKey key: String, timeToLive: Duration?) async throws {
        try await base.setData(data, forKey: key, timeToLive: timeToLive)
    }
    func removeData(forKey key: String) async throws { try await base.removeData(forKey: key) }
    func invalidations() -> AsyncStream<SharedCacheInvalidation> { base.invalidations() }
    func lockForLoading(key: String, lease: Duration) async throws -> SharedCacheLoadLock? {
        try await base.lockForLoading(key: key, lease: lease)
    }
    func isLockedForLoading(key: String) async throws -> Bool { try await base.isLockedForLoading(key: key) }
    func setData(
        _ data: Data,
        forKey key: String,
        timeToLive: Duration?,
        releasing lock: SharedCacheLoadLock
    ) async throws
        -> Bool
    { try await base.setData(data, forKey: key, timeToLive: timeToLive, releasing: lock) }
    func unlock(_ lock: SharedCacheLoadLock) async throws { try await base.unlock(lock) }
    func invalidate(keysWithPrefix prefix: String) async throws {
        banCalls.add(1, ordering: .relaxed)
        if failing.load(ordering: .relaxed) { throw TestFailure("the circuit is open") }
        throw StowageError(code: .unsupported, message: "this tier cannot send bans")
    }
}

extension SharedLevelEngineTests {
    @Test("a kept ban the level then says it cannot send (.unsupported) leaves the queue: it is not retried every 5 s")
    func keptBanUnsupportedOnReplay() async throws {
        let level = InMemorySharedLevel()
        defer { level.shutDown() }
        let scratch = try TemporaryDirectory()
        let waitClock = SteppedClock()
        let tier = BanRefusingTier(level.node())
        var configuration = HTTPCache.Configuration(kind: .shared)
        configuration.name = "a"
        configuration.clock = ManualClock(startingAt: t0).cacheClock
        configuration.sharedTier = tier
        configuration.sharedLevel.waitClock = waitClock
        let a = try HTTPCache(directory: scratch.url.appending(path: "a"), configuration: configuration)
        _ = try await a.invalidate(urlPrefix: "http://origin.test/img/")
        let shared = try #require(a.levels.sharedLevel)
        #expect(shared.pendingCount == 1)
        tier.failing.store(false, ordering: .relaxed)
        await a.apply(.all)
        #expect(shared.pendingCount == 0, "a ban the level cannot send is not tried again")
        let calls = tier.banCalls.load(ordering: .relaxed)
        waitClock.advance(by: .seconds(5))
        waitClock.advance(by: .seconds(5))
        #expect(shared.pendingCount == 0)
        #expect(tier.banCalls.load(ordering: .relaxed) == calls)
    }
}
