import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Ports handed out by this process, counting up from a random base below the kernel's ephemeral
/// range (32768+), so no two servers of one test run ever share a port (a restart keeps its port,
/// and no other test can take it in between), and Redis cluster bus ports (+10000) stay below the
/// ephemeral range too.
private let nextLoopbackPort = Atomic<Int>(Int.random(in: 20_000...21_000))

/// A port on 127.0.0.1 nobody listens on now, and whose Redis cluster bus port (+10000) is free
/// too, for a server a test starts.
public func freeLoopbackPort() throws -> Int {
    for _ in 0..<500 {
        let port = nextLoopbackPort.add(1, ordering: .relaxed).newValue
        if port > 22_700 { break }
        if isFreeLoopbackPort(port), isFreeLoopbackPort(port + 10_000) { return port }
    }
    throw ProcessFailure("no free port found")
}

private func isFreeLoopbackPort(_ port: Int) -> Bool {
    let descriptor = makeTCPSocket()
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
