#if os(Linux) || os(Android)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif
import StowageCore

/// The kernel's memory pressure stall information (PSI) files, and registering a trigger on one.
///
/// See the kernel's `Documentation/accounting/psi.rst`, "Monitoring for pressure thresholds".
enum PressureStallFiles {
    /// The system-wide file, present when the kernel has PSI.
    static let systemWide = "/proc/pressure/memory"

    /// The files to try, best first: the process's cgroup v2 `memory.pressure` (pressure within
    /// the container's limit), then the system-wide file.
    static func candidates() -> [String] {
        guard let cgroup = cgroupMemoryPressurePath(), cgroup != systemWide else { return [systemWide] }
        return [cgroup, systemWide]
    }

    /// `<cgroup2 mount point><path from /proc/self/cgroup's "0::" line>/memory.pressure`.
    ///
    /// The mount point comes from `/proc/self/mountinfo`, since on hybrid hierarchies cgroup v2
    /// sits at `/sys/fs/cgroup/unified` rather than `/sys/fs/cgroup`.
    static func cgroupMemoryPressurePath() -> String? {
        guard let cgroups = readSmallFile("/proc/self/cgroup"),
            let line = cgroups.split(separator: "\n").first(where: { $0.hasPrefix("0::") }),
            let mountinfo = readSmallFile("/proc/self/mountinfo")
        else { return nil }
        let cgroupPath = String(line.dropFirst(3))
        for mount in mountinfo.split(separator: "\n") {
            // `id parent major:minor root mount-point options [optional fields] - type source options`
            let fields = mount.split(separator: " ")
            guard let separator = fields.firstIndex(of: "-"), separator >= 5, separator + 1 < fields.count,
                fields[separator + 1] == "cgroup2"
            else { continue }
            let root = unescape(fields[3])
            let mountPoint = unescape(fields[4])
            var relative = cgroupPath
            if root != "/" {
                guard relative == root || relative.hasPrefix(root + "/") else { continue }
                relative = String(relative.dropFirst(root.count))
            }
            let components = (mountPoint + "/" + relative).split(separator: "/")
            return "/" + (components + ["memory.pressure"]).joined(separator: "/")
        }
        return nil
    }

    /// Opens `path` and registers `trigger` on it.
    ///
    /// - Returns: The descriptor to poll for `POLLPRI`, or the `errno` of the step that failed.
    static func arm(_ path: String, trigger: String) -> Result<Int32, Errno> {
        let descriptor = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(.current) }
        // With the terminating NUL: `/proc/pressure/*` overwrites the last byte written with one,
        // so a trigger written without it loses its last digit.
        let written = trigger.withCString { write(descriptor, $0, strlen($0) + 1) }
        guard written >= 0 else {
            let error = Errno.current
            close(descriptor)
            return .failure(error)
        }
        return .success(descriptor)
    }

    /// The averages of the PSI file open on `descriptor`, read from its start; `nil` when it
    /// cannot be read or parsed.
    static func averages(of descriptor: Int32) -> Averages? {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Averages(parsing: String(decoding: buffer[0..<count], as: UTF8.self))
    }

    /// The error when no candidate accepted the trigger: every file tried, why it failed, and
    /// what to do.
    static func unsupported(_ failures: [(path: String, errno: Errno)], trigger: String) -> StowageError {
        let reasons = failures.map { "'\($0.path)': \($0.errno) — \(advice($0.errno, trigger: trigger))" }
        return StowageError(
            code: .unsupported,
            message: "cannot watch memory pressure stall information (PSI): "
                + reasons.joined(separator: "; ")
                + ". Memory pressure still reaches caches through MemoryPressureSource.notify(_:) "
                + "or MemoryCache.handleMemoryPressure(_:)",
            path: failures.last?.path,
            cause: failures.last?.errno
        )
    }

    private static func advice(_ errno: Errno, trigger: String) -> String {
        switch errno.rawValue {
        case ENOENT:
            "the kernel has no PSI (it needs CONFIG_PSI=y) or this cgroup has no memory controller"
        case EOPNOTSUPP:
            "PSI is built in but disabled: boot the kernel with psi=1"
        case EACCES, EPERM, EROFS:
            "registering a trigger needs write access to the file; run as its owner, "
                + "or mount /proc and /sys read-write in the container"
        case EINVAL:
            "the kernel refused the trigger '\(trigger)': the window must be 0.5 s to 10 s "
                + "(a multiple of 2 s without CAP_SYS_RESOURCE) and the stall at most the window"
        default:
            "unexpected failure"
        }
    }

    /// Reads a small pseudo-file (`/proc` reports a size of 0, so read until end of file).
    private static func readSmallFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += chunk[..<count]
            if bytes.count > 1 << 20 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Undoes mountinfo's octal escapes (`\040` for a space).
    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "\\"), index + 3 < utf8.count,
                let value = UInt8(String(decoding: utf8[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The `avg10` figures of a PSI file: the percentage of the last 10 s in which some tasks
    /// (`some`) or all of them (`full`) stalled on memory.
    ///
    /// ```
    /// some avg10=0.00 avg60=0.00 avg300=0.00 total=0
    /// full avg10=0.00 avg60=0.00 avg300=0.00 total=0
    /// ```
    struct Averages: Equatable {
        var someAverage10: Double
        var fullAverage10: Double

        /// `nil` when no `some` line with an `avg10` is there (a `full` line is optional: older
        /// kernels lack it for the system-wide file).
        init?(parsing contents: String) {
            var some: Double?
            var full = 0.0
            for line in contents.split(whereSeparator: \.isNewline) {
                let fields = line.split(separator: " ")
                guard let kind = fields.first,
                    let average = fields.first(where: { $0.hasPrefix("avg10=") }).flatMap({ Double($0.dropFirst(6)) }),
                    average.isFinite, average >= 0
                else { continue }
                if kind == "some" { some = average } else if kind == "full" { full = average }
            }
            guard let some else { return nil }
            someAverage10 = some
            fullAverage10 = full
        }
    }
}
#endif
