import AmberValues
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One element of an XML document, as much of it as the importer reads:
/// its name, attributes, child elements and the line it starts on. Text
/// content is dropped (Xcode's model files have none).
struct XMLNode: Sendable {
    let name: String
    let attributes: [String: String]
    var children: [XMLNode] = []
    /// 1-based line of the element's start tag (as the parser reports it).
    let line: Int

    subscript(_ key: String) -> String? { attributes[key] }

    /// `entity name="Tag"`: how errors show the element being read.
    var label: String {
        guard let name = attributes["name"] else { return self.name }
        return "\(self.name) name=\"\(name)\""
    }

    /// The children called `name`, in document order.
    func children(named name: String) -> [XMLNode] { children.filter { $0.name == name } }
}

/// Reads a whole document into ``XMLNode``s with FoundationXML's
/// `XMLParser`, turning any parser error into an error naming the file,
/// the line and the innermost element open at that point.
enum XMLTree {
    /// Deeper documents are refused: Xcode's files nest about five levels,
    /// and the tree is walked recursively afterwards.
    static let maximumDepth = 64

    /// The root element of `data`.
    ///
    /// - Throws: ``/AmberValues/AmberError/invalidXcodeModel(file:line:element:message:)``
    ///   for malformed or truncated XML, a document nested deeper than
    ///   ``maximumDepth``, or one with no root element.
    static func parse(_ data: Data, file: String) throws(AmberError) -> XMLNode {
        // FoundationXML's parser traps (a crash, not an error) on a name that
        // is not UTF-8, so nothing else reaches it. Xcode writes UTF-8.
        if let offset = firstInvalidUTF8(data) {
            let line = 1 + data.prefix(offset).reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            throw .invalidXcodeModel(file: file, line: line, element: "model",
                                     message: "the file is not UTF-8: byte \(offset) begins no UTF-8 character")
        }
        let parser = XMLParser(data: data)
        let builder = TreeBuilder()
        parser.delegate = builder
        parser.shouldResolveExternalEntities = false
        let finished = parser.parse()
        // XMLParser on Linux can return true after reporting an error (a truncated file), so both are checked.
        if let failure = builder.failure {
            throw .invalidXcodeModel(file: file, line: failure.line, element: failure.element,
                                     message: failure.code.map { "malformed XML: \(describe(code: $0))" } ?? failure.message)
        }
        if !finished || parser.parserError != nil {
            let code = (parser.parserError as NSError?)?.code ?? 0
            throw .invalidXcodeModel(file: file, line: parser.lineNumber, element: builder.openElement ?? "model",
                                     message: "malformed XML: \(describe(code: code))")
        }
        guard let root = builder.root else {
            throw .invalidXcodeModel(file: file, line: 0, element: "model", message: "the file holds no XML element")
        }
        return root
    }

    /// The offset of the first byte of `data` that is not part of well-formed UTF-8, or nil.
    static func firstInvalidUTF8(_ data: Data) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = data.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// What libxml2's error codes (which XMLParser passes on) that broken model files give mean, in words.
    static func describe(code: Int) -> String {
        switch code {
        case 4: "the document is empty"
        case 5: "the file ends before the document does (truncated?)"
        case 9: "a character that XML does not allow"
        case 23: "an entity reference (&...;) has no closing semicolon"
        case 26: "an entity reference (&...;) names no defined entity"
        case 33, 34, 43, 44: "a quoted value is not closed"
        case 38: "\"<\" inside an attribute value (write &lt;)"
        case 39, 40, 41: "an attribute is malformed (no value, or a missing quote)"
        case 42: "an attribute is given twice"
        case 45: "a comment is not closed"
        case 56, 57: "the XML declaration is malformed"
        case 65: "white space is missing (between attributes?)"
        case 68: "a name is missing (after \"<\"?)"
        case 73: "a tag is not closed (\">\" expected)"
        case 75: "\"=\" expected after an attribute name"
        case 76: "an end tag does not match the element it closes"
        case 77: "an element is not closed"
        case 85, 86: "text after the end of the document"
        default: "XML parser error \(code)"
        }
    }
}

/// Builds the tree as the parser reports elements; used for one parse only.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    struct Failure {
        let line: Int
        let element: String
        /// The parser's error code; nil for the builder's own refusal.
        let code: Int?
        var message = ""
    }

    /// Libxml2's "the document ended early": it follows whatever a truncated file's last tag looked like.
    private static let documentEnd = 5

    private var stack: [XMLNode] = []
    private(set) var root: XMLNode?
    private var failures: [Failure] = []

    /// The innermost open element's label, if any.
    var openElement: String? { stack.last?.label }

    /// The error to report: for a truncated file the one at its end (with
    /// the element it ends in), else the first (later ones are often echoes).
    var failure: Failure? {
        if let end = failures.last(where: { $0.code == Self.documentEnd }) { return end }
        return failures.first
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes attributeDict: [String: String] = [:])
    {
        let node = XMLNode(name: elementName, attributes: attributeDict, line: parser.lineNumber)
        guard stack.count < XMLTree.maximumDepth else {
            failures = [Failure(line: parser.lineNumber, element: node.label, code: nil,
                                message: "elements nest deeper than \(XMLTree.maximumDepth) levels")]
            parser.abortParsing()
            return
        }
        stack.append(node)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty {
            root = node
        } else {
            stack[stack.count - 1].children.append(node)
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        // Parsing goes on (libxml2 recovers), so a truncated file's last error can be told from the first.
        failures.append(Failure(line: parser.lineNumber, element: openElement ?? "model", code: (parseError as NSError).code))
    }
}
