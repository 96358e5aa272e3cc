#!/usr/bin/env bash
# The public HTTP cache test suite (github.com/http-tests/cache-tests) against Lookout as a forward
# proxy cache: its Node server on 127.0.0.1, a release Lookout with the cache on, and its client
# with fetch routed through the proxy (proxy-fetch.mjs). Not part of CI: the suite is a checkout
# of its own. Usage: Tests/cache-tests/run.sh SUITE_DIR [LOOKOUT_BINARY]
set -euo pipefail
SUITE=$(realpath "${1:?give the cache-tests checkout}")
HERE=$(cd "$(dirname "$0")" && pwd)
LOOKOUT=$(realpath "${2:-$HERE/../../.build/release/lookout}")
WORK=$(mktemp -d)
SERVER_PORT=${SERVER_PORT:-18000}
PROXY_PORT=${PROXY_PORT:-18082}
export npm_package_config_protocol=http npm_package_config_port=$SERVER_PORT \
  npm_package_config_pidfile=$WORK/server.pid npm_package_config_base=http://127.0.0.1:$SERVER_PORT \
  npm_package_config_id="${TEST_ID:-}"
printf 'state_dir: %s/state\ncache:\n  enabled: true\n' "$WORK" > "$WORK/lookout.yaml"
(cd "$SUITE" && node test-engine/server/server.mjs > "$WORK/server.log" 2>&1) &
SERVER=$!
"$LOOKOUT" run --config "$WORK/lookout.yaml" --listen "127.0.0.1:$PROXY_PORT" --log "$WORK/lookout.jsonl" 2> "$WORK/lookout.err" &
PROXY=$!
trap 'kill $SERVER $PROXY 2>/dev/null || true' EXIT
sleep 1
(cd "$SUITE" && HTTP_PROXY=http://127.0.0.1:$PROXY_PORT node --no-warnings --import "$HERE/proxy-fetch.mjs" \
  test-engine/cli.mjs) > "$WORK/results.json"
[ -n "${TEST_ID:-}" ] && { cat "$WORK/results.json"; exit 0; }
node "$HERE/summarize.mjs" "$SUITE" "$WORK/results.json"
echo "results: $WORK/results.json"
