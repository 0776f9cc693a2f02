import Foundation
import StowageHTTPTestSupport
import StowageRedisTestSupport
import StowageTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `stowage proxy` as a shell user runs it: a real process, a real origin, SIGTERM to stop.
@Suite struct ProxyCommandTests {
    /// Starts `stowage proxy --listen 127.0.0.1:0 arguments…` and reads the port it prints.
    static func startProxy(_ arguments: [String]) async throws -> (ChildProcess, port: Int, errors: Pipe) {
        let process = ChildProcess()
        process.executableURL = StowageExecutable.url
        process.arguments = ["proxy", "--listen", "127.0.0.1:0"] + arguments
        let output = childPipe()
        let errors = childPipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let handle = output.fileHandleForReading
        let line = await Task.detached { () -> String in
            var bytes: [UInt8] = []
            while !bytes.contains(UInt8(ascii: "\n")) {
                let data = handle.availableData
                if data.isEmpty { break }
                bytes += data
            }
            return String(decoding: bytes, as: UTF8.self)
        }.value
        guard
            let port = line.split(separator: ":").last.flatMap({
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            })
        else {
            kill(process.processIdentifier, SIGKILL)
            let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            Issue.record("stowage proxy printed no port: \(line)\n\(log)")
            throw CancellationError()
        }
        return (process, port, errors)
    }

    /// Sends SIGTERM and returns the exit status (waited for off Swift's cooperative threads).
    static func stop(_ process: ChildProcess) async -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        return await Task.detached { () -> Int32 in
            process.waitForExitReliably().status
        }.value
    }

    @Test("stowage proxy serves through its cache and stops gracefully on SIGTERM (exit 0)")
    func servesAndStopsOnSIGTERM() async throws {
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let cacheDirectory = scratch.url
        let (process, port, errors) = try await Self.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", cacheDirectory.path,
            "--memory-capacity", "8MB", "--disk-capacity", "100MB",
        ])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/doc"))
        for _ in 0..<2 {
            let (data, response) = try await URLSession.shared.data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "v1")
            #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Status") != nil)
        }
        #expect(origin.requestCount == 1)
        #expect(await Self.stop(process) == 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("stowage proxy stopped"))
        await origin.stop()
    }

    @Test("stowage clear-caches on the proxy's container: the running proxy's next request misses and refetches")
    func clearCachesReachesRunningProxy() async throws {
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=600")], body: "v\(r.index)")
        }
        let scratch = try TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let root = scratch.url
        let (process, port, _) = try await Self.startProxy(["--upstream", origin.baseURL, "--root", root.path])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/doc"))
        func fetch() async throws -> (body: String, status: String) {
            let (data, response) = try await URLSession.shared.data(from: url)
            let status = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Status") ?? ""
            return (String(decoding: data, as: UTF8.self), status)
        }
        _ = try await fetch()
        let hit = try await fetch()
        #expect(hit.body == "v1" && hit.status.contains("hit"), "\(hit)")

        let clear = try await StowageExecutable.run(["clear-caches", "--root", root.path])
        #expect(clear.status == 0, "\(clear.standardError)")

        let after = try await fetch()
        #expect(after.body == "v2", "the cleared response must not be served from the proxy's memory")
        #expect(!after.status.contains("hit"), "\(after.status)")
        #expect(origin.requestCount == 2)
        #expect(await Self.stop(process) == 0)
        await origin.stop()
    }

    @Test("stowage proxy --admin-listen serves /metrics in Prometheus format and takes purges")
    func adminMetricsAndPurge() async throws {
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=600")], body: "v\(r.index)")
        }
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-proxy-admin-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        // The options come from a --config file; the command line adds --root.
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let config = root.appending(path: "proxy.json")
        try Data(
            """
            {"listen": "127.0.0.1:0", "upstream": "\(origin.baseURL)", "admin-listen": "127.0.0.1:0",
             "cache-valid": ["200=10m"], "trace": true}
            """.utf8
        ).write(to: config)
        let process = ChildProcess()
        process.executableURL = StowageExecutable.url
        process.arguments = ["proxy", "--config", config.path, "--root", root.path]
        let output = childPipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let handle = output.fileHandleForReading
        let lines = await Task.detached { () -> [String] in
            var text = ""
            while text.split(separator: "\n").count < 2 {
                let data = handle.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            return text.split(separator: "\n").map(String.init)
        }.value
        func port(_ prefix: String) -> Int? {
            lines.first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: ":").last }.flatMap { Int($0) }
        }
        let proxyPort = try #require(port("listening on"), "\(lines)")
        let adminPort = try #require(port("admin listening on"), "\(lines)")
        let page = try #require(URL(string: "http://127.0.0.1:\(proxyPort)/page"))
        _ = try await URLSession.shared.data(from: page)
        _ = try await URLSession.shared.data(from: page)

        let (_, traced) = try await URLSession.shared.data(from: page)
        #expect(
            (traced as? HTTPURLResponse)?.value(forHTTPHeaderField: "Stowage-Cache-Trace") != nil,
            "--config's trace: true"
        )

        let (metrics, response) = try await URLSession.shared.data(
            from: try #require(URL(string: "http://127.0.0.1:\(adminPort)/metrics"))
        )
        var text = String(decoding: metrics, as: UTF8.self)
        #expect(
            (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain") == true
        )
        #expect(text.contains(#"stowage_proxy_responses_total{outcome="hit"} 2"#), "\(text.prefix(3000))")
        #expect(text.contains("stowage_cache_hits_total"))
        #expect(text.contains("stowage_cache_bytes_written_total"))
        // "v1" twice from the cache, once from the upstream.
        #expect(text.contains(#"stowage_proxy_served_bytes_total{source="cache"} 4"#))
        #expect(text.contains(#"stowage_proxy_served_bytes_total{source="upstream"} 2"#))
        #expect(text.contains(#"stowage_proxy_upstream_duration_seconds_count 1"#))
        #expect(text.contains(#"stowage_proxy_cache_bytes{tier="disk"}"#))
        #expect(text.contains("stowage_proxy_cache_entries"))

        let admin = ["--admin", "127.0.0.1:\(adminPort)"]
        let purged = try await StowageExecutable.run(
            ["proxy", "invalidate"] + admin + ["\(origin.baseURL)/page", "\(origin.baseURL)/never"]
        )
        #expect(purged.status == 0, "\(purged.standardError)")
        #expect(purged.standardOutput == "removed \(origin.baseURL)/page\nnot stored \(origin.baseURL)/never\n")
        let (again, _) = try await URLSession.shared.data(from: page)
        #expect(String(decoding: again, as: UTF8.self) == "v2")
        let banned = try await StowageExecutable.run(["proxy", "invalidate", "--prefix", origin.baseURL + "/"] + admin)
        #expect(banned.standardOutput == "removed 1\n", "\(banned.standardError)")

        let (afterPurges, _) = try await URLSession.shared.data(
            from: try #require(URL(string: "http://127.0.0.1:\(adminPort)/metrics"))
        )
        text = String(decoding: afterPurges, as: UTF8.self)
        #expect(text.contains(#"stowage_proxy_purges_total{kind="url"} 2"#), "\(text.prefix(3000))")
        #expect(text.contains(#"stowage_proxy_purges_total{kind="prefix"} 1"#))
        #expect(text.contains("stowage_proxy_purged_entries_total 2"))
        #expect(await Self.stop(process) == 0)
        await origin.stop()
    }

    @Test("stowage proxy invalidate: clear usage errors, and exit 2 with a message when no listener answers")
    func adminCommandErrors() async throws {
        for (arguments, message) in [
            (["proxy", "invalidate"], "exactly one of the three"),
            (["proxy", "invalidate", "--prefix", "a", "--tag", "b"], "exactly one of the three"),
            (["proxy", "invalidate", "--prefix", "a", "http://example.com/"], "exactly one of the three"),
            (["proxy", "invalidate", "--tag", ""], "not empty"),
            (["proxy", "invalidate", "--tag", "x", "--admin", "nohost"], "--admin"),
        ] {
            let outcome = try await StowageExecutable.run(arguments)
            #expect(outcome.status == 64, "\(arguments)")
            #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
        }
        let unreachable = try await StowageExecutable.run([
            "proxy", "invalidate", "--admin", "127.0.0.1:1", "http://example.com/",
        ])
        #expect(unreachable.status == 2)
        #expect(unreachable.standardError.contains("did not answer"), "\(unreachable.standardError)")
    }

    @Test(
        "stowage proxy --config: a file that is not a JSON object of options, an unknown key or a FIFO is refused with exit 64"
    )
    func badConfigFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "stowage-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "proxy.json")
        for (json, message) in [
            ("[1, 2]", "is not a JSON object"),
            ("{\"upstream\": ", "is not a JSON object"),
            (#"{"upstream": {"url": "http://a"}}"#, "at \"upstream\""),
            (#"{"cache-valid": [true]}"#, "at \"cache-valid\""),
            (#"{"--upstream": "http://a"}"#, "is not an option of stowage proxy"),
            (#"{"config": "other.json"}"#, "is not an option of stowage proxy"),
            (#"{"upstream": "http://a", "no-such-option": 1}"#, "no-such-option"),
            (#"{"upstream": "http://a", "cache-valid": "200"}"#, "needs STATUS"),
            (#"{"listen": "127.0.0.1:0"}"#, "give the upstream origin"),
        ] {
            try Data(json.utf8).write(to: file)
            let outcome = try await StowageExecutable.run(["proxy", "--config", file.path])
            #expect(outcome.status == 64, "\(json)")
            #expect(outcome.standardError.contains(message), "\(json): \(outcome.standardError)")
        }
        let fifo = directory.appending(path: "fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let blocked = try await StowageExecutable.run(["proxy", "--config", fifo.path])
        #expect(
            blocked.status == 64 && blocked.standardError.contains("is not a regular file"),
            "\(blocked.standardError)"
        )
        let missing = try await StowageExecutable.run([
            "proxy", "--config", directory.appending(path: "none.json").path,
        ])
        #expect(missing.status == 64 && missing.standardError.contains("cannot read it"), "\(missing.standardError)")
    }

    @Test(
        "stowage proxy rejects a --targeted-cache-control that is no field name, or Cache-Control itself, with exit 64"
    )
    func badTargetedField() async throws {
        for (value, message) in [
            ("bad name", "is not a header field name"), ("Cache-Control", "not Cache-Control itself"),
        ] {
            let outcome = try await StowageExecutable.run([
                "proxy", "--upstream", "http://127.0.0.1:1", "--targeted-cache-control", value,
            ])
            #expect(outcome.status == 64)
            #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
        }
    }

    @Test("stowage proxy rejects a malformed --cache-valid or grace with a message and exit 64")
    func badOperatorControls() async throws {
        for (arguments, message) in [
            (["--cache-valid", "200"], "needs STATUS[,STATUS…]=DURATION"),
            (["--cache-valid", "99=1m"], "is not a status from 200 to 599"),
            (["--cache-valid", "200=10x"], "is not a duration"),
            (["--stale-if-error", "soon"], "is not a duration"),
            (["--cache-bypass", "query:x"], "give header:NAME, cookie:NAME or path:/PREFIX"),
            (["--cache-bypass", "path:admin"], "give header:NAME, cookie:NAME or path:/PREFIX"),
            (["--cache-key-ignore-query", "a=b"], "is not a query parameter name"),
            (["--admin-listen", "0.0.0.0:9000"], "give it a token, or bind 127.0.0.1"),
        ] {
            let outcome = try await StowageExecutable.run(["proxy", "--upstream", "http://127.0.0.1:1"] + arguments)
            #expect(outcome.status == 64, "\(arguments)")
            #expect(outcome.standardError.contains(message), "\(arguments): \(outcome.standardError)")
        }
    }

    @Test("stowage proxy rejects a bad upstream with a message and exit 64")
    func badUpstream() async throws {
        let outcome = try await StowageExecutable.run(["proxy", "--upstream", "ftp://example.com"])
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("must use http or https"))
    }

    @Test(
        "stowage proxy --shared rediss:// --shared-ca-file writes responses through to a TLS Redis",
        .enabled(
            if: RedisServerProcess.isAvailable && TestCertificateAuthority.isAvailable,
            "redis-server or openssl is not installed"
        )
    )
    func sharedOverTLS() async throws {
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-proxy-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let authority = try TestCertificateAuthority(in: root.appending(path: "ca"))
        let tlsPort = try RedisServerProcess.freePort()
        let redis = try await RedisServerProcess.start(extraArguments: authority.redisServerArguments(tlsPort: tlsPort))
        defer { redis.remove() }
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }
        let (process, port, errors) = try await Self.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", root.appending(path: "cache").path,
            "--shared", "rediss://localhost:\(tlsPort)", "--shared-ca-file", authority.certificate.path,
            "--shared-budget", "30s",
        ])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/doc"))
        let (data, _) = try await URLSession.shared.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "v1")
        // The record reaches Redis (through the TLS port) just after the response.
        try await eventually { try redis.cli(["--scan", "--pattern", "stowage-http:*"]).contains("stowage-http:") }
        #expect(await Self.stop(process) == 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(!log.contains("unreachable"), "\(log)")
        await origin.stop()
    }

    @Test("stowage proxy --shared-ca-file without a rediss:// server is a usage error (exit 64)")
    func caFileNeedsTLS() async throws {
        let outcome = try await StowageExecutable.run([
            "proxy", "--upstream", "http://127.0.0.1:9", "--shared", "redis://127.0.0.1:6379", "--shared-ca-file",
            "ca.pem",
        ])
        #expect(outcome.status == 64)
        #expect(outcome.standardError.contains("rediss://"))
    }

    // MARK: - --shared at start

    @Test(
        "stowage proxy --shared with a malformed Redis URL is a usage error (exit 64) naming the expected form",
        arguments: ["redis://127.0.0.1:1:2", "redis://", "http://127.0.0.1:6379"]
    )
    func malformedSharedURL(url: String) async throws {
        let outcome = try await StowageExecutable.run(["proxy", "--upstream", "http://127.0.0.1:9", "--shared", url])
        #expect(outcome.status == 64, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("is not a Redis URL"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]"))
    }

    @Test("stowage proxy --shared-budget out of range is a usage error (exit 64)", arguments: ["0", "-1", "nan", "2h"])
    func sharedBudgetOutOfRange(budget: String) async throws {
        let outcome = try await StowageExecutable.run([
            "proxy", "--upstream", "http://127.0.0.1:9", "--shared", "redis://127.0.0.1:6379", "--shared-budget",
            budget,
        ])
        #expect(outcome.status == 64, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("--shared-budget"))
    }

    @Test("stowage proxy --shared with Redis unreachable at start serves from its own cache; --shared-required exits 2")
    func sharedUnreachableAtStart() async throws {
        let redisPort = try RedisServerProcess.freePort()
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-proxy-noredis-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }
        let (process, port, errors) = try await Self.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", root.appending(path: "cache").path,
            "--shared", "redis://127.0.0.1:\(redisPort)",
        ])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/doc"))
        for _ in 0..<3 {
            let (data, _) = try await URLSession.shared.data(from: url)
            #expect(String(decoding: data, as: UTF8.self) == "v1")
        }
        #expect(await Self.stop(process) == 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("connecting in the background"), "\(log)")

        let required = try await StowageExecutable.run([
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--cache-dir",
            root.appending(path: "cache2").path, "--shared", "redis://127.0.0.1:\(redisPort)", "--shared-required",
        ])
        #expect(required.status == 2, "\(required.standardError)")
        #expect(required.standardError.contains("cannot reach the --shared Redis"), "\(required.standardError)")
        await origin.stop()
    }
}

/// How `stowage proxy` ends when it cannot start: a listener that cannot bind, a Redis that
/// refuses it (exit 2, and no "listening on" line), or a busy Redis (started on its own cache).
@Suite struct ProxyStartFailureTests {
    /// A client connection to the Redis on `port` that has had its PING answered (so Redis
    /// counts it), left open; the caller closes the returned descriptor.
    static func connectAndPing(port: Int) throws -> Int32 {
        #if canImport(Darwin)
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #elseif canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard descriptor >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestFailure("connect to Redis on port \(port) failed: errno \(errno)")
        }
        let ping = Array("PING\r\n".utf8)
        #if canImport(Darwin)
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        _ = ping.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        #elseif canImport(Glibc)
        _ = ping.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #endif
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while !reply.contains(UInt8(ascii: "\n")) {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            reply += buffer[..<count]
        }
        guard String(decoding: reply, as: UTF8.self).hasPrefix("+PONG") else {
            close(descriptor)
            throw TestFailure("Redis did not take the connection: \(String(decoding: reply, as: UTF8.self))")
        }
        return descriptor
    }

    @Test("an admin address that is taken: exit 2 with a message, and 'listening on' never printed")
    func takenAdminAddressFails() async throws {
        let port = try RedisServerProcess.freePort()
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-proxy-taken-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let outcome = try await StowageExecutable.run([
            "proxy", "--upstream", "http://127.0.0.1:9", "--cache-dir", root.path,
            "--listen", "127.0.0.1:\(port)", "--admin-listen", "127.0.0.1:\(port)",
        ])
        #expect(outcome.status == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("could not serve"), "\(outcome.standardError)")
        #expect(!outcome.standardOutput.contains("listening on"), "\(outcome.standardOutput)")
    }

    @Test(
        "a second stowage proxy on a cache directory another one serves from: exit 2 saying so; it starts once the first has stopped"
    )
    func secondProxyOnOneDirectoryFails() async throws {
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }
        let scratch = try TemporaryDirectory()
        let cacheDirectory = scratch.path + "/cache"
        let (first, _, _) = try await ProxyCommandTests.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", cacheDirectory,
        ])
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        // Under `timeout`: a second proxy that started would serve until killed.
        let second = try await StowageExecutable.run(
            ["proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--cache-dir", cacheDirectory],
            wrapper: ["timeout", "60"]
        )
        #expect(second.status == 2, "\(second.standardError)")
        #expect(
            second.standardError.contains("another caching proxy serves from the cache directory"),
            "\(second.standardError)"
        )
        #expect(!second.standardOutput.contains("listening on"), "\(second.standardOutput)")
        #expect(await ProxyCommandTests.stop(first) == 0)
        // The claim ends with the process that held it.
        let (again, _, _) = try await ProxyCommandTests.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", cacheDirectory,
        ])
        #expect(await ProxyCommandTests.stop(again) == 0)
        await origin.stop()
    }

    @Test(
        "a Redis that refuses the password: exit 2 naming the credentials, with or without --shared-required",
        .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
    )
    func wrongPasswordFails() async throws {
        let redis = try await RedisServerProcess.start(extraArguments: ["--requirepass", "right"])
        defer { redis.remove() }
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-proxy-auth-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let address = redis.url.replacingOccurrences(of: "redis://", with: "redis://:wrong@")
        let outcome = try await StowageExecutable.run([
            "proxy", "--upstream", "http://127.0.0.1:9", "--cache-dir", root.path, "--listen", "127.0.0.1:0",
            "--shared", address,
        ])
        #expect(outcome.status == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("refused the proxy"), "\(outcome.standardError)")
    }

    @Test(
        "a Redis at its client limit: the proxy starts on its own cache; --shared-required exits 2",
        .enabled(if: RedisServerProcess.isAvailable, "redis-server is not installed")
    )
    func busyRedisStartsDegraded() async throws {
        let redis = try await RedisServerProcess.start(extraArguments: ["--maxclients", "1"])
        defer { redis.remove() }
        // One client takes the only slot and keeps it: its PONG is the event that Redis took it.
        let redisPort = redis.port
        let holder = try await onOwnThread { try Self.connectAndPing(port: redisPort) }
        defer { close(holder) }
        let root = FileManager.default.temporaryDirectory.appending(path: "stowage-proxy-busy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let origin = try await TestOriginServer.start { r in
            .init(fields: [("Cache-Control", "max-age=60")], body: "v\(r.index)")
        }
        let (process, port, _) = try await ProxyCommandTests.startProxy([
            "--upstream", origin.baseURL, "--cache-dir", root.appending(path: "a").path, "--shared", redis.url,
        ])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/doc"))
        let (data, _) = try await URLSession.shared.data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "v1")
        #expect(await ProxyCommandTests.stop(process) == 0)

        let required = try await StowageExecutable.run([
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--cache-dir",
            root.appending(path: "b").path, "--shared", redis.url, "--shared-required",
        ])
        #expect(required.status == 2, "\(required.standardError)")
        await origin.stop()
    }
}
