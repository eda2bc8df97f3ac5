import InMemoryLogging
import Logging
import SwiftConnectTesting
import XCTest

/// What the Logging package's test cases share: a `LocalServer` started for each test and a `Logger` at `trace` whose
/// lines an `InMemoryLogHandler` keeps.
class LoggingTestCase: XCTestCase {
    /// The server the test's calls go to, stopped after the test.
    var server: LocalServer!
    /// Where `logger`'s lines go.
    var handler: InMemoryLogHandler!
    /// A logger at `trace` writing to `handler`.
    var logger: Logger!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        let handler = InMemoryLogHandler()
        self.handler = handler
        logger = Logger(label: "tests") { _ in handler }
        logger.logLevel = .trace
    }

    override func tearDown() {
        server.stop()
    }
}
