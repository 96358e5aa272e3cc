/// The reason phrases RFC 9110 §15 gives its status codes (and the few registered elsewhere that
/// HTTP/1.1 clients meet), for status lines built from a bare code: HTTP/2 responses carry none
/// (RFC 9113 §8.3.2), and Lookout's own errors. A client must not depend on them (RFC 9112 §4).
public enum ReasonPhrase {
    public static func standard(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 103: "Early Hints"  // RFC 8297
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 205: "Reset Content"
        case 206: "Partial Content"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 426: "Upgrade Required"
        case 428: "Precondition Required"  // RFC 6585
        case 429: "Too Many Requests"  // RFC 6585
        case 431: "Request Header Fields Too Large"  // RFC 6585
        case 451: "Unavailable For Legal Reasons"  // RFC 7725
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default:
            switch status / 100 {
            case 1: "Informational"
            case 2: "Success"
            case 3: "Redirection"
            case 4: "Client Error"
            default: "Error"
            }
        }
    }
}
