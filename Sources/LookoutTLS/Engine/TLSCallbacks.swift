import CLookoutSSL

/// The C callbacks OpenSSL calls during a handshake. They capture nothing (C function
/// pointers cannot); each finds its `TLSConnection` through the `SSL` object's ex_data slot,
/// which holds an unretained reference set when the connection is created. The connection
/// owns the `SSL`, and OpenSSL only calls back from inside a call the connection makes, so
/// the reference is always alive.
enum TLSCallbacks {
    /// The ex_data index for the connection pointer, allocated once per process.
    static let exDataIndex: Int32 = lookout_SSL_get_ex_new_index()

    /// The connection stored on `ssl`, if any.
    static func connection(_ ssl: OpaquePointer?) -> TLSConnection? {
        guard let ssl, let pointer = SSL_get_ex_data(ssl, exDataIndex) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Installs the callbacks `configuration` needs on `context`.
    static func install(on context: OpaquePointer, for configuration: TLSConfiguration) {
        SSL_CTX_set_info_callback(context) { ssl, location, value in
            TLSCallbacks.connection(ssl)?.noteInfo(location: location, value: value)
        }
        if configuration.role == .client {
            // Called only when the server sends a CertificateRequest and no certificate is set:
            // the connection offers its identity, if it has one, and notes that one was asked for.
            SSL_CTX_set_client_cert_cb(context) { ssl, x509, pkey in
                guard let connection = TLSCallbacks.connection(ssl) else { return 0 }
                return connection.provideClientCertificate(x509: x509, pkey: pkey)
            }
            return
        }
        if !configuration.applicationProtocols.isEmpty {
            SSL_CTX_set_alpn_select_cb(context, { ssl, out, outLength, offered, offeredLength, _ in
                guard let connection = TLSCallbacks.connection(ssl) else { return SSL_TLSEXT_ERR_NOACK }
                return connection.selectApplicationProtocol(out: out, outLength: outLength,
                                                            offered: offered, offeredLength: offeredLength)
            }, nil)
        }
        if case .perServerName = configuration.certificateSource {
            _ = lookout_SSL_CTX_set_tlsext_servername_callback(context) { ssl, alert, _ in
                guard let connection = TLSCallbacks.connection(ssl) else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                return connection.selectServerCertificate(alert: alert)
            }
        }
    }
}
