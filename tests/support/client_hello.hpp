// Builds TLS ClientHello bytes for tests: a real-shaped TLS 1.2/1.3 ClientHello with an optional
// server_name extension, optionally split across several TLS records.
#pragma once

#include <string>

namespace sandgate::testing {

inline void put16(std::string& out, std::size_t value) {
  out += static_cast<char>((value >> 8) & 0xff);
  out += static_cast<char>(value & 0xff);
}

inline void put24(std::string& out, std::size_t value) {
  out += static_cast<char>((value >> 16) & 0xff);
  put16(out, value & 0xffff);
}

// The handshake message (type, length, body).
// `alpn`: the ALPN extension's protocol_name_list as it goes on the wire (its entries each with
// their length byte), none when empty.
inline std::string client_hello_message(const std::string& server_name, bool with_sni = true,
                                        const std::string& alpn = {}) {
  std::string body;
  put16(body, 0x0303);           // legacy_version
  body += std::string(32, 'r');  // random
  body += '\0';                  // session id: empty
  put16(body, 4);                // two cipher suites
  put16(body, 0x1301);
  put16(body, 0xc02f);
  body += '\x01';  // one compression method: null
  body += '\0';
  std::string extensions;
  if (with_sni) {
    std::string list;
    list += '\0';  // host_name
    put16(list, server_name.size());
    list += server_name;
    std::string data;
    put16(data, list.size());
    data += list;
    put16(extensions, 0);  // server_name
    put16(extensions, data.size());
    extensions += data;
  }
  if (!alpn.empty()) {
    put16(extensions, 16);  // application_layer_protocol_negotiation
    put16(extensions, alpn.size() + 2);
    put16(extensions, alpn.size());
    extensions += alpn;
  }
  put16(extensions, 0x002b);  // supported_versions: TLS 1.3
  put16(extensions, 3);
  extensions += '\x02';
  put16(extensions, 0x0304);
  put16(body, extensions.size());
  body += extensions;

  std::string message;
  message += '\x01';
  put24(message, body.size());
  message += body;
  return message;
}

// The message in TLS records of at most `record_size` bytes each.
inline std::string client_hello_records(const std::string& server_name, bool with_sni = true,
                                        std::size_t record_size = 16384) {
  const std::string message = client_hello_message(server_name, with_sni);
  std::string out;
  for (std::size_t at = 0; at < message.size(); at += record_size) {
    const std::string fragment = message.substr(at, record_size);
    out += '\x16';
    put16(out, 0x0301);
    put16(out, fragment.size());
    out += fragment;
  }
  return out;
}

}  // namespace sandgate::testing
