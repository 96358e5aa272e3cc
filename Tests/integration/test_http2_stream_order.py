"""RFC 9113 §5.1.1 with a client that does not start at stream 1 (an input of the h2_server fuzz
target): the request on stream 3 is answered, and a later one on the skipped stream 1 ends the
connection with PROTOCOL_ERROR while the proxy serves on."""

from __future__ import annotations

from conftest import curl
from h2_client import H2Client, Response
from test_http2 import good_origin  # noqa: F401 (the fixture)
from test_tls_intercept import ca_file, intercepting

PROTOCOL_ERROR = 0x1


def test_a_first_request_on_stream_3_then_one_on_stream_1(make_proxy, pki, good_origin):
    proxy = make_proxy(intercepting(pki, good_origin))
    client = H2Client(proxy.port, ca_file(proxy), port=good_origin.port)
    fields = [(":method", "GET"), (":scheme", "https"), (":authority", client.authority), (":path", "/fixed/5")]
    client.conn.send_headers(3, fields, end_stream=True)
    client.responses[3] = Response()
    client.flush()
    response = client.response(3)
    assert response.status == 200, response
    # Stream 1 was skipped, so it is closed (§5.1.1): the connection ends, the proxy does not.
    client.responses[5] = Response()
    client.conn.send_headers(5, fields, end_stream=True)  # the h2 library refuses to go back to 1 …
    client.flush()
    client.sock.sendall(bytes([0, 0, 6, 1, 5, 0, 0, 0, 1]) + b"\x82\x87\x84\x41\x01a")  # … so stream 1 goes raw
    assert client.wait_closed(), "the connection should end"
    assert client.goaway is None or client.goaway[0] == PROTOCOL_ERROR, client.goaway
    client.close()
    assert curl(proxy, f"https://localhost:{good_origin.port}/fixed/3", "--http2", "--cacert", ca_file(proxy)).status == 200
