import ArgumentParser
import Foundation
import Testing

@testable import StowageCLI

/// Every help screen reads as paragraphs at any width: ArgumentParser wraps abstracts and
/// discussions to the terminal, so a line break written into the text itself leaves a word or
/// two alone on a line wherever the terminal is narrower than the text was wrapped for.
@Suite("help texts")
struct HelpTextTests {
    /// Every command of the tool, the root first, with its path for messages.
    static let commands: [(path: String, type: any ParsableCommand.Type)] = {
        var found: [(String, any ParsableCommand.Type)] = []
        func visit(_ type: any ParsableCommand.Type, path: String) {
            found.append((path, type))
            for subcommand in type.configuration.subcommands {
                visit(subcommand, path: path + " " + subcommand._commandName)
            }
        }
        visit(StowageTool.self, path: "stowage")
        return found
    }()

    @Test("the tool has its thirteen commands and their subcommands")
    func everyCommandIsVisited() {
        let paths = Self.commands.map(\.path)
        #expect(paths.count > 30)
        #expect(paths.contains("stowage clean"))
        #expect(paths.contains("stowage proxy invalidate"))
        #expect(paths.contains("stowage purgeable add"))
    }

    @Test("no paragraph wraps into a fragment shorter than a third of the width", arguments: [80, 120])
    func noFragments(columns: Int) {
        for (path, type) in Self.commands {
            let help = StowageTool.helpMessage(for: type, columns: columns)
            for fragment in Self.fragments(in: help, columns: columns) {
                Issue.record(
                    "\(path) --help at \(columns) columns: \"\(fragment)\" is left alone mid-paragraph\n\(help)"
                )
            }
        }
    }

    @Test("no paragraph has a line break of its own: each line is as full as the width allows", arguments: [80, 120])
    func noHardLineBreaks(columns: Int) {
        for (path, type) in Self.commands {
            let help = StowageTool.helpMessage(for: type, columns: columns)
            for line in Self.hardBreaks(in: help, columns: columns) {
                Issue.record("\(path) --help at \(columns) columns: a line break inside a paragraph after \"\(line)\"")
            }
        }
    }

    @Test("no example or table line is too long for 80 columns and wraps to the left margin")
    func examplesFit() {
        for (path, type) in Self.commands {
            let help = StowageTool.helpMessage(for: type, columns: 80)
            let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
            for (line, next) in zip(lines, lines.dropFirst())
            where line.first?.isWhitespace == true && next.first.map({ !$0.isWhitespace }) == true {
                Issue.record("\(path) --help at 80 columns: \"\(line)\" wraps into \"\(next)\"")
            }
        }
    }

    @Test("the manual page docs/stowage.1 says what the help says (Scripts/generate-manual.sh regenerates it)")
    func manualPageIsCurrent() throws {
        let repository = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let page = try String(contentsOf: repository.appending(path: "docs/stowage.1"), encoding: .utf8)
        for (path, type) in Self.commands {
            let configuration = type.configuration
            let lines = [configuration.abstract] + configuration.discussion.split(separator: "\n").map(String.init)
            for line in lines where !line.isEmpty {
                if !page.contains(Self.manualText(line)) {
                    Issue.record("docs/stowage.1 lacks \"\(line)\" of \(path); run Scripts/generate-manual.sh")
                }
                // roff reads such a line as a request: it would vanish from the page (roff(7)).
                if line.hasPrefix(".") || line.hasPrefix("'") {
                    Issue.record("\(path): \"\(line)\" starts with a roff control character")
                }
            }
        }
    }

    /// `line` as swift-argument-parser's generate-manual writes it: ASCII only, `\\` as `\\e`.
    static func manualText(_ line: String) -> String {
        String(line.filter(\.isASCII)).replacing("\\", with: "\\e")
    }

    /// Pairs of lines of one paragraph: both flush left and not blank. Indented lines are
    /// ArgumentParser's tables (options, subcommands) and the texts' example blocks.
    static func paragraphLinePairs(in help: String) -> [(line: Substring, next: Substring)] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        func isProse(_ line: Substring) -> Bool { !line.isEmpty && !line.first!.isWhitespace }
        return zip(lines, lines.dropFirst()).filter { isProse($0) && isProse($1) }.map { ($0, $1) }
    }

    /// Lines that end mid-paragraph shorter than a third of the width.
    static func fragments(in help: String, columns: Int) -> [Substring] {
        paragraphLinePairs(in: help).filter { $0.line.count < columns / 3 }.map(\.line)
    }

    /// Lines that end mid-paragraph although the next word would have fit after them: the text
    /// broke the line, not ArgumentParser's wrapping (which fills each line with whole words).
    static func hardBreaks(in help: String, columns: Int) -> [Substring] {
        paragraphLinePairs(in: help).filter { pair in
            let nextWord = pair.next.split(separator: " ").first ?? ""
            return pair.line.count + 1 + nextWord.count < columns - 1
        }.map(\.line)
    }

    @Test("the checks find the ragged lines of a text wrapped by hand for a wider terminal")
    func checksCatchHandWrappedText() {
        let help = """
            OVERVIEW: Do something.

            Every command works on a container: the five locations (documents, application
            support,
            caches, preferences, temporary) of one app.

            USAGE: stowage thing

            OPTIONS:
              --flag                  Something.
            """
        #expect(Self.fragments(in: help, columns: 80) == ["support,"])
        #expect(Self.hardBreaks(in: help, columns: 80) == ["support,"])
        #expect(
            Self.fragments(in: "A full line of prose that ends where the wrapping put it\nand goes on.", columns: 80)
                == []
        )
    }
}
