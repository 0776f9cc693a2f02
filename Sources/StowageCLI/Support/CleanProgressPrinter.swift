import Foundation
import StowageCache
import StowageHousekeeping

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows a clean's progress on standard error: a live bar with the phase on a terminal, plain
/// lines (each phase, every 25%) otherwise, so logs stay readable.
struct CleanProgressPrinter {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPhase: CleanPhase?
    private var lastQuarter = -1
    private var drewBar = false

    mutating func show(_ event: CleanEvent) {
        if case .done = event {
            if drewBar { write("\r\u{1B}[2K") }
            return
        }
        let percent = Int((event.fraction * 100).rounded(.down))
        let task: String
        if case .cleaning(_, let name) = event { task = " " + name } else { task = "" }
        if isTerminal {
            let width = 30
            let filled = min(width, Int(event.fraction * Double(width)))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let phase = event.phase.description.padding(toLength: 16, withPad: " ", startingAt: 0)
            write("\r\u{1B}[2K\(phase) [\(bar)] \(String(percent).leftPadded(3))%\(task.prefix(60))")
            drewBar = true
        } else {
            let quarter = percent / 25
            guard event.phase != lastPhase || quarter > lastQuarter else { return }
            lastPhase = event.phase
            lastQuarter = quarter
            write("\(event.phase) \(percent)%\(task)\n")
        }
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
