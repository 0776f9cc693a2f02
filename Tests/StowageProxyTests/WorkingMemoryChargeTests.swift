import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import NIOHTTP1
import StowageCache
import StowageCore
import StowageHTTPClient
import StowageHTTPTestSupport
import StowageTestSupport
import StowageTesting
import Synchronization
import Testing

@testable import StowageHTTPCache
@testable import StowageProxy

/// `--memory-capacity` bounds the proxy's memory under load, not only its memory level: the
/// working memory of the most requests in flight at once (within a minute) is set aside from the capacity
/// (``WorkingMemoryCharge``), up to half of it, and the level evicts to fit in the rest.
@Suite struct WorkingMemoryChargeTests {
    static let capacity = 4_000_000
    static let perRequest = WorkingMemoryCharge.bytesPerRequest

    /// An origin that holds every request under `/held/` until the test opens `release`, and
    /// opens `arrived` once `expected` of them have come; every other path answers 100 kB at once.
    final class HoldingOrigin: Sendable {
        let arrived = Gate()
        let release = Gate()
        private let expected: Int
        private let held = Mutex(0)

        init(expected: Int) { self.expected = expected }

        var script: TestOriginServer.Script {
            { received in
                let path = received.head.path ?? "/"
                if path.hasPrefix("/held/") {
                    let count = self.held.withLock { count in
                        count += 1
                        return count
                    }
                    if count == self.expected { self.arrived.open() }
                    await self.release.wait()
                    return .init(fields: [("Cache-Control", "max-age=600")], body: "held")
                }
                return .init(
                    fields: [("Cache-Control", "max-age=600")],
                    body: String(repeating: "x", count: 100_000)
                )
            }
        }
    }

    @Test(
        "requests in flight through the proxy set their memory aside, the level evicts to fit, and the status says so"
    )
    func requestsInFlightSetMemoryAside() async throws {
        let inFlight = 5
        let origin = HoldingOrigin(expected: inFlight)
        try await ProxyHarness.run(
            configure: {
                $0.cache.memoryCapacity = ByteCount(Int64(Self.capacity))
                $0.admin = .init(port: 0)
            },
            script: origin.script
        ) { h in
            let cache = try #require(h.cache)
            // Fill the memory level: 60 responses of 100 kB, more than its 4 MB, each asked for
            // twice (a miss stores it on disk; the hit from disk keeps it in memory).
            for n in 0..<60 {
                for _ in 0..<2 { #expect(try await h.get("/fill/\(n)").status == 200) }
            }
            #expect(cache.memorySetAside.rawValue == Int64(Self.perRequest), "one request at a time so far")
            let before = cache.memoryUsage.rawValue
            #expect(before > Int64(Self.capacity) * 3 / 4, "the level is full: \(before)")
            defer { origin.release.open() }
            try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<inFlight {
                    group.addTask { try await h.get("/held/\(n)").status }
                }
                await origin.arrived.wait()
                let aside = Int64(inFlight * Self.perRequest)
                #expect(cache.memorySetAside.rawValue == aside)
                #expect(cache.memoryUsage.rawValue <= Int64(Self.capacity) - aside)
                let status = try ProxyStatus.decode(try await h.admin(.GET, "/status.json").body)
                #expect(status.cache.memory.setAsideBytes == aside)
                #expect(status.cache.memory.bytes <= Int64(Self.capacity) - aside)
                origin.release.open()
                for try await code in group { #expect(code == 200) }
            }
            // Within the minute of the burst, what is set aside stays.
            #expect(try await h.get("/fill/0").status == 200)
            #expect(cache.memorySetAside.rawValue == Int64(inFlight * Self.perRequest))
            let status = try ProxyStatus.decode(try await h.admin(.GET, "/status.json").body)
            #expect(status.cache.disk?.setAsideBytes == nil)
        }
    }

    @Test("a response whose body streams to the client is charged until its last byte is written")
    func streamingBodyStaysCharged() async throws {
        let streams = 5
        let release = ScriptedUpstream.Release()
        defer { release.open() }
        // Chunked, so the proxy streams the body as it arrives instead of reading it whole first.
        let origin = try ScriptedUpstream { _ in
            .sendHolding(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=600\r\n\r\n5\r\nhello\r\n",
                until: release,
                then: "0\r\n\r\n"
            )
        }
        defer { origin.stop() }
        try await ProxyHarness.run(
            upstream: origin.baseURL,
            configure: { $0.cache.memoryCapacity = ByteCount(Int64(Self.capacity)) },
            script: { _ in .init() }
        ) { h in
            let cache = try #require(h.cache)
            let charge = try #require(h.proxy).workingMemory
            let port = h.proxyPort
            // One after another: each client has the head and the first chunk of its response,
            // the rest held by the origin, before the next asks.
            var sockets: [RawSocket] = []
            for n in 0..<streams {
                let socket = try await onOwnThread { () -> RawSocket in
                    let socket = try RawSocket(port: port)
                    socket.send("GET /stream/\(n) HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                    _ = socket.readHead()
                    return socket
                }
                sockets.append(socket)
            }
            #expect(charge.current == streams, "every stream is still being written")
            #expect(cache.memorySetAside.rawValue == Int64(streams * Self.perRequest))
            release.open()
            for socket in sockets {
                _ = try await onOwnThread { socket.readUntilClosed() }
            }
            try await eventually { charge.current == 0 }
            #expect(charge.peak == streams)
        }
    }

    @Test("every way a request leaves the proxy ends its count, and later requests still raise the peak")
    func everyExitEndsTheCount() async throws {
        let first = ScriptedUpstream.Release()
        let second = ScriptedUpstream.Release()
        defer {
            first.open()
            second.open()
        }
        let streamed =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=600\r\n\r\n5\r\nhello\r\n"
        let origin = try ScriptedUpstream { received in
            if received.path == "/close" { return .close }
            if received.path.hasPrefix("/first/") { return .sendHolding(streamed, until: first, then: "0\r\n\r\n") }
            if received.path.hasPrefix("/second/") { return .sendHolding(streamed, until: second, then: "0\r\n\r\n") }
            return .send(ok("fine", "Cache-Control: no-store"))
        }
        defer { origin.stop() }
        try await ProxyHarness.run(
            upstream: origin.baseURL,
            configure: {
                $0.cache.memoryCapacity = ByteCount(Int64(Self.capacity))
                $0.maximumRequestBodySize = ByteCount(1_000)
            },
            script: { _ in .init() }
        ) { h in
            let cache = try #require(h.cache)
            let charge = try #require(h.proxy).workingMemory
            let port = h.proxyPort
            let answered = [
                "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",  // 501
                "GET /no-host HTTP/1.1\r\nConnection: close\r\n\r\n",  // 400
                "POST /big HTTP/1.1\r\nHost: proxy\r\nContent-Length: 2000\r\n\r\n"
                    + String(repeating: "b", count: 2_000),  // 413
                "GET /close HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n",  // 502
            ]
            for request in answered {
                let response = try await RawSocket.exchange(request, port: port)
                #expect(response != nil, "\(request.prefix(20))")
            }
            // Clients that leave mid-way: with a body half sent, and with a streamed response
            // half read (the origin holds the rest).
            try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("POST /half HTTP/1.1\r\nHost: proxy\r\nContent-Length: 100\r\n\r\n0123456789")
            }
            try await onOwnThread {
                let socket = try RawSocket(port: port)
                socket.send("GET /first/left HTTP/1.1\r\nHost: proxy\r\n\r\n")
                _ = socket.readHead()
            }
            first.open()
            try await eventually { charge.current == 0 }
            // Later requests in flight at once still raise what is set aside past the peak so far.
            let before = charge.peak
            let streams = before + 2
            var sockets: [RawSocket] = []
            for n in 0..<streams {
                let socket = try await onOwnThread { () -> RawSocket in
                    let socket = try RawSocket(port: port)
                    socket.send("GET /second/\(n) HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
                    _ = socket.readHead()
                    return socket
                }
                sockets.append(socket)
            }
            #expect(charge.current == streams)
            #expect(charge.peak == streams)
            #expect(cache.memorySetAside.rawValue == Int64(streams * Self.perRequest))
            second.open()
            for socket in sockets {
                _ = try await onOwnThread { socket.readUntilClosed() }
            }
            try await eventually { charge.current == 0 }
        }
    }

    @Test("a hit kept as bytes for the event loop and evicted by a set-aside is not answered again")
    func evictedPreparedHitIsNotAnswered() async throws {
        let origin = HoldingOrigin(expected: 1)
        try await ProxyHarness.run(
            configure: {
                $0.cache.memoryCapacity = ByteCount(Int64(Self.capacity))
                $0.cache.diskCapacity = ByteCount(0)  // memory only: what memory lets go is a miss
            },
            script: origin.script
        ) { h in
            let cache = try #require(h.cache)
            let charge = try #require(h.proxy).workingMemory
            // A miss, then hits answered on the event loop from the bytes kept for them.
            for _ in 0..<3 { #expect(try await h.get("/a").status == 200) }
            #expect(h.origin.requestCount(path: "/a") == 1)
            // 2.5 MB more, within the 4 MB: /a and its kept answer are now the least recently used.
            for n in 0..<25 { #expect(try await h.get("/fill/\(n)").status == 200) }
            #expect(cache.memoryUsage.rawValue > Int64(Self.capacity / 2))
            let version = cache.memory.contentVersion
            for _ in 0..<100 { charge.begin() }
            for _ in 0..<100 { charge.end() }
            #expect(cache.memorySetAside.rawValue == Int64(Self.capacity / 2))
            #expect(cache.memoryUsage.rawValue <= Int64(Self.capacity / 2))
            #expect(cache.memory.contentVersion != version)
            let again = try await h.get("/a")
            #expect(again.status == 200 && again.body.count == 100_000)
            #expect(h.origin.requestCount(path: "/a") == 2, "evicted: asked of the origin again")
        }
    }

    @Test("a burst's memory stays set aside for a window after it, then the level gets its room back")
    func burstFallsBackAfterAWindow() async throws {
        try await UnrunProxy.with(memoryCapacity: Int64(Self.capacity)) { proxy in
            let clock = SteppedClock()
            let charge = WorkingMemoryCharge(cache: proxy.cache, clock: clock)
            func setAside() -> Int64 { proxy.cache.memorySetAside.rawValue }
            func one() {
                charge.begin()
                charge.end()
            }
            // Clients hold 100 requests open, past the half of the capacity, then leave.
            for _ in 0..<100 { charge.begin() }
            for _ in 0..<100 { charge.end() }
            #expect(setAside() == Int64(Self.capacity / 2))
            clock.advance(by: .seconds(30))
            one()
            #expect(setAside() == Int64(Self.capacity / 2), "within the window of the burst")
            clock.advance(by: .seconds(31))
            one()
            #expect(setAside() == Int64(Self.capacity / 2), "the window that ended had the burst")
            clock.advance(by: WorkingMemoryCharge.window)
            one()
            #expect(setAside() == Int64(Self.perRequest), "a window of one request at a time")
            #expect(charge.peak == 1)
            // The level grows back into the room given back.
            for n in 0..<4_000 {
                proxy.cache.memory.setValue(.body([UInt8](repeating: 1, count: 900)), forKey: "k\(n)", cost: 1_000)
            }
            #expect(proxy.cache.memoryUsage.rawValue > Int64(Self.capacity * 9 / 10))
            // The next burst is charged at once, whatever the window.
            for _ in 0..<10 { charge.begin() }
            #expect(setAside() == Int64(10 * Self.perRequest))
            #expect(proxy.cache.memoryUsage.rawValue <= Int64(Self.capacity - 10 * Self.perRequest))
            for _ in 0..<10 { charge.end() }
        }
    }

    @Test(
        "windows end on time with no request to notice them: a proxy answering only on the event loop gets its room back"
    )
    func windowsEndWithoutRequests() async throws {
        try await UnrunProxy.with(memoryCapacity: Int64(Self.capacity)) { proxy in
            let clock = SteppedClock()
            let charge = WorkingMemoryCharge(cache: proxy.cache, clock: clock)
            let windows = Task { try await WorkingMemoryWindows(charge: charge).run() }
            defer { windows.cancel() }
            for _ in 0..<100 { charge.begin() }
            for _ in 0..<100 { charge.end() }
            #expect(proxy.cache.memorySetAside.rawValue == Int64(Self.capacity / 2))
            // No request begins from here on: only the windows' check ends them.
            var waited = Duration.zero
            while waited < WorkingMemoryCharge.window * 2 + .seconds(1) {
                try await eventually { clock.sleeperCount > 0 }
                clock.advance(by: WorkingMemoryCharge.window / 4)
                waited += WorkingMemoryCharge.window / 4
            }
            try await eventually { proxy.cache.memorySetAside.rawValue == 0 }
            #expect(charge.peak == 0)
            windows.cancel()
            try await windows.value
        }
    }

    @Test("requests in flight across the end of a window keep their memory set aside")
    func inFlightAcrossAWindow() async throws {
        try await UnrunProxy.with(memoryCapacity: Int64(Self.capacity)) { proxy in
            let clock = SteppedClock()
            let charge = WorkingMemoryCharge(cache: proxy.cache, clock: clock)
            for _ in 0..<8 { charge.begin() }
            clock.advance(by: WorkingMemoryCharge.window * 3)
            charge.begin()
            charge.end()
            #expect(proxy.cache.memorySetAside.rawValue == Int64(9 * Self.perRequest), "8 in flight and the ninth")
            clock.advance(by: WorkingMemoryCharge.window * 3)
            charge.end()
            // Windows end only when a request begins: the one that ends here had the ninth.
            clock.advance(by: WorkingMemoryCharge.window * 3)
            charge.begin()
            #expect(proxy.cache.memorySetAside.rawValue == Int64(9 * Self.perRequest))
            charge.end()
            clock.advance(by: WorkingMemoryCharge.window)
            charge.begin()
            #expect(proxy.cache.memorySetAside.rawValue == Int64(8 * Self.perRequest), "7 still in flight and one")
            charge.end()
            for _ in 0..<7 { charge.end() }
            #expect(charge.current == 0)
        }
    }

    @Test("a request that begins on another thread while a window ends keeps its memory set aside")
    func beginRacingTheEndOfAWindow() async throws {
        try await UnrunProxy.with(memoryCapacity: Int64(Self.capacity)) { proxy in
            let rounds = 40_000
            var below = 0
            for round in 0..<rounds {
                let clock = SteppedClock()
                let charge = WorkingMemoryCharge(cache: proxy.cache, clock: clock)
                // 20 set aside from a burst two windows back, and a window of one request since.
                for _ in 0..<20 { charge.begin() }
                for _ in 0..<20 { charge.end() }
                clock.advance(by: WorkingMemoryCharge.window)
                charge.begin()
                charge.end()
                clock.advance(by: WorkingMemoryCharge.window)
                // Two requests begin at once: one of them ends the window and lowers what is set
                // aside, the other must still find its memory set aside. The second starts a
                // little later each round, to fall in the lowering some rounds.
                let ready = Atomic<Int>(0)
                DispatchQueue.concurrentPerform(iterations: 2) { worker in
                    ready.wrappingAdd(1, ordering: .sequentiallyConsistent)
                    while ready.load(ordering: .sequentiallyConsistent) < 2 {}
                    for _ in 0..<(worker == 0 ? 0 : round % 400) {
                        ready.wrappingAdd(1, ordering: .relaxed)
                    }
                    charge.begin()
                }
                if charge.peak < charge.current { below += 1 }
                charge.end()
                charge.end()
                #expect(charge.current == 0)
            }
            #expect(below == 0, "set aside for fewer requests than in flight in \(below) of \(rounds) rounds")
        }
    }

    @Test("requests beginning and ending on many threads while windows end leave the count at zero and fall back")
    func manyThreadsAcrossWindows() async throws {
        try await UnrunProxy.with(memoryCapacity: Int64(Self.capacity)) { proxy in
            let clock = SteppedClock()
            let charge = WorkingMemoryCharge(cache: proxy.cache, clock: clock)
            let workers = 4
            let done = Atomic<Int>(0)
            let below = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: workers + 1) { worker in
                if worker == workers {
                    // Windows end every other step while the workers run.
                    while done.load(ordering: .relaxed) < workers {
                        clock.advance(by: WorkingMemoryCharge.window / 2)
                    }
                    return
                }
                for n in 0..<5_000 {
                    // Each worker holds up to 8 requests at once, so up to 32 are in flight.
                    let held = 1 + (n + worker) % 8
                    for _ in 0..<held { charge.begin() }
                    if charge.peak < held { below.wrappingAdd(1, ordering: .relaxed) }
                    for _ in 0..<held { charge.end() }
                }
                done.wrappingAdd(1, ordering: .relaxed)
            }
            #expect(below.load(ordering: .relaxed) == 0, "set aside for fewer than one worker held")
            #expect(charge.current == 0)
            // Two quiet windows of one request each: one request's memory is set aside.
            clock.advance(by: WorkingMemoryCharge.window)
            charge.begin()
            charge.end()
            clock.advance(by: WorkingMemoryCharge.window)
            charge.begin()
            charge.end()
            #expect(charge.peak == 1)
            #expect(proxy.cache.memorySetAside.rawValue == Int64(Self.perRequest))
        }
    }

    @Test("what is set aside follows the most requests in flight within a window, and stops at half the capacity")
    func followsThePeakUpToHalf() async throws {
        try await UnrunProxy.with(memoryCapacity: Int64(Self.capacity)) { proxy in
            let charge = proxy.workingMemory
            #expect(proxy.cache.memorySetAside.rawValue == 0)
            for _ in 0..<3 { charge.begin() }
            #expect(proxy.cache.memorySetAside.rawValue == Int64(3 * Self.perRequest))
            for _ in 0..<3 { charge.end() }
            charge.begin()
            charge.end()
            #expect(proxy.cache.memorySetAside.rawValue == Int64(3 * Self.perRequest), "a peak is kept")
            for _ in 0..<1_000 { charge.begin() }
            #expect(proxy.cache.memorySetAside.rawValue == Int64(Self.capacity / 2))
            #expect(proxy.cache.memory.costSetAside == Self.capacity / 2)
            for _ in 0..<1_000 { charge.end() }
            #expect(proxy.cache.memorySetAside.rawValue == Int64(Self.capacity / 2))
        }
    }

    @Test("many requests beginning at once set aside the memory of the most of them, whatever the order")
    func concurrentBeginnings() async throws {
        try await UnrunProxy.with(memoryCapacity: 64_000_000) { proxy in
            let charge = proxy.workingMemory
            let count = 64
            let started = Gate()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        await started.wait()
                        charge.begin()
                    }
                }
                started.open()
            }
            #expect(charge.peak == count)
            #expect(proxy.cache.memorySetAside.rawValue == Int64(count * Self.perRequest))
        }
    }

    @Test(
        "odd capacities neither trap nor overflow: none, the largest, memory only",
        arguments: [(Int64(0), true), (Int64.max, true), (Int64(16_000_000), false)]
    )
    func oddCapacities(_ capacity: Int64, _ directory: Bool) async throws {
        try await UnrunProxy.with(memoryCapacity: capacity, onDisk: directory) { proxy in
            let charge = proxy.workingMemory
            for _ in 0..<100 { charge.begin() }
            let expected = min(Int64(100 * Self.perRequest), capacity / 2)
            #expect(proxy.cache.memorySetAside.rawValue == expected)
            #expect(proxy.cache.memory.costSetAside == Int(expected))
            for _ in 0..<100 { charge.end() }
            #expect(charge.current == 0)
        }
    }

    @Test("a memory level of a few bytes still serves: nothing is set aside past half of it")
    func tinyCapacity() async throws {
        try await UnrunProxy.with(memoryCapacity: 1) { proxy in
            let charge = proxy.workingMemory
            for _ in 0..<10 { charge.begin() }
            #expect(proxy.cache.memorySetAside.rawValue == 0)
            #expect(proxy.cache.memory.configuration.costLimit == 1)
        }
    }
}
