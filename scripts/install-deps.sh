#!/usr/bin/env bash
# Installs what sandgate needs to build, test and benchmark, and nothing else.
# Idempotent: a package already present is left alone, so a second run is quick and quiet.
# Debian 12 (bookworm) and derivatives: installs with apt-get (as root, or through sudo).
# macOS: prints the Homebrew command instead, since installing there is the user's call.
set -euo pipefail

# Build: compiler toolchain and the libraries sandgate links.
build_packages=(
  build-essential cmake pkg-config
  libboost1.81-dev      # Boost.Asio and Boost.Beast (header-only parts)
  libssl-dev            # OpenSSL: TLS for the LaunchDarkly client
  libc-ares-dev         # asynchronous DNS
  libre2-dev            # linear-time regular expressions for re: rules
  libidn2-dev           # IDNA / UTS #46 for internationalised host names
  libcli11-dev          # command-line parsing
  libtomlplusplus-dev   # the optional TOML config file
  libfmt-dev            # formatting
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev gnuplot-nox valgrind  # micro-benchmarks; make bench's plots, instruction counts
  strace tinyproxy squid-openssl linux-perf  # make bench (the peers, system calls, the profile; squid-openssl is squid with ssl-bump, for bench/e2e/inspection.sh); bench_smoke.compare (the peers)
  ccache                # compiler cache: rebuilds across build trees (release, sanitizers)
  lld                   # LLVM's linker: links the test programs three times faster than GNU ld
  libseccomp-dev        # seccomp: the system-call allow-list of every process inside `run`
  nftables              # `run`'s capture: the nft command applies the rules that redirect the command's connections
  libncurses-dev        # `sandgate watch`: the terminal view (linked into the sandgate binary only)
  libnghttp2-dev        # HTTP/2 on inspected connections, towards clients and origins
  pandoc                # the manual pages: man/*.md (Markdown, as docs/) into sandgate(1), sandgate.toml(5), ... (the man_pages target)
)
# Tests drive real clients and servers from Debian's packages. The fuzz targets (tests/fuzz) need
# clang and its libFuzzer and sanitizer runtimes.
test_packages=(
  curl openssl openssh-client openssh-server git procps iproute2
  clang libclang-rt-14-dev
  clang-format          # the format check (CTest format_check) and `make format`
  prometheus            # the admin endpoint test scrapes with a real Prometheus (its own process)
  netcat-openbsd        # socks_e2e_test: ssh through the gate's SOCKS5 with ProxyCommand nc -X 5
  squid-openssl         # squid_parent_test and bench/e2e/socks_parent.sh: a real parent proxy (its own process); Debian's squid built with OpenSSL (ssl-bump), replacing the GnuTLS squid it conflicts with
  python3               # the service-file test reads the launchd plist with plistlib
  dbus keyutils         # run_test: a real session bus the confined command must not reach; keyctl
  nftables bind9-dnsutils  # capture_e2e_test: nft to inspect the rules; dig for DNS queries inside run
  nodejs python3-pip python3-setuptools python3-pytest python3-requests golang-go  # run_test: real tools inside run
  openjdk-17-jdk-headless  # run_test: a Java client through inspection; keytool reads the gate's Java trust store
  python3-botocore      # secrets_test: the AWS SDK's own SigV4 signer as the client of a masked AWS key
  python3-pyte          # watch_e2e_test, run_test: a real terminal emulator renders `sandgate watch` and full-screen programs under a pty
  vim                   # run_test: a real full-screen program a question is drawn over
  python3-websockets    # websocket_e2e_test: a WebSocket client and TLS origin through inspection
  nghttp2-client nghttp2-server  # http2 tests: nghttp and nghttpd as a real HTTP/2 client and origin
  python3-grpcio        # grpc tests: a real gRPC client and server through inspection
  python3-h2            # http2_attack_test: a hostile HTTP/2 origin and client written frame by frame
  lintian               # package_test: the .deb checked by Debian's own package checker
)

case "$(uname -s)" in
  Darwin)
    cat <<'MSG'
sandgate on macOS: install the dependencies with Homebrew, then run make again:
  brew install cmake boost openssl@3 c-ares re2 libidn2 cli11 tomlplusplus fmt googletest google-benchmark clang-format ncurses pandoc
MSG
    # Only fail when something the build needs is missing, so this stays idempotent on macOS too.
    command -v cmake >/dev/null || exit 1
    exit 0
    ;;
esac

if ! command -v dpkg-query >/dev/null; then
  echo "install-deps: this script knows Debian/Ubuntu (apt-get) and macOS (Homebrew)." >&2
  echo "install-deps: elsewhere install: ${build_packages[*]} ${test_packages[*]}" >&2
  exit 1
fi

missing=()
for pkg in "${build_packages[@]}" "${test_packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
# The official MCP TypeScript SDK (npm's @modelcontextprotocol/sdk, pinned by
# tests/e2e/mcp/package-lock.json) as a real MCP client and server: mcp_sdk_test records their
# traffic and drives them through the MCP stage. npm ci installs it into tests/e2e/mcp/node_modules,
# again only when the lock file changed since. Debian's npm is installed for it where no npm is
# (a Node.js from elsewhere brings its own, which Debian's would conflict with).
install_mcp_sdk() {
  local dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/e2e/mcp"
  if [[ -f "$dir/node_modules/.sandgate-lock" ]] &&
     cmp -s "$dir/package-lock.json" "$dir/node_modules/.sandgate-lock"; then
    return 0
  fi
  if ! command -v npm >/dev/null; then
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "install-deps: installing the MCP SDK for the tests (npm ci in tests/e2e/mcp)" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$dir/package-lock.json" "$dir/node_modules/.sandgate-lock"
}

sudo=()
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then
  sudo=(sudo)
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  install_mcp_sdk
  exit 0
fi
if [[ $(id -u) -ne 0 && ${#sudo[@]} -eq 0 ]]; then
  echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_mcp_sdk
