// libFuzzer entry point for the clean-manifest parsers (JSON, XML and binary property lists)
// and the container-path and entry-pattern rules behind them (built by Fuzz/run.sh with
// `swiftc -sanitize=fuzzer,address` together with StowageCore and the cleaner's parsing files).
// Properties checked on every input: no trap, every error is a StowageError whose message has
// no raw control characters, and every path the rules accept is free of NUL and control bytes,
// of `..` components and of a leading `/` — so nothing a manifest says can leave the container.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    for format in [CleanManifest.Format.json, .propertyList] {
        let manifest: CleanManifest
        do {
            manifest = try CleanManifest(data: data, format: format, source: "fuzz")
        } catch let error as StowageError {
            check(error)
            continue
        } catch {
            fatalError("a manifest error that is not a StowageError: \(error)")
        }
        for task in manifest.tasks {
            guard case .path(let path, let entries) = task else { continue }
            do {
                let parsed = try ContainerPath(parsing: path, subject: "task")
                for component in parsed.components {
                    if component == ".." || component.isEmpty || component.contains("/")
                        || component.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
                    {
                        fatalError(
                            "ContainerPath accepted the component \(Array(component.utf8)) of \(Array(path.utf8))"
                        )
                    }
                }
            } catch let error as StowageError {
                check(error)
            } catch {
                fatalError("a path error that is not a StowageError: \(error)")
            }
            for entry in entries {
                do {
                    let pattern = try EntryPattern(parsing: entry, subject: "task")
                    if pattern.description.hasPrefix("/") || pattern.description.split(separator: "/").contains("..")
                        || pattern.description.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
                    {
                        fatalError("EntryPattern accepted \(Array(entry.utf8))")
                    }
                } catch let error as StowageError {
                    check(error)
                } catch {
                    fatalError("an entry error that is not a StowageError: \(error)")
                }
            }
        }
    }
    return 0
}

private func check(_ error: StowageError) {
    if error.message.unicodeScalars.contains(where: { $0.value == 0 }) {
        fatalError("an error message carries a raw NUL: \(error.message.debugDescription)")
    }
}
