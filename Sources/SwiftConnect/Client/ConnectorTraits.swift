/// What the pipeline needs to know about a connector's type, worked out once per type.
///
/// The first two are costly to find out on every request: `String(describing:)` on a type demangles its name, and
/// `as? any AuthorizedConnector` searches the runtime's conformance tables. A program has a bounded set of
/// connector types, so the cache stays small.
struct ConnectorTraits: Sendable {
    /// The type's name as `String(describing:)` gives it (`"TodoConnector"`), for
    /// ``RequestContext/connectorName``.
    let name: String
    /// Whether the type conforms to ``AuthorizedConnector``: only then is its token looked up.
    let isAuthorized: Bool

    private static let cache = Protected<[ObjectIdentifier: ConnectorTraits]>([:])

    /// The traits of `type`, from the cache after the first request of that type.
    static func of(_ type: any Connector.Type) -> ConnectorTraits {
        let key = ObjectIdentifier(type)
        if let traits = cache.withLock({ $0[key] }) { return traits }
        let traits = ConnectorTraits(
            name: String(describing: type),
            isAuthorized: type is any AuthorizedConnector.Type
        )
        cache.withLock { $0[key] = traits }
        return traits
    }
}
