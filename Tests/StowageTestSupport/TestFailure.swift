/// A test's own failure: what went wrong, as the test says it.
public struct TestFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    /// A failure that says `description`.
    public init(_ description: String) {
        self.description = description
    }
}
