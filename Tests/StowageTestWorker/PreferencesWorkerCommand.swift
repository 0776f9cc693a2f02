// A child process for the preferences tests.
//
//   StowageTestWorker preferences write FILE PREFIX COUNT KEYS COMPACTION_THRESHOLD
//
// Sets `PREFIX<i % KEYS>` to `PreferencesWorkerValue.value(i)` for i in 0..<COUNT and prints
// `set i` after each set returns, so a parent that kills it knows which writes completed.
import Foundation
import StowagePreferences

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `StowageTestWorker preferences …`: `arguments[0]` names the command.
enum PreferencesWorkerCommand {
    static func run(_ arguments: [String]) {
        guard arguments.count == 7, arguments[1] == "write", let count = Int(arguments[4]),
            let keys = Int(arguments[5]),
            let threshold = Int(arguments[6])
        else {
            FileHandle.standardError.write(Data("usage: write FILE PREFIX COUNT KEYS COMPACTION_THRESHOLD\n".utf8))
            exit(64)
        }
        var configuration = Preferences.Configuration()
        configuration.compactionThreshold = threshold
        do {
            let preferences = try Preferences.open(at: URL(fileURLWithPath: arguments[2]), configuration: configuration)
            for index in 0..<count {
                let key = Preferences.Key<String>(arguments[3] + String(index % keys), default: "")
                try preferences.set(workerValue(index), for: key)
                // Unbuffered: the parent must see each line the moment the set has returned.
                FileHandle.standardOutput.write(Data("set \(index)\n".utf8))
            }
            FileHandle.standardOutput.write(Data("done \(count)\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("worker failed: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// The value write number `index` stores: its number and a length that varies, so records
/// straddle pages and a torn one would show.
func workerValue(_ index: Int) -> String {
    "v\(index)-" + String(repeating: "x", count: index % 300)
}
