/// Something a ``Connector`` can return as its `parameters`: an ordered list of ``Parameter``s.
///
/// ``Parameter`` (one parameter) and ``CompositeParameters`` (several) conform. Conform your own type to
/// build parameters from a model:
///
/// ```swift
/// struct Page: ParametersRepresentable {
///     var number: Int
///     var size: Int
///
///     var parameterList: [Parameter] {
///         [.query(key: "page", value: "\(number)"), .query(key: "per_page", value: "\(size)")]
///     }
/// }
/// ```
public protocol ParametersRepresentable {
    /// The parameters, in the order they apply: query items are appended in this order, form fields are
    /// written in this order.
    var parameterList: [Parameter] { get }
}
