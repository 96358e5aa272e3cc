-- wrk script for the Lookout benchmark (Tests/bench/run.sh).
--
-- * When BENCH_TARGET is set (e.g. "http://127.0.0.1:8081/1k") every request is
--   sent in absolute-form to that URL, so wrk can drive a forward proxy: wrk
--   connects to the proxy given on its command line and asks for BENCH_TARGET.
--   The Host header is set to BENCH_HOST (the target's authority), as RFC 9112
--   requires it to agree with the absolute-form authority.
-- * done() prints one machine-readable line, "BENCHJSON {...}", that bench.py
--   parses (latencies in microseconds).

local target = os.getenv("BENCH_TARGET")
local host = os.getenv("BENCH_HOST")

if target ~= nil and target ~= "" then
  wrk.path = target
  if host ~= nil and host ~= "" then
    wrk.headers["Host"] = host
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
