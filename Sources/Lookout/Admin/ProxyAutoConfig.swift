import LookoutTLS

/// The proxy auto-config file a proxy listener serves at `/proxy.pac`
/// (`application/x-ns-proxy-autoconfig`, the Netscape PAC format browsers and `lookout exec`'s
/// peers read): `FindProxyForURL` sends every request through the listener the file was fetched
/// from, except the hosts `pac.direct` lists, which go straight to the origin. The host patterns
/// keep their meaning in the script: `*.example.com` is exactly one label in front,
/// `**.example.com` one or more, `**` every host; a wildcard never matches an IP literal. With a
/// SOCKS5 listener, the script names it after the proxy, for a browser to try when the proxy
/// cannot be reached.
enum ProxyAutoConfig {
    static let contentType = "application/x-ns-proxy-autoconfig"

    /// The script for a client that reached Lookout at `listener` ("127.0.0.1:8080", "[::1]:8080").
    static func script(listener: String, direct: [HostPattern], socks: String? = nil) -> String {
        let route = "PROXY \(listener)" + (socks.map { "; SOCKS5 \($0)" } ?? "")
        var exact: [String] = []
        var oneLabel: [String] = []
        var anyDepth: [String] = []
        var everyHost = false
        for pattern in direct {
            switch pattern.kind {
            case .exact: exact.append(pattern.domain)
            case .singleLabelWildcard: oneLabel.append(pattern.domain)
            case .anyDepthWildcard: anyDepth.append(pattern.domain)
            case .any: everyHost = true
            }
        }
        return """
            // Lookout's proxy auto-config: every request through \(listener), except the hosts in pac.direct.
            var lookoutExact = \(list(exact));
            var lookoutOneLabel = \(list(oneLabel));
            var lookoutAnyDepth = \(list(anyDepth));
            var lookoutEveryHost = \(everyHost);

            function lookoutIsIP(host) {
              return /^[0-9.]+$/.test(host) || host.indexOf(":") >= 0;
            }

            function lookoutGoesDirect(host) {
              host = host.toLowerCase().replace(/\\.$/, "").replace(/^\\[(.*)\\]$/, "$1");
              if (lookoutEveryHost) return true;
              if (lookoutExact.indexOf(host) >= 0) return true;
              if (lookoutIsIP(host)) return false;
              var dot = host.indexOf(".");
              if (dot > 0 && lookoutOneLabel.indexOf(host.substring(dot + 1)) >= 0) return true;
              for (var i = 0; i < lookoutAnyDepth.length; i++) {
                var domain = lookoutAnyDepth[i];
                var cut = host.length - domain.length - 1;
                if (cut > 0 && host.charAt(cut) == "." && host.substring(cut + 1) == domain) return true;
              }
              return false;
            }

            function FindProxyForURL(url, host) {
              if (lookoutGoesDirect(host)) return "DIRECT";
              return "\(route)";
            }

            """
    }

    /// A JavaScript array of strings. Host patterns hold only letters, digits, `-`, `.`, `:` and
    /// brackets (they are checked when read), so a name never needs escaping; a quote or a
    /// backslash is escaped all the same.
    private static func list(_ names: [String]) -> String {
        var text = "["
        for (index, name) in names.enumerated() {
            if index > 0 { text += ", " }
            text += "\""
            for character in name {
                if character == "\"" || character == "\\" { text.append("\\") }
                text.append(character)
            }
            text += "\""
        }
        return text + "]"
    }
}
