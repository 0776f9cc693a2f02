import Foundation
import StowageProcessSupport

// The bench's Redis is the tests' (`StowageProcessSupport`): one launcher of redis-server.
extension RedisServerProcess {
    /// Whether the shared-tier scenarios can run: `redis-server`, `redis-cli` and
    /// `redis-benchmark` are installed (apt `redis-server redis-tools`).
    static var canBenchmark: Bool { isAvailable && executable("redis-benchmark") != nil }

    /// `redis-benchmark -t set,get -d SIZE -c CLIENTS -P PIPELINE -n REQUESTS --csv` against
    /// this server: requests per second by test name (`SET`, `GET`).
    func benchmark(valueSize: Int, clients: Int, pipeline: Int, requests: Int) throws -> [String: Double] {
        let csv = try Self.run(
            "redis-benchmark",
            [
                "-h", "127.0.0.1", "-p", String(port), "-t", "set,get", "-d", String(valueSize), "-c", String(clients),
                "-P", String(pipeline), "-n", String(requests), "--csv",
            ]
        )
        var rates: [String: Double] = [:]
        for line in csv.split(separator: "\n") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            if fields.count >= 2, let rate = Double(fields[1]) { rates[fields[0]] = rate }
        }
        guard rates["SET"] != nil, rates["GET"] != nil else {
            throw BenchFailure("unexpected redis-benchmark output: \(csv)")
        }
        return rates
    }
}
