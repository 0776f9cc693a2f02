// A second (third, …) node for the shared-tier tests: its own process with its own memory and
// disk levels over the shared Redis. The test drives it line by line on stdin:
//
//   StowageTestWorker shared-tier REDIS_URL NAMESPACE DIRECTORY      prints "ready" once subscribed
//   get KEY                 → "value KEY VALUE" | "miss KEY"
//   set KEY VALUE           → "set KEY"
//   watch KEY               → "dropped KEY" once the memory copy is gone (polled every 0.2 ms)
//   load KEY MILLISECONDS   → "loader-ran KEY" if this node's loader ran, then "loaded KEY VALUE"
//   quit
import Foundation
import StowageCache
import StowageRedis
import StowageSharedTier

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
            // No memory-pressure source: "dropped" must mean an invalidation, not the machine's PSI.
            var memoryConfiguration = MemoryCache<String, String>.Configuration(name: "worker")
            memoryConfiguration.memoryPressureSource = nil
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
                            while cache.memory.value(forKey: key) != nil {
                                try await Task.sleep(for: .microseconds(200))
                            }
                            say("dropped \(key)")
                        }
                    case ("load", 3):
                        let key = words[1]
                        let pause = Int(words[2]) ?? 0
                        group.addTask {
                            let value = try await cache.value(forKey: key) {
                                say("loader-ran \(key)")
                                try await Task.sleep(for: .milliseconds(pause))
                                return "loaded-by-\(pid)"
                            }
                            say("loaded \(key) \(value)")
                        }
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
