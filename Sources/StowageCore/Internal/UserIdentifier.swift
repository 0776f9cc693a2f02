import Foundation

/// The rule for user ids that become directory names: user databases and user spaces.
package enum UserIdentifier {
    package static func validate(_ user: String) throws {
        guard PlainName.isValid(user, maximumLength: 128, extra: [UInt8(ascii: "@")], allowsLeadingDot: false) else {
            throw StowageError(
                code: .invalidArgument,
                message: """
                    the user id \(user.debugDescription) cannot name a directory; use 1 to 128 letters, \
                    digits, '.', '-', '_' or '@', not starting with '.' (hash other ids first)
                    """
            )
        }
    }
}
