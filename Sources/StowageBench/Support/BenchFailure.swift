/// A bench run that cannot go on: a fixture that could not be built, a baseline tool's output
/// the bench cannot read.
struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
