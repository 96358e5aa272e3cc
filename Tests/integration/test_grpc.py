"""gRPC through Lookout (grpcio from PyPI on both ends): a TLS gRPC server, and a client that
reaches it through the proxy (`grpc.http_proxy`) trusting Lookout's CA, so every call is an
intercepted HTTP/2 stream toward an HTTP/2 origin. Unary, server-streaming and bidirectional
calls work, status codes and messages arrive in the trailers, and each call is one logged
exchange. A cleartext gRPC backend is reached over h2c with prior knowledge
(`http2.upstream_h2c_hosts`), here by an HTTP/1.1 client whose chunked response carries the
trailers."""

import struct
from concurrent import futures
from types import SimpleNamespace

import grpc
import pytest

from conftest import raw_exchange, request_bytes
from test_tls_intercept import ca_file, intercepting

SERVICE = "lookout.test.Echo"


def _reverse(request: bytes, context) -> bytes:
    return request[::-1]


def _count(request: bytes, context):
    for i in range(int(request)):
        yield b"item-%d" % i


def _echo(requests, context):
    for message in requests:
        yield b"echo:" + message


def _fail(request: bytes, context) -> bytes:
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing: " + request.decode())


def _handlers():
    return grpc.method_handlers_generic_handler(SERVICE, {
        "Reverse": grpc.unary_unary_rpc_method_handler(_reverse),
        "Count": grpc.unary_stream_rpc_method_handler(_count),
        "Echo": grpc.stream_stream_rpc_method_handler(_echo),
        "Fail": grpc.unary_unary_rpc_method_handler(_fail),
    })


@pytest.fixture(scope="module")
def grpc_server(pki):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((_handlers(),))
    cert, key = pki.good.tls
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    yield port
    server.stop(0)


@pytest.fixture(scope="module")
def plaintext_grpc_server():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((_handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port
    server.stop(0)


def channel_through(proxy, port: int):
    with open(ca_file(proxy), "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    return grpc.secure_channel(f"localhost:{port}", credentials, options=[("grpc.http_proxy", proxy.url),
                                                                           ("grpc.enable_retries", 0)])


def test_unary_streaming_and_bidi_calls_through_interception(make_proxy, pki, grpc_server):
    proxy = make_proxy(intercepting(pki, SimpleNamespace(port=grpc_server)))
    with channel_through(proxy, grpc_server) as channel:
        reverse = channel.unary_unary(f"/{SERVICE}/Reverse")
        assert reverse(b"lookout", timeout=10) == b"tuokool"
        count = channel.unary_stream(f"/{SERVICE}/Count")
        assert list(count(b"5", timeout=10)) == [b"item-%d" % i for i in range(5)]
        echo = channel.stream_stream(f"/{SERVICE}/Echo")
        assert list(echo(iter([b"a", b"bb", b"ccc"]), timeout=10)) == [b"echo:a", b"echo:bb", b"echo:ccc"]
        big = bytes(range(256)) * 4096  # 1 MiB each way, across many DATA frames and windows
        assert reverse(big, timeout=20) == big[::-1]
    recs = proxy.summaries(4, kind="intercepted")
    paths = sorted(r["url"].rsplit("/", 1)[1] for r in recs)
    assert paths == ["Count", "Echo", "Reverse", "Reverse"], recs
    for rec in recs:
        assert rec["method"] == "POST" and rec["status"] == 200, rec
        assert rec["http_version"] == "HTTP/2" and rec["upstream"]["protocol"] == "h2", rec
        assert rec["upstream"]["tls"]["alpn"] == "h2", rec
    assert max(r["bytes"]["request_body"] for r in recs) > 1 << 20


def test_status_and_message_arrive_in_the_trailers(make_proxy, pki, grpc_server):
    proxy = make_proxy(intercepting(pki, SimpleNamespace(port=grpc_server)))
    with channel_through(proxy, grpc_server) as channel:
        fail = channel.unary_unary(f"/{SERVICE}/Fail")
        with pytest.raises(grpc.RpcError) as raised:
            fail(b"widget", timeout=10)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert raised.value.details() == "no such thing: widget"
    rec = proxy.only_summary(kind="intercepted")
    assert rec["status"] == 200 and "error" not in rec, rec


def grpc_frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message: not compressed, 4-byte big-endian length."""
    return b"\0" + struct.pack(">I", len(message)) + message


def test_http1_client_to_h2c_backend_gets_trailers(make_proxy, plaintext_grpc_server):
    proxy = make_proxy({"http2": {"upstream_h2c_hosts": ["127.0.0.1"]}})
    url = f"http://127.0.0.1:{plaintext_grpc_server}/{SERVICE}/Reverse"
    body = grpc_frame(b"prior knowledge")
    resp, _ = raw_exchange(proxy.port, request_bytes("POST", url, body=body, headers=[
        ("Content-Type", "application/grpc"), ("TE", "trailers"), ("Connection", "close"),
        ("Content-Length", str(len(body)))]))
    assert resp.status == 200 and resp.header("Content-Type") == "application/grpc", resp.headers
    assert resp.body == grpc_frame(b"egdelwonk roirp"), resp.body
    # No content-length from an HTTP/2 origin: chunked for HTTP/1.1, with the trailer section.
    assert resp.framing == "chunked" and "grpc-status: 0" in resp.trailers, (resp.headers, resp.trailers)
    rec = proxy.only_summary()
    assert rec["upstream"]["protocol"] == "h2" and rec["http_version"] == "HTTP/1.1", rec
