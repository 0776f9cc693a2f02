import Foundation
import StowageCache
import StowageRedis
import StowageRedisTestSupport
import StowageSharedTier
import StowageTestSupport
import Synchronization

/// One in-process node: memory, disk in `directory/name`, and a Redis tier; unless `running`
/// is `false`, it runs (hears other nodes' invalidations) until the tier shuts down.
func makeNode(
    url: String,
    namespace: String,
    scratch: TemporaryDirectory,
    name: String,
    options: SharedTierOptions = SharedTierOptions(),
    invalidations: RedisSharedTier.InvalidationTransport = .automatic,
    tierOptions: RedisSharedTier.Options = .generous,
    running: Bool = true,
    configure: (inout RedisConfiguration) -> Void = { _ in }
) async throws -> (HybridCache<String>, RedisSharedTier) {
    let tier = try await RedisSharedTier.connect(
        url: url,
        namespace: namespace,
        invalidations: invalidations,
        options: tierOptions
    ) { configuration in
        // Hang catchers only: the suites run in parallel on a small machine beside a CPU hog,
        // where a healthy Redis can take any time at all to answer or to subscribe.
        configuration.connectTimeout = .seconds(300)
        configuration.commandTimeout = .seconds(300)
        configure(&configuration)
    }
    guard await tier.waitUntilSubscribed(timeout: .seconds(300)) else { throw TestFailure("not subscribed") }
    // No memory-pressure source: the machine's PSI (other jobs' memory tests) must not empty the
    // memory level in the middle of an invalidation test.
    var memoryConfiguration = MemoryCache<String, String>.Configuration(name: name)
    memoryConfiguration.memoryPressureSource = nil
    let cache = HybridCache(
        memory: try MemoryCache<String, String>(configuration: memoryConfiguration),
        disk: try DiskCache(directory: scratch.url.appending(path: name), configuration: .init(name: name)),
        serializer: StringSerializer(),
        shared: tier,
        configuration: HybridCache.Configuration(sharedLevel: options)
    )
    // Runs until the test shuts the tier down (its invalidation stream ends).
    if running { Task { try await cache.run() } }
    return (cache, tier)
}

/// A redis-server and the in-process nodes one test makes on it; `close()` (in a `defer`) shuts
/// the nodes' tiers down and removes the server.
///
/// ```swift
/// let fleet = try await Fleet()
/// defer { fleet.close() }
/// let (a, _) = try await fleet.node(namespace: "t2", name: "a")
/// ```
final class Fleet: Sendable {
    let server: RedisServerProcess
    /// Where each node keeps its disk level (`scratch/NAME`).
    let scratch: TemporaryDirectory
    private let tiers = Mutex<[RedisSharedTier]>([])

    init(_ name: String = #function) async throws {
        server = try await RedisServerProcess.start()
        scratch = try TemporaryDirectory(name)
    }

    /// A node made by `makeNode(…)` on this fleet's server and scratch directory, shut down
    /// with the fleet.
    func node(
        namespace: String,
        name: String,
        options: SharedTierOptions = SharedTierOptions(),
        invalidations: RedisSharedTier.InvalidationTransport = .automatic,
        tierOptions: RedisSharedTier.Options = .generous,
        running: Bool = true,
        configure: (inout RedisConfiguration) -> Void = { _ in }
    ) async throws -> (HybridCache<String>, RedisSharedTier) {
        let node = try await makeNode(
            url: server.url,
            namespace: namespace,
            scratch: scratch,
            name: name,
            options: options,
            invalidations: invalidations,
            tierOptions: tierOptions,
            running: running,
            configure: configure
        )
        tiers.withLock { $0.append(node.1) }
        return node
    }

    /// Shuts the nodes' tiers down (in a task: a `defer` cannot wait) and removes the server.
    func close() {
        let tiers = tiers.withLock { $0 }
        Task { for tier in tiers { await tier.shutdown() } }
        server.remove()
    }
}

/// A `StowageTestWorker shared-tier` child process driven line by line.
final class WorkerNode: Sendable {
    private let process: ChildProcess
    private let input: FileHandle
    private let lines: AsyncStream<String>

    init(url: String, namespace: String, directory: URL) throws {
        process = TestWorker.process("shared-tier", [url, namespace, directory.path])
        let stdin = childPipe()
        let stdout = childPipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        input = stdin.fileHandleForWriting
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let reader = stdout.fileHandleForReading
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    continuation.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
            continuation.finish()
        }
        lines = stream
        try process.run()
    }

    func send(_ line: String) {
        input.write(Data((line + "\n").utf8))
    }

    /// The next line starting with `prefix` (or `miss` when `orMiss`, or matching `also`),
    /// skipping others, or an error when none came within `timeout` (a hang catch).
    func line(
        startingWith prefix: String,
        orMiss: Bool = false,
        timeout: Duration = .seconds(60),
        also: @escaping @Sendable (String) -> Bool = { _ in false }
    ) async throws -> String {
        try await firstResult(within: timeout, "no '\(prefix)' line from the worker") { [self] in
            for await line in lines where line.hasPrefix(prefix) || (orMiss && line.hasPrefix("miss")) || also(line) {
                return line
            }
            throw TestFailure("the worker exited while waiting for '\(prefix)'")
        }
    }

    func stop() {
        send("quit")
        process.waitUntilExit()
    }

}

/// The first invalidation in `stream` that `predicate` accepts, or an error when none came
/// within `timeout` (a hang catch, at least a minute).
func firstInvalidation(
    in stream: AsyncStream<SharedCacheInvalidation>,
    within timeout: Duration,
    where predicate: @escaping @Sendable (SharedCacheInvalidation) -> Bool = { _ in true }
) async throws -> SharedCacheInvalidation? {
    try await firstResult(within: max(timeout, .seconds(60)), "no matching invalidation") {
        for await invalidation in stream where predicate(invalidation) { return invalidation }
        return nil
    }
}

/// What `body` returns or throws, or `TestFailure("\(what) within \(timeout)")` when it has
/// neither by then (`body` is cancelled). The wait is ``eventually``'s: it only catches hangs.
private func firstResult<T: Sendable>(
    within timeout: Duration,
    _ what: String,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = Outcome<T>()
    let task = Task {
        do { outcome.set(.success(try await body())) } catch { outcome.set(.failure(error)) }
    }
    defer { task.cancel() }
    do {
        try await eventually(timeout: timeout) { outcome.result != nil }
    } catch {
        throw TestFailure("\(what) within \(timeout)")
    }
    return try outcome.result!.get()
}

/// The outcome of a task, once it has one.
private final class Outcome<T: Sendable>: Sendable {
    private let state = Mutex<Result<T, any Error>?>(nil)
    func set(_ result: Result<T, any Error>) { state.withLock { $0 = result } }
    var result: Result<T, any Error>? { state.withLock { $0 } }
}

extension RedisSharedTier.Options {
    /// A request budget that never runs out on its own: it is measured by a clock no one moves.
    /// The suites run in parallel on a small, shared machine beside a CPU hog, where a healthy
    /// Redis can take any time at all; a test of the budget itself sets its own clock and moves it.
    static var generous: RedisSharedTier.Options {
        var options = RedisSharedTier.Options()
        options.requestBudget = .seconds(30)
        options.requestBudgetClock = SteppedClock()
        return options
    }
}
