internal import COpenSSL
import Foundation

/// An ordered X.509 name such as `CN=api.example.test, O=Example`.
public struct DistinguishedName: Hashable, Sendable, CustomStringConvertible {
    /// One attribute, by its OpenSSL short name (`CN`, `O`, `OU`, `C`, ...).
    public struct Attribute: Hashable, Sendable {
        public var type: String
        public var value: String
        public init(_ type: String, _ value: String) {
            self.type = type
            self.value = value
        }
    }

    public var attributes: [Attribute]

    public init(_ attributes: [Attribute] = []) { self.attributes = attributes }

    public init(commonName: String? = nil, organization: String? = nil, organizationalUnit: String? = nil) {
        var attributes: [Attribute] = []
        if let organization { attributes.append(.init("O", organization)) }
        if let organizationalUnit { attributes.append(.init("OU", organizationalUnit)) }
        if let commonName { attributes.append(.init("CN", commonName)) }
        self.attributes = attributes
    }

    public var isEmpty: Bool { attributes.isEmpty }

    /// The same attributes in the order `types` lists them (types not listed
    /// keep their order, after the listed ones): a forged subject written in
    /// the order of the genuine one it imitates.
    func ordered(like types: [String]) -> DistinguishedName {
        func rank(_ attribute: Attribute) -> Int { types.firstIndex(of: attribute.type) ?? types.count }
        return DistinguishedName(attributes.enumerated()
            .sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }
            .map(\.element))
    }

    public var description: String {
        attributes.reversed().map { "\($0.type)=\($0.value)" }.joined(separator: ",")
    }

    /// Builds an OpenSSL `X509_NAME`; the caller frees it.
    func makeX509Name() throws -> OpaquePointer {
        guard let name = X509_NAME_new() else { throw OpenSSL.error("X509_NAME_new failed") }
        do {
            try add(to: name)
        } catch {
            X509_NAME_free(name)
            throw error
        }
        return name
    }

    /// Appends the attributes to an existing `X509_NAME`.
    func add(to name: OpaquePointer?) throws {
        for attribute in attributes {
            let ok: Int32
            switch attribute.type {
            // The common attributes by NID: looking a name up as text costs string compares.
            case "CN": ok = X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8, attribute.value, -1, -1, 0)
            case "O": ok = X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8, attribute.value, -1, -1, 0)
            default: ok = X509_NAME_add_entry_by_txt(name, attribute.type, MBSTRING_UTF8, attribute.value, -1, -1, 0)
            }
            if ok != 1 {
                throw OpenSSL.error("cannot put \(attribute.type)=\(attribute.value) into a name", code: .invalidArgument)
            }
        }
    }
}
