// The inspection CA (proxy/inspect/certificate_authority.hpp): made on first use with private
// modes, refused when its key is readable by others, leaves that name exactly their host, a
// bounded cache, and rotation.
#include "proxy/inspect/certificate_authority.hpp"

#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/temporary_folder.hpp"

namespace sandgate::inspect {
namespace {

namespace fs = std::filesystem;

class CertificateAuthorityTest : public ::testing::Test {
 protected:
  testing::TemporaryFolder folder_{"ca-test"};
  const std::string& root_ = folder_.path();
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

// The subject alternative names of a certificate, as "DNS:x" and "IP:y".
std::vector<std::string> names_of(X509* certificate) {
  std::vector<std::string> names;
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans, i);
    if (name->type == GEN_DNS) {
      names.push_back("DNS:" + std::string(reinterpret_cast<const char*>(
                                               ASN1_STRING_get0_data(name->d.dNSName)),
                                           ASN1_STRING_length(name->d.dNSName)));
    } else if (name->type == GEN_IPADD) {
      names.push_back("IP:" + std::to_string(ASN1_STRING_length(name->d.iPAddress)) + "bytes");
    }
  }
  GENERAL_NAMES_free(sans);
  return names;
}

TEST_F(CertificateAuthorityTest,
       IsMadeOnFirstUseWithPrivateModesAndSignsLeavesForExactlyTheirHost) {
  const std::string folder = root_ + "/ca";
  auto ca = CertificateAuthority::open(folder);
  ASSERT_TRUE(ca) << ca.error();
  EXPECT_EQ(mode_of(folder), 0700u);
  EXPECT_EQ(mode_of(folder + "/ca-key.pem"), 0600u);
  EXPECT_EQ(mode_of(folder + "/ca.pem"), 0644u);
  EXPECT_NE((*ca)->subject().find("sandgate inspection CA"), std::string::npos);

  auto leaf = (*ca)->leaf_for(rules::parse_host("api.example.com").value());
  ASSERT_TRUE(leaf) << leaf.error();
  X509* cert = (*leaf)->certificate.get();
  EXPECT_EQ(names_of(cert), std::vector<std::string>{"DNS:api.example.com"});
  // Signed by the CA, valid now, not a CA itself, for servers only.
  EXPECT_EQ(X509_verify(cert, X509_get0_pubkey((*ca)->certificate())), 1);
  EXPECT_LT(X509_cmp_current_time(X509_get0_notBefore(cert)), 0);
  EXPECT_GT(X509_cmp_current_time(X509_get0_notAfter(cert)), 0);
  EXPECT_EQ(X509_check_ca(cert), 0);
  EXPECT_EQ(X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_host(cert, "evil.example.com", 0, 0, nullptr), 0);

  auto address = (*ca)->leaf_for(rules::parse_host("[2001:db8::1]").value());
  ASSERT_TRUE(address);
  EXPECT_EQ(names_of((*address)->certificate.get()), std::vector<std::string>{"IP:16bytes"});

  // The same CA is loaded again, not made anew.
  auto again = CertificateAuthority::open(folder);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(X509_cmp((*again)->certificate(), (*ca)->certificate()), 0);
}

TEST_F(CertificateAuthorityTest, TheLeafCacheIsBoundedAndReusesLeaves) {
  auto ca = CertificateAuthority::open(root_ + "/ca", 3);
  ASSERT_TRUE(ca);
  auto first = (*ca)->leaf_for(rules::parse_host("a.test").value());
  auto same = (*ca)->leaf_for(rules::parse_host("a.test").value());
  ASSERT_TRUE(first && same);
  EXPECT_EQ(first->get(), same->get());
  for (const char* name : {"b.test", "c.test", "d.test", "e.test"}) {
    ASSERT_TRUE((*ca)->leaf_for(rules::parse_host(name).value()));
  }
  EXPECT_EQ((*ca)->cached(), 3u);
  auto minted_again = (*ca)->leaf_for(rules::parse_host("a.test").value());
  EXPECT_NE(first->get(), minted_again->get());  // evicted, so minted anew
}

TEST_F(CertificateAuthorityTest, AKeyOthersCanReadIsRefusedAndRotationReplacesIt) {
  const std::string folder = root_ + "/ca";
  auto ca = CertificateAuthority::open(folder);
  ASSERT_TRUE(ca);
  ::chmod((folder + "/ca-key.pem").c_str(), 0644);
  auto refused = CertificateAuthority::open(folder);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("ca-key.pem"), std::string::npos) << refused.error();
  EXPECT_NE(refused.error().find("chmod 600"), std::string::npos) << refused.error();

  auto rotated = CertificateAuthority::rotate(folder);
  ASSERT_TRUE(rotated) << rotated.error();
  EXPECT_EQ(mode_of(folder + "/ca-key.pem"), 0600u);
  auto fresh = CertificateAuthority::open(folder);
  ASSERT_TRUE(fresh) << fresh.error();
  EXPECT_NE(X509_cmp((*fresh)->certificate(), (*ca)->certificate()), 0);
}

// A folder others could write to may hold a key they planted: refused, rotation too, until it is
// private again; a folder only others could read is made private.
TEST_F(CertificateAuthorityTest, AFolderOthersCanWriteIsRefusedUntilPrivateAndRotated) {
  const std::string folder = root_ + "/ca";
  auto ca = CertificateAuthority::open(folder);
  ASSERT_TRUE(ca) << ca.error();
  ::chmod(folder.c_str(), 0777);
  auto refused = CertificateAuthority::open(folder);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("written by others (mode 0777)"), std::string::npos)
      << refused.error();
  EXPECT_NE(refused.error().find("chmod 700 " + folder), std::string::npos) << refused.error();
  EXPECT_FALSE(CertificateAuthority::rotate(folder));
  EXPECT_EQ(mode_of(folder), 0777u);  // left as found: the person decides

  ::chmod(folder.c_str(), 0700);
  auto rotated = CertificateAuthority::rotate(folder);
  ASSERT_TRUE(rotated) << rotated.error();
  ASSERT_TRUE(CertificateAuthority::open(folder));

  ::chmod(folder.c_str(), 0755);
  ASSERT_TRUE(CertificateAuthority::open(folder));
  EXPECT_EQ(mode_of(folder), 0700u);
}

TEST_F(CertificateAuthorityTest, TheTrustBundleHoldsTheSystemRootsAndTheCa) {
  auto ca = CertificateAuthority::open(root_ + "/ca");
  ASSERT_TRUE(ca);
  auto bundle = write_trust_bundle(**ca);
  ASSERT_TRUE(bundle) << bundle.error();
  EXPECT_EQ(*bundle, root_ + "/ca-bundle.pem");
  std::ifstream in(*bundle);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream ca_in(root_ + "/ca/ca.pem");
  const std::string ca_text((std::istreambuf_iterator<char>(ca_in)),
                            std::istreambuf_iterator<char>());
  EXPECT_TRUE(text.ends_with(ca_text));
  EXPECT_GT(text.size(), ca_text.size());  // the system's roots come first

  // The same certificates for Java, as keytool (the JDK's own reader) lists them: every one a
  // trusted certificate entry.
  auto store = write_java_trust_store(*bundle);
  ASSERT_TRUE(store) << store.error();
  EXPECT_EQ(*store, root_ + "/ca-bundle.p12");
  std::size_t certificates = 0;
  for (std::size_t at = text.find("-----BEGIN CERTIFICATE-----"); at != std::string::npos;
       at = text.find("-----BEGIN CERTIFICATE-----", at + 1)) {
    ++certificates;
  }
  ASSERT_EQ(::access("/usr/bin/keytool", X_OK), 0) << "scripts/install-deps.sh installs a JDK";
  const std::string listing = root_ + "/listing.txt";
  const std::string command = "keytool -list -storetype PKCS12 -storepass " +
                              std::string(kJavaTrustStorePassword) + " -keystore " + *store +
                              " > " + listing + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream listed(listing);
  const std::string list((std::istreambuf_iterator<char>(listed)),
                         std::istreambuf_iterator<char>());
  std::size_t trusted = 0;
  for (std::size_t at = list.find("trustedCertEntry"); at != std::string::npos;
       at = list.find("trustedCertEntry", at + 1)) {
    ++trusted;
  }
  EXPECT_EQ(trusted, certificates) << list.substr(0, 2000);
  EXPECT_NE(list.find("sandgate-" + std::to_string(certificates) + ","), std::string::npos)
      << "the gate's CA, last in the bundle";
}

}  // namespace
}  // namespace sandgate::inspect
