import Foundation
import StowageCore

extension PreferenceValue {
    /// Refuses a value that JSON and property-list exports could not write back: NaN or an
    /// infinity, as a double or as a date's seconds, anywhere inside the value.
    ///
    /// Every way a value comes in (``Preferences/set(_:forName:)``, the typed setters, an
    /// import) goes through this one check, so an export always round-trips.
    ///
    /// - Parameter path: The value's name, used in the message (`ratio`, or `window/zoom` inside).
    /// - Throws: `StowageError` `.invalidArgument` naming the path and the number.
    package func checkRepresentable(path: String) throws {
        if let (inner, number) = nonFinite(at: path) {
            throw StowageError(
                code: .invalidArgument,
                message: """
                    the value at \(inner.debugDescription) is \(number), which preferences cannot hold: numbers and \
                    dates must be finite (JSON and property lists have no NaN or infinity)
                    """
            )
        }
    }

    /// The path and value of the first non-finite number inside this value, if any.
    private func nonFinite(at path: String) -> (String, Double)? {
        switch self {
        case .double(let value):
            return value.isFinite ? nil : (path, value)
        case .date(let value):
            return value.timeIntervalSince1970.isFinite ? nil : (path, value.timeIntervalSince1970)
        case .array(let values):
            for (index, value) in values.enumerated() {
                if let found = value.nonFinite(at: "\(path)/\(index)") { return found }
            }
            return nil
        case .dictionary(let values):
            for key in values.keys.sorted() {
                if let found = values[key]!.nonFinite(at: "\(path)/\(key)") { return found }
            }
            return nil
        case .bool, .int, .string, .data:
            return nil
        }
    }
}
