import StowageProcessSupport
import StowageRedis

extension RedisServerProcess {
    /// A configuration for this server with generous timeouts: the suites run in parallel on a
    /// small, shared machine, where a handshake can take seconds.
    public var configuration: RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port)
        // Generous: the whole test suite runs in parallel on two cores, and tests that wait for
        // child processes can hold Swift's cooperative threads for seconds.
        configuration.connectTimeout = .seconds(30)
        configuration.commandTimeout = .seconds(30)
        configuration.poolWaitTimeout = .seconds(30)
        return configuration
    }
}
