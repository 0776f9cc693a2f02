import Foundation
import StowageCore
import StowageTestSupport
import Synchronization
import Testing

@testable import StowageCache

// Every test uses a source of its own: `MemoryPressureSource.shared` is process-wide.
@Suite struct MemoryPressureSourceTests {
    // MARK: - Notifying handlers

    @Test("notify reaches every registered handler once, and none after unregistering")
    func notifyRegisteredHandlers() {
        let source = MemoryPressureSource()
        let first = PressureRecorder()
        let second = PressureRecorder()
        source.register(first)
        source.register(first)  // a second registration is ignored
        source.register(second)

        source.notify(.warning)
        source.unregister(second)
        source.notify(.critical)

        #expect(first.levels == [.warning, .critical])
        #expect(second.levels == [.warning])
    }

    @Test("handlers are held weakly")
    func handlersAreWeak() {
        let source = MemoryPressureSource()
        weak var released: PressureRecorder?
        do {
            let temporary = PressureRecorder()
            released = temporary
            source.register(temporary)
        }
        #expect(released == nil)
        let kept = PressureRecorder()
        source.register(kept)
        source.notify(.warning)
        #expect(kept.levels == [.warning])
    }

    @Test("a cache registers with its configured source and trims itself on its notifications")
    func cacheFollowsItsSource() throws {
        let source = MemoryPressureSource()
        let reasons = Mutex<[EvictionReason]>([])
        var configuration = MemoryCache<Int, String>.Configuration(name: "pressure")
        configuration.memoryPressureSource = source
        configuration.onEviction = { _, _, reason in reasons.withLock { $0.append(reason) } }
        let cache = try MemoryCache(configuration: configuration)
        for key in 0..<8 { cache.setValue("\(key)", forKey: key, cost: 1) }

        source.notify(.warning)
        #expect(cache.count == 4)
        #expect(cache.value(forKey: 7) == "7")
        #expect(cache.value(forKey: 0) == nil)

        source.notify(.critical)
        #expect(cache.count == 0)
        #expect(reasons.withLock { $0 }.count == 8)
        #expect(reasons.withLock { $0 }.allSatisfy { $0 == .memoryPressure })
    }

    // MARK: - Watching the system

    @Test("run either watches the system's signal until cancelled, or throws unsupported saying why")
    func runWatchesOrExplains() async throws {
        let source = MemoryPressureSource()
        let first = Task { try await source.run() }
        guard try await Self.waitUntilRunning(source, orEnded: first) else {
            let error = await #expect(throws: StowageError.self) { try await first.value }
            #expect(error?.code == .unsupported)
            #expect(error.map { $0.message.contains("PSI") || $0.message.contains("platform") } == true)
            #expect(error?.message.contains("notify") == true)
            #expect(!source.isRunning)
            return
        }
        // A second run while the first watches is refused, and leaves the first watching.
        let second = await #expect(throws: StowageError.self) { try await source.run() }
        #expect(second?.code == .busy)
        #expect(source.isRunning)
        first.cancel()
        try await first.value
        #expect(!source.isRunning)

        // It can run again after it returned.
        let again = Task { try await source.run() }
        #expect(try await Self.waitUntilRunning(source, orEnded: again))
        again.cancel()
        try await again.value
        #expect(!source.isRunning)
    }

    /// Whether `source` is watching within a few seconds; `false` once `task` has ended without.
    private static func waitUntilRunning(
        _ source: MemoryPressureSource,
        orEnded task: Task<Void, any Error>
    ) async throws -> Bool {
        let ended = Mutex(false)
        let watcher = Task {
            _ = try? await task.value
            ended.withLock { $0 = true }
        }
        defer { watcher.cancel() }
        try await eventually { source.isRunning || ended.withLock { $0 } }
        return source.isRunning
    }

    @Test("the default trigger is 150 ms of stall within a 2 s window")
    func defaultTrigger() {
        #expect(MemoryPressureSource.Configuration().trigger == "some 150000 2000000")
        let custom = MemoryPressureSource.Configuration(stallThreshold: .microseconds(500), window: .seconds(4))
        #expect(custom.trigger == "some 500 4000000")
    }

    #if os(Linux)
    @Test("a missing PSI file is reported as unsupported, naming the file and what to do")
    func missingFileIsUnsupported() {
        let path = "/nonexistent/stowage/memory.pressure"
        #expect {
            _ = try PressureWatcher.start(candidates: [path], configuration: .init(), trigger: "some 150000 2000000") {
                _ in
            }
        } throws: { error in
            guard let error = error as? StowageError else { return false }
            return error.code == .unsupported && error.path == path && error.message.contains(path)
                && error.message.contains("ENOENT") && error.message.contains("CONFIG_PSI")
                && error.message.contains("MemoryCache.handleMemoryPressure")
        }
    }

    @Test("end to end through a stall file: some avg10 over the threshold trims the cache, full avg10 empties it")
    func stallFileEndToEnd() async throws {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "memory.pressure")
        func write(some: Double, full: Double) throws {
            // In place (the watcher holds the file open), as the kernel's file changes.
            let text =
                "some avg10=\(some) avg60=0.00 avg300=0.00 total=1\nfull avg10=\(full) avg60=0.00 avg300=0.00 total=1\n"
            try Data(text.utf8).write(to: file)
        }
        try write(some: 0, full: 0)
        // A long window: one warning (one trim to half) however slowly this test looks; the
        // escalation to critical is not held back by it.
        var configuration = MemoryPressureSource.Configuration(window: .seconds(60))
        configuration.stallFiles = [file.path]
        configuration.pollInterval = .milliseconds(10)
        let source = MemoryPressureSource(configuration: configuration)
        var cacheConfiguration = MemoryCache<Int, Int>.Configuration(name: "pressure-e2e")
        cacheConfiguration.memoryPressureSource = source
        let cache = try MemoryCache<Int, Int>(configuration: cacheConfiguration)
        for key in 0..<100 { cache.setValue(key, forKey: key, cost: 1) }
        let watching = Task { try await source.run() }
        defer { watching.cancel() }
        try await eventually { source.isRunning }
        // The file shows no pressure: nothing is dropped (the steps below prove the watcher
        // reads the file; a watcher that trimmed without pressure would leave fewer here or below).
        #expect(cache.count == 100, "no pressure, nothing dropped")

        try write(some: 25.5, full: 0.5)
        try await eventually { cache.count <= 50 }
        #expect(cache.count <= 50 && cache.count > 0, "a warning trims to half: \(cache.count)")

        try write(some: 60, full: 30)
        try await eventually { cache.count == 0 }
        #expect(cache.count == 0, "critical empties the cache")
        watching.cancel()
        try await watching.value
        #expect(!source.isRunning)
    }

    @Test("PSI averages parse from the kernel's format; a file without a some line is no reading")
    func averagesParse() {
        let averages = PressureStallFiles.Averages(
            parsing:
                "some avg10=12.50 avg60=1.00 avg300=0.10 total=100\nfull avg10=3.25 avg60=0.00 avg300=0.00 total=5\n"
        )
        #expect(averages == PressureStallFiles.Averages(parsing: "some avg10=12.5\nfull avg10=3.25"))
        #expect(averages?.someAverage10 == 12.5 && averages?.fullAverage10 == 3.25)
        #expect(PressureStallFiles.Averages(parsing: "full avg10=3.00") == nil)
        #expect(PressureStallFiles.Averages(parsing: "some avg10=nan") == nil)
    }

    @Test("a trigger the kernel refuses is reported as unsupported, never as started")
    func refusedTriggerIsUnsupported() {
        #expect {
            _ = try PressureWatcher.start(
                candidates: PressureStallFiles.candidates(),
                configuration: .init(),
                trigger: "nonsense"
            ) { _ in }
        } throws: { error in
            guard let error = error as? StowageError, error.code == .unsupported else { return false }
            // EINVAL where the kernel has PSI; ENOENT or another reason where it has not.
            return error.message.contains("refused the trigger 'nonsense'") || error.message.contains("ENOENT")
                || error.message.contains("PSI")
        }
    }

    @Test("the cgroup v2 memory.pressure path is absolute, or absent without cgroup v2")
    func cgroupPath() {
        let candidates = PressureStallFiles.candidates()
        #expect(candidates.last == "/proc/pressure/memory")
        if let path = PressureStallFiles.cgroupMemoryPressurePath() {
            #expect(path.hasPrefix("/"))
            #expect(path.hasSuffix("/memory.pressure"))
            #expect(!path.contains("//"))
        }
    }
    #endif
}

/// Remembers the levels it was notified of.
private final class PressureRecorder: MemoryPressureHandling {
    private let received = Mutex<[MemoryPressureLevel]>([])
    var levels: [MemoryPressureLevel] { received.withLock { $0 } }
    func handleMemoryPressure(_ level: MemoryPressureLevel) { received.withLock { $0.append(level) } }
}
