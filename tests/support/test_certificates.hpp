// A throw-away certificate authority and a server certificate it signed, made with the openssl
// command line, for the tests that put a real TLS server (openssl s_server, Python, the fake
// LaunchDarkly) in front of a real client (curl, git, Python requests, the gate itself).
#pragma once

#include <sys/stat.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/shell_command.hpp"

namespace sandgate::testing {

// The files make_test_certificates() writes, all in one folder.
struct TestCertificates {
  std::string ca;           // FOLDER/ca.pem: what a client trusts (mode 0644, readable in `run`)
  std::string ca_key;       // FOLDER/ca.key
  std::string certificate;  // FOLDER/server.pem
  std::string key;          // FOLDER/server.key
};

// Makes them in `folder` (which must exist): EC P-256, valid two days. `names` are the server
// certificate's subjectAltName entries ("DNS:origin.test", "IP:127.0.0.1"); its subject's CN is
// the first DNS name. `ca_name` is the CA's CN (a log or an error names it). Throws when openssl
// fails, with its output.
inline TestCertificates make_test_certificates(const std::string& folder,
                                               const std::vector<std::string>& names,
                                               const std::string& ca_name = "sandgate-test-ca") {
  std::string common_name = "localhost";
  std::string alternative_names;
  for (const std::string& name : names) {
    if (common_name == "localhost" && name.rfind("DNS:", 0) == 0) {
      common_name = name.substr(4);
    }
    alternative_names += (alternative_names.empty() ? "" : ",") + name;
  }
  const std::string in = "cd '" + folder + "' && ";
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
  const auto made = run_shell(
      in + "openssl req -x509" + ec + " -days 2 -subj '/CN=" + ca_name +
      "' -keyout ca.key -out ca.pem && openssl req" + ec + " -subj '/CN=" + common_name +
      "' -keyout server.key -out server.csr && printf 'subjectAltName=" + alternative_names +
      "\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext"
      " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2"
      " -extfile server.ext -out server.pem");
  if (made.exit_code != 0) {
    throw std::runtime_error("openssl could not make the test certificates in " + folder + ": " +
                             made.output);
  }
  TestCertificates files{folder + "/ca.pem", folder + "/ca.key", folder + "/server.pem",
                         folder + "/server.key"};
  ::chmod(files.ca.c_str(), 0644);
  return files;
}

}  // namespace sandgate::testing
