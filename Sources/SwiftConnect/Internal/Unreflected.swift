/// A stored value that reflection does not open: `dump`, `Mirror` and a debugger's view of what holds it show
/// `summary` and no child.
///
/// For a property whose value is a type of another module that keeps credentials where its own reflection shows them
/// (a `URLSession`'s configuration holds its `httpAdditionalHeaders`, cookie store and credential store): the type
/// that holds it keeps its reflection free of secrets without a `customMirror` of its own.
struct Unreflected<Value: Sendable>: Sendable, CustomReflectable, CustomStringConvertible {
    /// The value.
    let value: Value
    /// What reflection shows in its place.
    let description: String

    /// Wraps `value`, shown as `summary`.
    init(_ value: Value, summary: String) {
        self.value = value
        description = summary
    }

    var customMirror: Mirror { Mirror(self, children: [:]) }
}
