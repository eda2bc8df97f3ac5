/// Several parameters of a request, in order: any mix of path values, query items and a body.
///
/// ```swift
/// CompositeParameters(
///     .path(key: "userId", value: "\(userId)"),
///     .path(key: "todoId", value: "\(todoId)"),
///     .query(key: "action", value: action.rawValue),
///     .jsonObject(value: object)
/// )
/// ```
public struct CompositeParameters: ParametersRepresentable {
    /// The parameters, in the order given.
    public var parameters: [Parameter]

    /// Creates a composite of the given parameters.
    ///
    /// - Parameter parameters: The parameters, in the order they apply.
    public init(_ parameters: Parameter...) {
        self.parameters = parameters
    }

    /// Creates a composite of an array of parameters, for lists built in code.
    ///
    /// - Parameter parameters: The parameters, in the order they apply.
    public init(_ parameters: [Parameter]) {
        self.parameters = parameters
    }

    /// The parameters, in the order given.
    public var parameterList: [Parameter] { parameters }
}
