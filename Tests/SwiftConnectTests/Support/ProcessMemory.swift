import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's memory, for tests that state and check a memory bound (never a timing).
enum ProcessMemory {
    /// The resident set size in bytes (Linux: `VmRSS` of /proc/self/status), or `nil` where unavailable.
    static func residentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let digits = line.split(separator: " ").compactMap { Int($0) }
            return digits.first.map { $0 * 1024 }
        }
        return nil
    }

    /// Whether the tests run under a sanitizer (ThreadSanitizer or AddressSanitizer), which makes large
    /// transfers many times slower and memory figures meaningless; large tests scale down.
    static var isSanitized: Bool {
        #if canImport(Glibc) || canImport(Darwin)
            guard let handle = dlopen(nil, RTLD_NOW) else { return false }
            defer { dlclose(handle) }
            return dlsym(handle, "__tsan_init") != nil || dlsym(handle, "__asan_init") != nil
        #else
            return false
        #endif
    }
}

/// Samples the resident set size on a timer until stopped; reports the peak.
final class MemorySampler: @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `peak`; the timer source is thread-safe.
    private let lock = NSLock()
    private var peak = 0
    private let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "MemorySampler"))

    init(intervalMilliseconds: Int = 2) {
        timer.schedule(deadline: .now(), repeating: .milliseconds(intervalMilliseconds))
        timer.setEventHandler { [weak self] in
            if let bytes = ProcessMemory.residentBytes() { self?.record(bytes) }
        }
        timer.resume()
    }

    private func record(_ bytes: Int) {
        lock.lock()
        peak = max(peak, bytes)
        lock.unlock()
    }

    /// Stops sampling and returns the highest resident size seen.
    func stop() -> Int {
        timer.cancel()
        if let bytes = ProcessMemory.residentBytes() { record(bytes) }
        lock.lock()
        defer { lock.unlock() }
        return peak
    }
}
