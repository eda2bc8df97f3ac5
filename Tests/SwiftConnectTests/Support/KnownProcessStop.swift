import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking

    /// A FoundationNetworking defect that stops the process, which no test can run in its own process: the test
    /// starts itself again in a child process, which meets the defect, and checks that the child was stopped by
    /// it. A FoundationNetworking that fixes the defect makes the check fail, so the known defect is noticed and
    /// its mention in SECURITY.md goes.
    enum KnownProcessStop {
        private static let variable = "SWIFTCONNECT_KNOWN_PROCESS_STOP"

        /// The raw answer this process was started to receive, when it is such a child.
        static var answerToReceive: Data? {
            ProcessInfo.processInfo.environment[variable].flatMap { Data(base64Encoded: $0) }
        }

        /// Sends one `method` request with URLSessionTransport to a server that answers `answer`, as it is, and
        /// closes the connection: the child's part.
        static func receive(_ answer: Data, method: String = "GET") throws {
            let server = try LocalServer.started()
            defer { server.stop() }
            server.route("*", "/answer") { _ in LocalServer.Response().withFault(.raw(answer)) }
            var request = URLRequest(url: server.baseURL.appendingPathComponent("answer"))
            request.httpMethod = method
            request.timeoutInterval = 10
            let result = try URLSessionTransport().send(request).waitForResult(timeout: 20)
            print("the child was not stopped: \(result)")
        }

        /// Runs `test` (`"Module.Class/testMethod"`, the test calling this) in a child process that receives
        /// `answer`, and checks that FoundationNetworking stopped it, saying `message` if given (a trap such as an
        /// arithmetic overflow says nothing).
        static func expect(
            _ test: String, receiving answer: Data, stopsWith message: String?,
            file: StaticString = #filePath, line: UInt = #line
        ) throws {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            child.arguments = [test]
            var environment = ProcessInfo.processInfo.environment
            environment[variable] = answer.base64EncodedString()
            environment["SWIFT_BACKTRACE"] = "enable=no"
            child.environment = environment
            let output = Pipe()
            child.standardOutput = output
            child.standardError = output
            let exited = DispatchSemaphore(value: 0)
            child.terminationHandler = { _ in exited.signal() }
            try child.run()
            let text = Protected(Data())
            let read = DispatchGroup()
            read.enter()
            DispatchQueue.global().async {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                text.withLock { $0 = data }
                read.leave()
            }
            guard exited.wait(timeout: .now() + 120) == .success else {
                child.terminate()
                return XCTFail("the child process did not end within 120 s", file: file, line: line)
            }
            _ = read.wait(timeout: .now() + 10)
            let log = String(decoding: text.withLock { $0 }, as: UTF8.self).suffix(2_000)
            let answerText = String(decoding: answer, as: UTF8.self).debugDescription
            XCTAssertEqual(
                child.terminationReason, .uncaughtSignal,
                "\(answerText): FoundationNetworking no longer stops the process. Remove this known defect from the "
                    + "test and from SECURITY.md.\n\(log)", file: file, line: line)
            if let message {
                XCTAssertTrue(log.contains(message), "\(answerText): \(log)", file: file, line: line)
            }
        }
    }
#endif
