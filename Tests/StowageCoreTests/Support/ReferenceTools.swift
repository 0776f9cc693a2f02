import Foundation
import StowageTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `du -s -B1 PATH` and `du -s --apparent-size -B1` are the references for allocated bytes.
func duAllocatedBytes(_ path: String, extraArguments: [String] = []) throws -> Int64 {
    let text = try runCommand(["du", "-s", "-B1"] + extraArguments + [path])
    guard let value = text.split(separator: "\t").first.flatMap({ Int64($0) }) else {
        throw TestFailure("du printed no size: \(text)")
    }
    return value
}

/// Reads an extended attribute with the `getfattr`-independent Python reference.
func pythonGetXattr(_ path: String, _ name: String) throws -> String? {
    let script = """
        import os, sys
        try:
            print(os.getxattr(sys.argv[1], sys.argv[2], follow_symlinks=False).decode())
        except OSError:
            print("<none>")
        """
    let value = try runCommand(["python3", "-c", script, path, name]).trimmingCharacters(in: .newlines)
    return value == "<none>" ? nil : value
}

/// Sets an extended attribute with Python's `os.setxattr` on a descriptor of the item reached
/// from `base` through `components` (raw name bytes, opened one by one relative to the previous
/// descriptor), so any name bytes and any path length can be marked.
func pythonSetXattr(under base: String, _ components: [[UInt8]], _ name: String, _ value: String) throws {
    let script = """
        import os, sys
        fd = os.open(sys.argv[1], os.O_RDONLY)
        for component in sys.argv[4:]:
            fd = os.open(bytes.fromhex(component), os.O_RDONLY, dir_fd=fd)
        os.setxattr(fd, sys.argv[2], sys.argv[3].encode())
        """
    let hex = components.map { $0.map { String(format: "%02x", $0) }.joined() }
    _ = try runCommand(["python3", "-c", script, base, name, value] + hex)
}
