/// A first-in, first-out list: appended at the back, taken from the front in constant time.
///
/// Taken slots are emptied at once (a large element, such as a chunk of a body, is freed when taken) and dropped in
/// bulk once they are the larger part of the storage, so a list that is never empty does not grow without bound.
package struct FIFO<Element> {
    private var storage: [Element?] = []
    /// The index in `storage` of the oldest element not taken.
    private var head = 0

    package init() {}

    /// Whether nothing waits.
    package var isEmpty: Bool { head == storage.count }

    /// The waiting elements, oldest first.
    package var elements: [Element] { storage[head...].compactMap { $0 } }

    /// The number of waiting elements.
    package var count: Int { storage.count - head }

    /// The oldest waiting element that satisfies `predicate`, found without copying the list.
    package func first(where predicate: (Element) throws -> Bool) rethrows -> Element? {
        for index in head..<storage.count {
            if let element = storage[index], try predicate(element) { return element }
        }
        return nil
    }

    /// Keeps only the waiting elements that satisfy `isIncluded`, in order.
    package mutating func keep(where isIncluded: (Element) throws -> Bool) rethrows {
        storage = try storage[head...].filter { element in try element.map(isIncluded) ?? false }
        head = 0
    }

    /// Adds `element` at the back.
    package mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Takes the oldest element, or `nil` when none waits.
    package mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Drops every waiting element.
    package mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
