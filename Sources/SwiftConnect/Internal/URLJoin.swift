/// The rule that joins a base URL and an endpoint, for the two places that show the result as text: an `invalidURL`
/// error's message and ``ConnectCall/pathTemplate``. The request's URL itself is joined byte by byte, with the same
/// rule, by `RequestParts`' `expand` (Connector+URLRequest.swift); a change here belongs there too.
enum URLJoin {
    /// `base` and `endpoint` with exactly one `/` between them (`/v1/` and `/todos` make `/v1/todos`, not
    /// `/v1//todos`). An endpoint with no path (empty, or starting with `?` or `#`) is appended as it is. With
    /// `keepsSchemeSlashes`, `base` is a whole URL whose `scheme:` slashes stay (`file:///` and `x` make
    /// `file:///x`); a path's colons are ordinary text.
    static func joined(base: String, endpoint: String, keepsSchemeSlashes: Bool) -> String {
        let path = endpoint.drop { $0 == "/" }
        guard path.count < endpoint.count || (path.first != "?" && path.first != "#" && !path.isEmpty) else {
            return base + endpoint
        }
        let trimmed = base.reversed().drop { $0 == "/" }.reversed()
        if keepsSchemeSlashes && trimmed.last == ":" { return base + path }
        return String(trimmed) + "/" + path
    }
}
