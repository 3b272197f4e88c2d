// Asio's TLS layer, compiled once (the project builds Asio in separate-compilation mode; this part
// lives here rather than in sandgate::asio so that only the LaunchDarkly client links OpenSSL).
#include <boost/asio/ssl/impl/src.hpp>
