// The one child process of the test suites: a test that needs another process (killed
// mid-write, sharing a directory, a second node) runs `StowageTestWorker SUBCOMMAND …`.
//
//   StowageTestWorker cache …          the disk cache's reliability tests (CacheWorkerCommand)
//   StowageTestWorker preferences …    the preferences' process tests (PreferencesWorkerCommand)
//   StowageTestWorker stores …         user wipes killed mid-way (StoresWorkerCommand)
//   StowageTestWorker shared-tier …    a second shared-tier node (SharedTierWorkerCommand)
//   StowageTestWorker http-cache …     an HTTP cache with no directory (HTTPCacheWorkerCommand)
//   StowageTestWorker cookies …        a cookie store killed mid-write (CookiesWorkerCommand)
//   StowageTestWorker removals …       removals beside a mount, in a private mount namespace (RemovalsWorkerCommand)
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let all = CommandLine.arguments
let subcommand = all.count > 1 ? all[1] : ""
// Each command reads `arguments[0]` as its name, as it would `CommandLine.arguments`.
let arguments = ["StowageTestWorker \(subcommand)"] + all.dropFirst(2)
switch subcommand {
case "cache": CacheWorkerCommand.run(arguments)
case "preferences": PreferencesWorkerCommand.run(arguments)
case "stores":
    do {
        try StoresWorkerCommand.run(arguments)
    } catch {
        fail("\(error)")
    }
case "shared-tier": await SharedTierWorkerCommand.run(arguments)
case "http-cache": await HTTPCacheWorkerCommand.run(arguments)
case "cookies": CookiesWorkerCommand.run(arguments)
case "open-stores":
    do {
        try await OpenStoresWorkerCommand.run(arguments)
    } catch {
        fail("\(error)")
    }
case "removals":
    do {
        try await RemovalsWorkerCommand.run(arguments)
    } catch {
        fail("\(error)")
    }
default: fail("usage: StowageTestWorker cache|preferences|stores|shared-tier|http-cache|cookies|removals ARGUMENTS…")
}

/// Unbuffered, so the parent sees each line as soon as it is written.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Says what went wrong on standard error and exits with status 2.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("StowageTestWorker: \(message)\n".utf8))
    exit(2)
}
