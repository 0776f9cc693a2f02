/// A test's own failure: what went wrong, as the test says it.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
