import HTTPTypes
import HummingbirdTesting
import NIOCore

/// A client of a live test server that waits for its answers as long as a loaded machine needs.
///
/// HummingbirdTesting's `.live` client gives up after 20 seconds without a response
/// (`LiveTestFramework` fixes that timeout): CI on two cores, with the whole suite running at
/// once, saw `.readTimeout` on a request answered in a tenth of a second alone. This one waits
/// five minutes, the suite's patience elsewhere (`eventually`), so a test fails on what the server
/// does, not on how busy the machine is.
struct LiveClient: Sendable {
    /// How long a request waits for its response.
    static let patience: Duration = .seconds(300)

    /// The live server's port, for raw sockets and extra connections.
    let port: Int
    private let connection: TestClient

    /// A response as the tests read it: head and the whole body.
    struct Response: Sendable {
        let head: HTTPResponse
        let body: ByteBuffer
        var status: HTTPResponse.Status { head.status }
        var headers: HTTPFields { head.headerFields }
    }

    /// A patient client of the server on `port` at 127.0.0.1, not yet connected.
    static func connection(toPort port: Int) -> TestClient {
        TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: patience))
    }

    /// Runs `body` with a client connected to the server on `port`, shut down afterwards.
    static func withClient<T: Sendable>(
        port: Int,
        _ body: (LiveClient) async throws -> T
    ) async throws -> T {
        let connection = connection(toPort: port)
        connection.connect()
        let client = LiveClient(port: port, connection: connection)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(client))
        } catch {
            result = .failure(error)
        }
        try? await connection.shutdown()
        return try result.get()
    }

    /// Sends one request on the kept-alive connection, as HummingbirdTesting's live client does
    /// (authority `localhost`, `Connection: keep-alive`), and returns its response.
    func execute(
        uri: String,
        method: HTTPRequest.Method,
        headers: HTTPFields = [:],
        body: ByteBuffer? = nil
    ) async throws -> Response {
        var headers = headers
        headers[.connection] = "keep-alive"
        let request = TestClient.Request(uri, method: method, authority: "localhost", headers: headers, body: body)
        let response = try await connection.execute(request)
        return Response(head: response.head, body: response.body ?? ByteBuffer())
    }
}
