// `sandgate ca`: the inspection CA, and how to trust it.
#include "proxy/commands/ca.hpp"

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <cstdio>
#include <string>

#include "proxy/inspect/certificate_authority.hpp"

namespace sandgate::commands {
namespace {

std::string fingerprint(X509* certificate) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  X509_digest(certificate, EVP_sha256(), digest, &size);
  std::string text;
  for (unsigned int i = 0; i < size; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, i == 0 ? "%02X" : ":%02X", digest[i]);
    text += hex;
  }
  return text;
}

std::string expiry(X509* certificate) {
  BIO* bio = BIO_new(BIO_s_mem());
  ASN1_TIME_print(bio, X509_get0_notAfter(certificate));
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(size > 0 ? size : 0));
  BIO_free(bio);
  return text;
}

}  // namespace

int run_ca(const settings::Settings& settings, bool rotate, std::ostream& out, std::ostream& err) {
  const std::string folder = settings.ca_dir.empty()
                                 ? inspect::default_ca_folder(settings::home_directory())
                                 : settings.ca_dir;
  if (rotate) {
    auto rotated = inspect::CertificateAuthority::rotate(folder);
    if (!rotated) {
      err << "sandgate: ca: " << rotated.error() << "\n";
      return 2;
    }
    out << "rotated: a new key and certificate are in " << folder
        << "; restart running gates, and make clients trust the new certificate\n";
  }
  auto opened = inspect::CertificateAuthority::open(folder, 1);
  if (!opened) {
    err << "sandgate: ca: " << opened.error() << "\n";
    return 2;
  }
  const auto& ca = **opened;
  const std::string path = ca.paths().certificate;
  out << "certificate: " << path << "\n"
      << "key: " << ca.paths().key << " (mode 0600; never give it to anyone)\n"
      << "subject: " << ca.subject() << "\n"
      << "sha256: " << fingerprint(ca.certificate()) << "\n"
      << "expires: " << expiry(ca.certificate()) << "\n"
      << "\n"
      << "Inspected connections (request rules, --inspect) are signed by this CA. Inside\n"
      << "`sandgate run` the tools are pointed at it for you. Elsewhere, trust it per tool:\n"
      << "  curl --cacert " << path << " ...\n"
      << "  SSL_CERT_FILE / REQUESTS_CA_BUNDLE / NODE_EXTRA_CA_CERTS / GIT_SSL_CAINFO=" << path
      << "\n"
      << "or for the whole machine (Debian):\n"
      << "  sudo cp " << path << " /usr/local/share/ca-certificates/sandgate.crt"
      << " && sudo update-ca-certificates\n"
      << "or on macOS:\n"
      << "  sudo security add-trusted-cert -d -r trustRoot -k "
         "/Library/Keychains/System.keychain "
      << path << "\n";
  return 0;
}

}  // namespace sandgate::commands
