import Foundation
import StowageCore
import StowageTestSupport
import Testing

@Suite("StowageError")
struct StowageErrorTests {
    @Test("codes match in catch clauses and carry the path and cause")
    func matching() throws {
        let scratch = try TemporaryDirectory()
        let missing = scratch.url.appending(path: "missing")
        do {
            _ = try DiskUsage.measure(missing)
            Issue.record("expected an error")
        } catch StowageError.Code.permissionDenied {
            Issue.record("wrong code matched")
        } catch StowageError.Code.notFound {
            // Expected.
        }
        do {
            _ = try DiskUsage.measure(missing)
        } catch let error as StowageError {
            #expect(error.path == missing.path(percentEncoded: false))
            #expect(error.cause is Errno)
            #expect(error.description.hasPrefix("not found: "))
            #expect(error.message.contains("check the path exists"))
        }
    }
}
