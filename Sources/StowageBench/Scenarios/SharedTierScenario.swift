import Foundation
import NIOCore
import NIOPosix
import StowageCache
import StowageProcessSupport
import StowageRedis
import StowageSharedTier
import Synchronization

/// `shared-tier.get-1KiB`, `shared-tier.set-1KiB` (and `-pipelined`): 16 concurrent callers
/// against a local `redis-server` the scenario starts; nanoseconds per operation (wall time /
/// operations, so the inverse of throughput).
///
/// - Unpipelined: each caller awaits each operation. Stowage goes through `RedisSharedTier`
///   (`entry(forKey:)`; `setData` = `SET` with the entry header) on the client's defaults: reads
///   share two pool connections among concurrent callers (auto-pipelining,
///   ``RedisConfiguration/multiplexedConnections``); writes go through the tier's one tracking
///   connection (`CLIENT TRACKING ON BCAST PREFIX bench:{= NOLOOP`), also auto-pipelined, and
///   carry no invalidation command: the server tells the other nodes. Baseline: `redis-benchmark
///   -t set,get -d 1024 -c 16 -P 1` on the same server in the same run. Set
///   `STOWAGE_BENCH_MULTIPLEXED=0` to give each read a connection of its own instead, and
///   `STOWAGE_BENCH_INVALIDATIONS=publish` for the fallback (`SET` on the pool, then the node's
///   coalesced invalidation `PUBLISH`).
/// - Pipelined: each caller sends 16 `GET`s/`SET`s per round trip with `RedisClient.pipeline`,
///   from a task on the client's `taskExecutor` (the event loop its connections live on), as
///   `redis-benchmark` runs its clients on the thread that reads their sockets. Baseline:
///   `redis-benchmark … -P 16`. The notes also give the same callers on the global executor.
///
/// `ok` means every get returned the 1 KiB that was set. Skipped (ok, no figures) when
/// redis-server, redis-cli or redis-benchmark is not installed.
struct SharedTierScenario: Scenario {
    enum Operation: String, Sendable { case get, set }

    let operation: Operation
    let isPipelined: Bool
    var name: String { "shared-tier.\(operation.rawValue)-1KiB" + (isPipelined ? "-pipelined" : "") }
    let callers = 16
    let depth = 16
    let keyCount = 1_000
    let valueSize = 1_024

    static let all: [any Scenario] = [
        SharedTierScenario(operation: .get, isPipelined: false),
        SharedTierScenario(operation: .set, isPipelined: false),
        SharedTierScenario(operation: .get, isPipelined: true), SharedTierScenario(operation: .set, isPipelined: true),
    ]

    func run(_ context: BenchContext) async throws -> ScenarioResult {
        guard RedisServerProcess.canBenchmark else {
            BenchContext.progress("\(name): skipped — install redis-server and redis-tools (apt) to run it")
            return ScenarioResult(
                name: name,
                unit: "ns/op",
                stowage: 0,
                baselines: [:],
                ok: true,
                notes: "skipped: redis-server, redis-cli or redis-benchmark is not installed"
            )
        }
        let server = try await RedisServerProcess.start()
        defer { server.remove() }
        var configuration = try RedisConfiguration(url: server.url)
        configuration.maximumConnections = callers
        if let shared = ProcessInfo.processInfo.environment["STOWAGE_BENCH_MULTIPLEXED"].flatMap({ Int($0) }) {
            configuration.multiplexedConnections = shared
        }
        if let threads = ProcessInfo.processInfo.environment["STOWAGE_BENCH_EL_THREADS"].flatMap({ Int($0) }) {
            configuration.eventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        }
        // The client's connections and the floor's share one loop, so both run their callers
        // on the same executor (the client's `taskExecutor`).
        let eventLoop = configuration.eventLoopGroup.next()
        configuration.eventLoopGroup = eventLoop
        let client = RedisClient(configuration: configuration)
        let publishes = ProcessInfo.processInfo.environment["STOWAGE_BENCH_INVALIDATIONS"] == "publish"
        let tier = try RedisSharedTier(
            client: client,
            namespace: "bench",
            invalidations: publishes ? .publish : .automatic
        )
        defer { Task { await tier.shutdown() } }
        guard await tier.waitUntilSubscribed(timeout: .seconds(30)) else {
            throw RedisError(code: .timeout, message: "the bench tier's invalidations did not start within 30 s")
        }
        let value = Data((0..<valueSize).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for index in 0..<keyCount { try await tier.setData(value, forKey: "k\(index)", timeToLive: nil) }
        let operations = isPipelined ? 320_000 : 100_000
        let baselineName = isPipelined ? "redis-benchmark-P16" : "redis-benchmark"
        var stowageTimes: [Double] = []
        var baselineTimes: [Double] = []
        var floorTimes: [Double] = []
        var globalExecutorTimes: [Double] = []
        var ok = true
        // `STOWAGE_BENCH_ONLY_STOWAGE=1` drops the baseline, to profile the client alone (`perf record`).
        let onlyStowage = ProcessInfo.processInfo.environment["STOWAGE_BENCH_ONLY_STOWAGE"] == "1"
        // `STOWAGE_BENCH_ONLY_FLOOR=1` times only the minimal NIO client (pipelined rows), to profile it alike.
        let onlyFloor = isPipelined && ProcessInfo.processInfo.environment["STOWAGE_BENCH_ONLY_FLOOR"] == "1"
        // Pipelined rows also time the least a Swift client on NIO does for the same rounds (see
        // MinimalPipelinedClient): the floor of this machine for a client built this way.
        let floorClient =
            isPipelined && !onlyStowage
            ? try await MinimalPipelinedClient.connect(
                host: "127.0.0.1",
                port: server.port,
                connections: configuration.multiplexedConnections,
                group: eventLoop
            ) : nil
        if let floorClient {
            _ = try await measureFloor(
                floorClient,
                executor: client.taskExecutor,
                value: value,
                operations: operations / 10
            )
        }
        // Warm up connections and code paths, then rotate the contenders' order per repetition.
        if !onlyFloor { _ = try await measure(tier: tier, client: client, value: value, operations: operations / 10) }
        // Contender 3: the pipelined callers on the global executor instead (notes only).
        let contenders =
            onlyStowage
            ? [0] : onlyFloor ? [2] : floorClient == nil ? [0, 1] : isPipelined ? [0, 1, 2, 3] : [0, 1, 2]
        for iteration in 0..<min(context.iterations, 3) {
            let shift = iteration % contenders.count
            for contender in contenders[shift...] + contenders[..<shift] {
                if contender == 0 || contender == 3 {
                    let (seconds, matches) = try await measure(
                        tier: tier,
                        client: client,
                        value: value,
                        operations: operations,
                        onClientExecutor: contender == 0
                    )
                    if contender == 0 {
                        stowageTimes.append(seconds * 1e9 / Double(operations))
                    } else {
                        globalExecutorTimes.append(seconds * 1e9 / Double(operations))
                    }
                    ok = ok && matches
                } else if contender == 1 {
                    let rates = try server.benchmark(
                        valueSize: valueSize,
                        clients: callers,
                        pipeline: isPipelined ? depth : 1,
                        requests: operations
                    )
                    baselineTimes.append(1e9 / rates[operation == .get ? "GET" : "SET"]!)
                } else if let floorClient {
                    let (seconds, matches) = try await measureFloor(
                        floorClient,
                        executor: client.taskExecutor,
                        value: value,
                        operations: operations
                    )
                    floorTimes.append(seconds * 1e9 / Double(operations))
                    ok = ok && matches
                }
            }
        }
        await floorClient?.close()
        let stowage = stowageTimes.isEmpty ? floorTimes[0] : stowageTimes.sorted()[stowageTimes.count / 2]
        let baseline = baselineTimes.isEmpty ? stowage : baselineTimes.sorted()[baselineTimes.count / 2]
        let floor = floorTimes.isEmpty ? nil : floorTimes.sorted()[floorTimes.count / 2]
        let globalExecutor =
            globalExecutorTimes.isEmpty ? nil : globalExecutorTimes.sorted()[globalExecutorTimes.count / 2]
        var baselines = [baselineName: baseline]
        if let floor { baselines["nio-minimal"] = floor }
        return ScenarioResult(
            name: name,
            unit: "ns/op",
            stowage: stowage,
            baselines: baselines,
            ok: ok,
            notes: "\(callers) concurrent callers, \(operations) ops of \(valueSize) B values over \(keyCount) keys"
                + (isPipelined
                    ? ", \(depth) commands per round trip (RedisClient.pipeline) from tasks on the client's taskExecutor"
                    : " through RedisSharedTier")
                + " on \(configuration.multiplexedConnections) shared connections"
                + (isPipelined || operation == .get
                    ? "" : tier.isTracking ? ", writes on the tracking connection" : ", writes on the pool + PUBLISH")
                + "; throughput stowage \(Int(1e9 / stowage)) ops/s vs \(baselineName) \(Int(1e9 / baseline)) ops/s "
                + "(\(BenchContext.format(baseline / stowage))x)"
                + (floor.map {
                    "; nio-minimal \(Int(1e9 / $0)) ops/s (\(BenchContext.format(baseline / $0))x of "
                        + "\(baselineName); stowage \(BenchContext.format($0 / stowage))x of nio-minimal)"
                } ?? "")
                + (globalExecutor.map {
                    "; callers on the global executor instead: stowage \(Int($0)) ns/op "
                        + "(\(BenchContext.format(baseline / $0))x of \(baselineName))"
                } ?? "")
        )
    }

    /// Seconds for `operations` operations by `callers` concurrent tasks, and whether every read matched.
    private func measure(
        tier: RedisSharedTier,
        client: RedisClient,
        value: Data,
        operations: Int,
        onClientExecutor: Bool = true
    ) async throws
        -> (Double, Bool)
    {
        let perCaller = operations / callers
        let mismatches = MismatchCount()
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask(executorPreference: isPipelined && onClientExecutor ? client.taskExecutor : nil) {
                    var index = caller * 7
                    if isPipelined {
                        let header = 12
                        let payload = RedisArgument(value)
                        for _ in 0..<(perCaller / depth) {
                            let commands = (0..<depth).map { offset -> RedisCommand in
                                let key = "bench:{=k\((index + offset) % keyCount)}"
                                return operation == .get
                                    ? .get(key) : .set("bench:raw:\((index + offset) % keyCount)", value: payload)
                            }
                            let replies = try await client.pipeline(commands)
                            if operation == .get,
                                replies.contains(where: { ($0.bytes?.readableBytes ?? 0) != valueSize + header })
                            {
                                mismatches.count.add(1, ordering: .relaxed)
                            }
                            index += depth
                        }
                    } else {
                        for _ in 0..<perCaller {
                            let key = "k\(index % keyCount)"
                            if operation == .get {
                                if try await tier.entry(forKey: key)?.data.count != valueSize {
                                    mismatches.count.add(1, ordering: .relaxed)
                                }
                            } else {
                                try await tier.setData(value, forKey: key, timeToLive: nil)
                            }
                            index += 1
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (seconds, mismatches.count.load(ordering: .relaxed) == 0)
    }
}

extension SharedTierScenario {
    /// Seconds for `operations` operations through ``MinimalPipelinedClient``: the same callers
    /// on the same executor, keys, values and depth as ``measure``, each caller encoding its
    /// round's RESP by hand.
    fileprivate func measureFloor(
        _ client: MinimalPipelinedClient,
        executor: any TaskExecutor,
        value: Data,
        operations: Int
    ) async throws -> (Double, Bool) {
        let perCaller = operations / callers
        let mismatches = MismatchCount()
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask(executorPreference: executor) {
                    var index = caller * 7
                    let payload = ByteBuffer(bytes: value)
                    let valueHeader = "$\(payload.readableBytes)\r\n"
                    for round in 0..<(perCaller / depth) {
                        var request = ByteBuffer()
                        request.reserveCapacity(depth * (operation == .get ? 48 : 64 + valueSize))
                        for offset in 0..<depth {
                            let key =
                                operation == .get
                                ? "bench:{=k\((index + offset) % keyCount)}"
                                : "bench:raw:\((index + offset) % keyCount)"
                            // Piece by piece: one interpolated string per command would
                            // outgrow the small-string form and allocate.
                            request.writeString(operation == .get ? "*2\r\n$3\r\nGET\r\n$" : "*3\r\n$3\r\nSET\r\n$")
                            request.writeString(String(key.utf8.count))
                            request.writeStaticString("\r\n")
                            request.writeString(key)
                            request.writeStaticString("\r\n")
                            if operation == .set {
                                request.writeString(valueHeader)
                                request.writeImmutableBuffer(payload)
                                request.writeStaticString("\r\n")
                            }
                        }
                        let replies = try await client.pipeline(request, count: depth, on: caller &+ round)
                        if operation == .get, replies.contains(where: { ($0?.readableBytes ?? 0) != valueSize + 12 }) {
                            mismatches.count.add(1, ordering: .relaxed)
                        }
                        index += depth
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return (seconds, mismatches.count.load(ordering: .relaxed) == 0)
    }
}

private final class MismatchCount: Sendable {
    let count = Atomic<Int>(0)
}
