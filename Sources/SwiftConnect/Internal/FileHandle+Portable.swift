import Foundation

extension FileHandle {
    /// Writes `data`, throwing a write error. `write(contentsOf:)` needs macOS 10.15.4, iOS 13.4, tvOS 13.4 and
    /// watchOS 6.2, newer than the package's oldest systems; before them only `write(_:)` exists, which raises an
    /// Objective-C exception on an error (it cannot be caught in Swift).
    func writePortably(_ data: Data) throws {
        if #available(macOS 10.15.4, iOS 13.4, tvOS 13.4, watchOS 6.2, *) {
            try write(contentsOf: data)
        } else {
            write(data)
        }
    }

    /// Up to `count` bytes, empty at the end of the file, throwing a read error. `read(upToCount:)` needs the same
    /// systems as ``writePortably(_:)``; before them only `readData(ofLength:)` exists, which raises on an error.
    func readPortably(upTo count: Int) throws -> Data {
        if #available(macOS 10.15.4, iOS 13.4, tvOS 13.4, watchOS 6.2, *) {
            return try read(upToCount: count) ?? Data()
        } else {
            return readData(ofLength: count)
        }
    }
}
