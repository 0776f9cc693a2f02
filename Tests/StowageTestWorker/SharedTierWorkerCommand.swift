// A second (third, …) node for the shared-tier tests: its own process with its own memory and
// disk levels over the shared Redis. The test drives it line by line on stdin:
//
//   StowageTestWorker shared-tier REDIS_URL NAMESPACE DIRECTORY      prints "ready" once subscribed
//   get KEY                 → "value KEY VALUE" | "miss KEY"
//   set KEY VALUE           → "set KEY"
//   watch KEY               → "dropped KEY" once the memory copy is gone (told by the memory
//                             level's onEviction)
//   load KEY                → "loader-ran KEY" if this node's loader ran (it then holds until
//                             "release KEY"), or "waiting KEY" if it waits for another node's
//                             load; then "loaded KEY VALUE"
//   release KEY             lets this node's loader for KEY finish (now or when it runs)
//   quit
import Foundation
import StowageCache
import StowageRedis
import StowageSharedTier
import StowageTestSupport
import Synchronization

/// `StowageTestWorker shared-tier …`: `arguments[0]` names the command.
enum SharedTierWorkerCommand {
    static func run(_ arguments: [String]) async {
        guard arguments.count == 4 else { fail("usage: StowageTestWorker shared-tier REDIS_URL NAMESPACE DIRECTORY") }
        let pid = ProcessInfo.processInfo.processIdentifier

        do {
            // A loaded test machine can keep a healthy Redis past the default 500 ms budget.
            var tierOptions = RedisSharedTier.Options()
            tierOptions.requestBudget = .seconds(15)
            let tier = try await RedisSharedTier.connect(
                url: arguments[1],
                namespace: arguments[2],
                options: tierOptions
            ) {
                $0.connectTimeout = .seconds(10)
                $0.commandTimeout = .seconds(15)
            }
            guard await tier.waitUntilSubscribed(timeout: .seconds(300)) else { fail("no invalidation subscription") }
            var configuration = DiskCache.Configuration(name: "worker")
            configuration.sizeLimit = nil
            // A minute of waiting for another node's load: the test machine may be loaded.
            var options = SharedTierOptions()
            options.loadWaitTimeout = .seconds(60)
            options.onWaitingForAnotherNode = { say("waiting \($0)") }
            let held = HeldLoads()
            // No memory-pressure source: "dropped" must mean an invalidation, not the machine's PSI.
            var memoryConfiguration = MemoryCache<String, String>.Configuration(name: "worker")
            memoryConfiguration.memoryPressureSource = nil
            let watches = MemoryWatches()
            memoryConfiguration.onEviction = { key, _, _ in watches.removed(key) }
            let cache = HybridCache(
                memory: try MemoryCache<String, String>(configuration: memoryConfiguration),
                disk: try DiskCache(
                    directory: URL(filePath: arguments[3], directoryHint: .isDirectory),
                    configuration: configuration
                ),
                serializer: StringSerializer(),
                shared: tier,
                configuration: HybridCache.Configuration(sharedLevel: options)
            )
            // Hears other nodes' invalidations until the process ends.
            Task { try await cache.run() }
            // stdin is read on its own thread: a blocking readLine must not hold a cooperative thread.
            let (lines, input) = AsyncStream.makeStream(of: String.self)
            Thread.detachNewThread {
                while let line = readLine() { input.yield(line) }
                input.finish()
            }
            say("ready")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for await line in lines {
                    let words = line.split(separator: " ", maxSplits: 2).map(String.init)
                    switch (words.first, words.count) {
                    case ("get", 2):
                        let value = try await cache.value(forKey: words[1])
                        say(value.map { "value \(words[1]) \($0)" } ?? "miss \(words[1])")
                    case ("set", 3):
                        try await cache.setValue(words[2], forKey: words[1])
                        say("set \(words[1])")
                    case ("watch", 2):
                        let key = words[1]
                        group.addTask {
                            await watches.waitUntilGone(key, from: cache.memory)
                            say("dropped \(key)")
                        }
                    case ("load", 2):
                        let key = words[1]
                        group.addTask {
                            let value = try await cache.value(forKey: key) {
                                say("loader-ran \(key)")
                                await held.gate(for: key).wait()
                                return "loaded-by-\(pid)"
                            }
                            say("loaded \(key) \(value)")
                        }
                    case ("release", 2):
                        held.gate(for: words[1]).open()
                    case ("quit", _):
                        group.cancelAll()
                        await tier.shutdown()
                        exit(0)
                    default:
                        fail("unknown command '\(line)'")
                    }
                }
            }
        } catch {
            fail("\(error)")
        }
    }
}

/// The memory copies a `watch` waits to see gone, woken by the memory level's `onEviction`
/// (which hears of every removal: an invalidation's, an expiry's, an eviction's).
private final class MemoryWatches: Sendable {
    private let waiters = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Wakes everyone waiting on `key`; they look again whether its copy is gone.
    func removed(_ key: String) {
        let woken = waiters.withLock { $0.removeValue(forKey: key) } ?? []
        for waiter in woken { waiter.resume() }
    }

    /// Returns once `memory` holds no value for `key`.
    func waitUntilGone(_ key: String, from memory: MemoryCache<String, String>) async {
        while memory.value(forKey: key) != nil {
            await withCheckedContinuation { continuation in
                // Listed before it looks again: a removal between the look above and the listing
                // would otherwise wake nobody.
                waiters.withLock { $0[key, default: []].append(continuation) }
                if memory.value(forKey: key) == nil { removed(key) }
            }
        }
    }
}

/// The loaders of `load KEY`, each held at its key's gate until the test sends `release KEY`.
private final class HeldLoads: Sendable {
    private let gates = Mutex<[String: Gate]>([:])

    /// The gate for `key`, the same one for the loader and for `release`, whichever comes first.
    func gate(for key: String) -> Gate {
        gates.withLock { gates in
            if let gate = gates[key] { return gate }
            let gate = Gate()
            gates[key] = gate
            return gate
        }
    }
}
