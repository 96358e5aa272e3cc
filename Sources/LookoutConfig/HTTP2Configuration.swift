import LookoutModel

extension LookoutConfiguration {
    /// `http2`: modelled once, in LookoutModel.
    public typealias HTTP2 = HTTP2Settings
}
