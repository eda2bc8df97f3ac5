import Foundation
import SwiftConnect
import XCTest

/// The errors of a transfer's files, as a caller reads them.
final class TransferOptionsTests: XCTestCase {
    /// A write that fails with an errno Foundation has no file error for (EFBIG: a file over a FAT32 drive's 4 GiB,
    /// or over `ulimit -f`) comes as Foundation's catch-all write error, the errno only under it: the message said
    /// "(NSCocoaErrorDomain error 512.)" on Linux, and nothing a user could act on.
    func testAFileErrorWithOnlyAnErrnoToSayWhyNamesIt() {
        let url = URL(fileURLWithPath: "/media/usb/disk.img")
        for code in [CocoaError.Code.fileWriteUnknown, .fileReadUnknown] {
            let underlying = NSError(domain: NSPOSIXErrorDomain, code: Int(POSIXErrorCode.EFBIG.rawValue))
            let error = ConnectError.fileAccess(
                CocoaError(code, userInfo: [NSUnderlyingErrorKey: underlying]), url: url, request: nil)

            XCTAssertEqual(error.kind, .fileAccess)
            XCTAssertTrue(error.message.contains(String(cString: strerror(EFBIG))), error.message)
            XCTAssertTrue(error.message.contains(url.path), error.message)
            XCTAssertFalse(error.message.contains("NSCocoaErrorDomain"), error.message)
        }
    }

    /// A file error Foundation names keeps its own words.
    func testAFileErrorFoundationNamesKeepsItsWords() {
        let url = URL(fileURLWithPath: "/tmp/report.pdf")
        let error = ConnectError.fileAccess(POSIXError(.ENOSPC), url: url, request: nil)
        XCTAssertEqual(error.message, "could not access /tmp/report.pdf: \(POSIXError(.ENOSPC).localizedDescription)")
    }
}
