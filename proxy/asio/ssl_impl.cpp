// Asio's TLS layer, compiled once (the project builds Asio in separate-compilation mode; this part
// is a library of its own rather than in sandgate::asio so that only what speaks TLS, the
// LaunchDarkly client and inspection, links OpenSSL).
#include <boost/asio/ssl/impl/src.hpp>
