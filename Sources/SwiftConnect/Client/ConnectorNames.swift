/// The names of connector types, for ``RequestContext/connectorName``, worked out once per type.
///
/// `String(describing:)` on a type demangles its name: about 10,000 instructions, more than the rest of a small
/// request's pipeline. A program has a bounded set of connector types, so the cache stays small.
enum ConnectorNames {
    private static let cache = Protected<[ObjectIdentifier: String]>([:])

    /// The type's name as `String(describing:)` gives it (`"TodoConnector"`).
    static func name(of type: any Connector.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = cache.withLock({ $0[key] }) { return name }
        let name = String(describing: type)
        cache.withLock { $0[key] = name }
        return name
    }
}
