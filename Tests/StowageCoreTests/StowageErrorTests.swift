import Foundation
import StowageCore
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

    @Test("a name longer than the file system allows is reported with what to do")
    func nameTooLong() throws {
        let scratch = try TemporaryDirectory()
        let long = scratch.url.appending(path: String(repeating: "x", count: 300))
        let error = try #require(throws: StowageError.self) { _ = try DiskUsage.measure(long) }
        #expect(error.code == .ioError)
        #expect(error.cause as? Errno == Errno(rawValue: ENAMETOOLONG))
        #expect(error.message.contains("too long for the file system; shorten it"), "\(error)")
    }

    @Test("every code reads differently in logs, and a code matches only its own errors")
    func codesAreDistinct() {
        let codes: [StowageError.Code] = [
            .notFound, .permissionDenied, .unsupported, .noSpace, .corrupt, .invalidArgument, .pathEscapesRoot,
            .notADirectory, .ioError, .busy, .unreachable, .refused, .invalidConfiguration, .notCached, .tooLarge,
            .malformed, .domainMismatch, .publicSuffix, .notSecure,
        ]
        #expect(Set(codes.map(\.description)).count == codes.count)
        let error = StowageError(code: .invalidConfiguration, message: "collapseTimeout is 0 seconds")
        #expect(codes.filter { $0 ~= error } == [.invalidConfiguration])
        #expect(!(StowageError.Code.invalidConfiguration ~= CancellationError()))
    }
}
