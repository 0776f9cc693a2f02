import Foundation

/// A throwaway certificate authority and a server certificate it signed, made with `openssl`
/// in a directory of the test's: for TLS servers started by tests (`redis-server --tls-port`).
///
/// The server certificate names `localhost` only (no IP address, so a client that verifies
/// another name fails even on 127.0.0.1); both are valid for two days.
public struct TestCertificateAuthority: Sendable {
    /// Whether `openssl` is installed (`.ci/run` installs it from apt).
    public static let isAvailable = RedisServerProcess.executable("openssl") != nil

    /// Where the CA's and the server's keys and certificates are.
    public let directory: URL
    /// The CA's certificate (PEM): the trust root a client needs.
    public var certificate: URL { directory.appending(path: "ca.crt") }
    /// The server's certificate (PEM), signed by the CA.
    public var serverCertificate: URL { directory.appending(path: "server.crt") }
    /// The server's private key (PEM).
    public var serverKey: URL { directory.appending(path: "server.key") }

    /// Makes the CA and the server certificate in `directory` (created if missing).
    public init(in directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = { (name: String) in directory.appending(path: name).path }
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2", "-subj", "/CN=Stowage Test CA",
        ])
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost",
        ])
        try Data(
            """
            subjectAltName=DNS:localhost
            basicConstraints=CA:FALSE
            keyUsage=digitalSignature
            extendedKeyUsage=serverAuth

            """.utf8
        ).write(to: directory.appending(path: "server.ext"))
        try Self.openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("server.crt"), "-days", "2", "-extfile", path("server.ext"),
        ])
    }

    /// `redis-server` options that open a TLS port with the server certificate (clients need
    /// no certificate of their own).
    public func redisServerArguments(tlsPort: Int) -> [String] {
        [
            "--tls-port", String(tlsPort), "--tls-cert-file", serverCertificate.path, "--tls-key-file", serverKey.path,
            "--tls-ca-cert-file", certificate.path, "--tls-auth-clients", "no",
        ]
    }

    private static func openssl(_ arguments: [String]) throws {
        try RedisServerProcess.run("openssl", arguments)
    }
}
