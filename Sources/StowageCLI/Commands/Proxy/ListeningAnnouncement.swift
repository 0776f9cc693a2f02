import Foundation
import Synchronization

/// The proxy's "listening on HOST:PORT" lines on standard output, printed once every listener is
/// bound: scripts that started the proxy on port 0 read the port from them, and take them to
/// mean the proxy serves.
final class ListeningAnnouncement: Sendable {
    private let host: String
    private let adminHost: String?
    private let ports = Mutex<(main: Int?, admin: Int?, isPrinted: Bool)>((nil, nil, false))

    /// Lines for the main listener on `host` and, when given, the admin listener on `adminHost`.
    init(host: String, adminHost: String?) {
        self.host = host
        self.adminHost = adminHost
    }

    /// The main listener is bound to `port`.
    func bound(main port: Int) { record { $0.main = port } }

    /// The admin listener is bound to `port`.
    func bound(admin port: Int) { record { $0.admin = port } }

    private func record(_ change: (inout (main: Int?, admin: Int?, isPrinted: Bool)) -> Void) {
        let text: String? = ports.withLock { ports in
            change(&ports)
            guard !ports.isPrinted, let main = ports.main else { return nil }
            var lines = "listening on \(host):\(main)\n"
            if let adminHost {
                guard let admin = ports.admin else { return nil }
                lines += "admin listening on \(adminHost):\(admin)\n"
            }
            ports.isPrinted = true
            return lines
        }
        if let text { FileHandle.standardOutput.write(Data(text.utf8)) }
    }
}
