import Foundation
import StowageTestSupport
import Testing

/// `StowageHTTPFloor`, the proxy benchmark's NIO floor, reads captured responses at start: a
/// file it cannot use is a usage error naming the file, never a crash.
@Suite("StowageHTTPFloor: captured response files")
struct HTTPFloorTests {
    /// The floor is built beside `stowage`.
    static var url: URL { StowageExecutable.url.deletingLastPathComponent().appending(path: "StowageHTTPFloor") }

    @Test(
        "a garbled, truncated or empty captured response is refused with exit 64 and a message",
        .enabled(if: FileManager.default.isExecutableFile(atPath: url.path)),
        arguments: [
            ("", "no empty line ending the response head"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "no empty line ending the response head"),
            ("HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", "no empty line ending the response head"),
            ("HTTP/1.1 -5 Odd\r\nContent-Length: 2\r\n\r\nhi", "status line"),
            ("HTTP/1.1 99999999999999999999 Odd\r\nContent-Length: 2\r\n\r\nhi", "status line"),
            ("HTTP/1.1 20 Short\r\nContent-Length: 2\r\n\r\nhi", "status line"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi", "Content-Length does not match"),
            ("HTTP/1.1 200 OK\r\nno colon\r\n\r\nhi", "field line without a colon"),
        ]
    )
    func refusedFile(contents: String, message: String) async throws {
        let scratch = try TemporaryDirectory()
        let file = try scratch.write("response", bytes: 0)
        try Data(contents.utf8).write(to: file)
        // Under `timeout`: a file taken by mistake would leave the floor serving.
        let outcome = try await StowageExecutable.runProcess([
            "timeout", "20", Self.url.path, "--listen", "127.0.0.1:1", "--route", "/x=\(file.path)",
        ])
        #expect(outcome.status == 64, "\(outcome.standardError)")
        #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
    }
}
