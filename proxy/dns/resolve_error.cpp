// The resolver's error codes as text. See resolve_error.hpp.
#include "proxy/dns/resolve_error.hpp"

namespace sandgate::dns {

std::string_view to_string(ResolveError error) {
  switch (error) {
    case ResolveError::none:
      return "none";
    case ResolveError::not_found:
      return "not_found";
    case ResolveError::timeout:
      return "timeout";
    case ResolveError::server_failure:
      return "server_failure";
    case ResolveError::cancelled:
      return "cancelled";
    case ResolveError::bad_name:
      return "bad_name";
  }
  return "unknown";
}

}  // namespace sandgate::dns
