import ArgumentParser
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// `StowageHTTPFloor`: the floor of an HTTP/1 server on SwiftNIO on this machine.
///
/// It answers every request from memory with a response captured earlier (status line, fields
/// and body, byte for byte), through the same NIO HTTP/1 codec and event-loop group the proxy
/// uses, and does nothing else: no cache lookup, no freshness, no timers, no logging. With
/// `--raw` it writes the captured bytes as one buffer without NIO's response encoder (requests
/// are still parsed by NIO's decoder), as the proxy writes hits it keeps as bytes: the floor of
/// answering from memory at all. With `--index-prefix`, requests under that prefix are answered
/// from an SQLite table of whole responses, one indexed `SELECT` each (``IndexedResponses``):
/// the floor of answering hits from a disk index.
/// `Benchmarks/proxy-load.sh` runs it beside `stowage proxy`, nginx and Varnish with the
/// responses the proxy served, so "Stowage / NIO floor" says how much of the gap to nginx is the
/// proxy's own work and how much is what a NIO server can do at all.
@main
struct HTTPFloorServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stowage-http-floor",
        abstract: "Answer HTTP/1 requests from memory with captured responses: the NIO floor for the proxy benchmark."
    )

    @Option(help: "Address to listen on, as HOST:PORT (loopback only).")
    var listen: String

    @Option(
        name: .customLong("route"),
        help: "PATH=FILE: answer requests for exactly PATH with the raw HTTP/1 response in FILE (head and body)."
    )
    var routes: [String] = []

    @Option(
        name: .customLong("prefix"),
        help: "PREFIX=FILE: answer requests whose path starts with PREFIX with the raw response in FILE."
    )
    var prefixes: [String] = []

    @Flag(help: "Write each captured response as one buffer, without NIO's HTTP/1 response encoder.")
    var raw = false

    @Option(
        name: .customLong("index-prefix"),
        help: """
            PREFIX=FILE: answer PREFIX0 to PREFIX<count - 1> from an SQLite table holding FILE's \
            response under each, one SELECT per request (implies --raw).
            """
    )
    var indexPrefix: String?

    @Option(name: .customLong("index-count"), help: "How many rows --index-prefix stores.")
    var indexCount = 10_000

    @Option(name: .customLong("index-file"), help: "The SQLite file --index-prefix fills (replaced).")
    var indexFile: String?

    @Option(
        name: .customLong("index-mmap-size"),
        help: "SQLite's mmap_size for the readers of --index-file, in bytes (0: read with pread, as the proxy does)."
    )
    var indexMmapSize = 0

    func run() throws {
        let (host, port) = try Self.address(listen)
        let table = try CapturedResponses(
            exact: routes.map { try Self.route($0) },
            prefixes: prefixes.map { try Self.route($0) }
        )
        let group = NIOSingletons.posixEventLoopGroup
        let index = try indexPrefix.map { text in
            guard let indexFile else { throw ValidationError("--index-prefix needs --index-file") }
            let (prefix, response) = try Self.route(text)
            return try IndexedResponses(
                path: indexFile,
                prefix: prefix,
                count: indexCount,
                mmapSize: indexMmapSize,
                response: response,
                loops: Array(group.makeIterator())
            )
        }
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { [raw] in
                    if let index {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
                        try channel.pipeline.syncOperations.addHandler(
                            RawCapturedResponseHandler { request, loop in
                                index.response(for: request, on: loop, else: table)
                            }
                        )
                    } else if raw {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
                        try channel.pipeline.syncOperations.addHandler(RawCapturedResponseHandler(table: table))
                    } else {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(CapturedResponseHandler(table: table))
                    }
                }
            }
            .bind(host: host, port: port)
            .wait()
        print("listening on \(channel.localAddress?.description ?? listen)")
        fflush(nil)  // every stream: the benchmark waits for this line in a file, where stdout is buffered
        try channel.closeFuture.wait()
    }

    private static func address(_ text: String) throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { throw ValidationError("--listen must be HOST:PORT with a port in 1...65535, got '\(text)'") }
        let host = String(text[..<colon])
        guard host == "127.0.0.1" || host == "::1" || host == "localhost" else {
            throw ValidationError("--listen must be a loopback address (127.0.0.1, ::1 or localhost), got '\(host)'")
        }
        return (host, port)
    }

    private static func route(_ text: String) throws -> (String, CapturedResponse) {
        guard let equals = text.firstIndex(of: "="), text.first == "/" else {
            throw ValidationError("a route must be PATH=FILE with PATH starting with '/', got '\(text)'")
        }
        let file = String(text[text.index(after: equals)...])
        return (String(text[..<equals]), try CapturedResponse(contentsOf: file))
    }
}
