/// A child process or a server that did not do what its caller needed: what went wrong, in a
/// sentence.
public struct ProcessFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    /// A failure that says `description`.
    public init(_ description: String) {
        self.description = description
    }
}
