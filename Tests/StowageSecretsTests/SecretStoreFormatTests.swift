import Crypto
import Foundation
import StowageCore
import StowageSecrets
import Testing

@Suite("SecretStore format")
struct SecretStoreFormatTests {
    @Test("a store written by a newer format is refused with .unsupported, and its files are left as they were")
    func newerFormat() throws {
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "stowage-secrets-fmt-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = SecretStore.MasterKey.key(.init(size: .bits256))
        let store = try SecretStore(directory: directory, masterKey: key)
        try store.set("kept", service: "s", account: "a")

        let headerURL = directory.appending(path: "store.json")
        var header = try JSONSerialization.jsonObject(with: Data(contentsOf: headerURL)) as! [String: Any]
        header["format"] = 99
        let newer = try JSONSerialization.data(withJSONObject: header)
        try newer.write(to: headerURL)

        let error = #expect(throws: StowageError.self) { try SecretStore(directory: directory, masterKey: key) }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("format 99") == true)
        #expect(try Data(contentsOf: headerURL) == newer)
    }
}
